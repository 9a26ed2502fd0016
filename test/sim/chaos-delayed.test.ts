/**
 * Scale to zero with a large index (runtime/scheduler/activation.ts): the `delayed` scenario (a
 * tenant's 3,000 tasks due tomorrow, one-task tenants submitting tasks delayed 2-20 minutes while
 * nothing else runs, some retried after a backoff) holds the due-start invariant: delayed work
 * leaves QUEUED within DUE_START_ALLOWANCE_MS of its due time. Before 77b3ad8 (the minute tick
 * blind to a due announcement nobody took) seed 1 broke it twice (135 and 299 s late). And the
 * checker finds a late delayed task, and excuses one only for what it can see.
 */
import { describe, expect, it } from 'vitest';
import type { Task } from '../../runtime/core/task.ts';
import { tierQueue } from '../../runtime/infra/resources.ts';
import { checkHistory, DUE_START_ALLOWANCE_MS } from '../../sim/chaos/check.ts';
import type { History } from '../../sim/chaos/history.ts';
import { CHAOS_SCENARIOS, DEFAULT_OPTIONS, runChaos } from '../../sim/chaos/run.ts';
import { emptyHistory, HISTORY_T0, historyTask } from '../helpers/chaos-history.ts';

const T0 = HISTORY_T0;
const DUE = T0 + 300_000;

const task = (taskId: string, state: Task['state'], extra: Partial<Task> = {}): Task =>
  historyTask(taskId, state, { runAt: new Date(DUE).toISOString(), ...extra });

/** Task `d`, submitted at T0 with a delay to DUE (announced then), dispatched `lateMs` after DUE. */
const delayed = (lateMs: number, extra: Partial<Task> = {}) => [
  { atMs: T0, task: task('d', 'QUEUED', extra) },
  { atMs: DUE + lateMs, task: task('d', 'DISPATCHED', extra) },
];
const announced: History['sends'] = [
  { queueId: tierQueue('normal').id, body: JSON.stringify({ taskId: 'd' }), atMs: T0 },
];

function history(writes: { atMs: number; task: Task }[], extra: Partial<History> = {}): History {
  return emptyHistory({
    endMs: DUE + 3_600_000,
    tenants: { a: { weight: 1, maxConcurrency: 1 }, b: { weight: 1, maxConcurrency: 1 } },
    pools: { lambdaSlots: 1, fargateVcpu: 2 },
    sends: announced,
    writes: [...writes].sort((x, y) => x.atMs - y.atMs),
    ...extra,
  });
}

describe('chaos checker: due-start', () => {
  it('finds a delayed task left QUEUED past the allowance after its due time, and passes one within it', () => {
    const late = checkHistory(history(delayed(DUE_START_ALLOWANCE_MS + 1_000)));
    expect(late.violations.map((v) => v.invariant)).toEqual(['due-start']);
    expect(late.stats.dueStarts).toMatchObject({ checked: 1, late: 1 });
    const onTime = checkHistory(history(delayed(DUE_START_ALLOWANCE_MS - 1_000)));
    expect(onTime.violations).toEqual([]);
    expect(onTime.stats.dueStarts).toMatchObject({ checked: 1, late: 0 });
  });

  it('extends the allowance by a scheduler outage', () => {
    const outage = {
      deaths: [{ component: 'scheduler-1', atMs: DUE + 10_000 }],
      leases: [{ atMs: DUE + 70_000, owner: 'lambda-2' }],
    };
    const found = checkHistory(history(delayed(DUE_START_ALLOWANCE_MS + 30_000), outage));
    expect(found.violations).toEqual([]);
    expect(found.stats.dueStarts).toMatchObject({ checked: 1, late: 0 });
  });

  it('excuses a late one only for what it sees: never announced, its tenant at its quota, its pool full', () => {
    const lateMs = DUE_START_ALLOWANCE_MS + 60_000;
    // Never announced (a submit that crashed after its write): the backstop's case.
    const unannounced = checkHistory(history(delayed(lateMs), { sends: [] }));
    expect(unannounced.violations).toEqual([]);
    expect(unannounced.stats.dueStarts.excused.unannounced).toBe(1);
    // Its tenant (quota 1) ran another task meanwhile.
    const running = [
      { atMs: DUE - 1_000, task: task('other', 'DISPATCHED', { runtime: 'fargate' }) },
      { atMs: DUE + lateMs - 1, task: task('other', 'SUCCEEDED', { runtime: 'fargate' }) },
    ];
    const atQuota = checkHistory(history([...delayed(lateMs), ...running]));
    expect(atQuota.violations).toEqual([]);
    expect(atQuota.stats.dueStarts.excused.atQuota).toBe(1);
    // Another tenant's task held the Lambda pool's one slot meanwhile.
    const busy = running.map(({ atMs, task: t }) => ({ atMs, task: { ...t, tenantId: 'b', runtime: 'lambda' } }));
    const poolFull = checkHistory(history([...delayed(lateMs), ...busy] as { atMs: number; task: Task }[]));
    expect(poolFull.violations).toEqual([]);
    expect(poolFull.stats.dueStarts.excused.poolFull).toBe(1);
    // The same task on Fargate (2 vCPU free): nothing held it back.
    const fargate = checkHistory(history([...delayed(lateMs, { runtime: 'fargate' }), ...busy] as never));
    expect(fargate.violations.map((v) => v.invariant)).toEqual(['due-start']);
  });
});

describe('chaos: delayed work while the system idles behind a large index', () => {
  it('starts every delayed task within the allowance of its due time (seed 1 of --scenario delayed)', async () => {
    const run = await runChaos({ ...DEFAULT_OPTIONS, ...CHAOS_SCENARIOS.delayed, seed: 1 });
    const { violations, stats } = checkHistory(run);
    expect(violations).toEqual([]);
    expect(stats.accepted).toBe(16);
    // Every submit's due time and each retry's, none excused.
    expect(stats.dueStarts.checked).toBeGreaterThanOrEqual(16);
    expect(stats.dueStarts.late).toBe(0);
    // The scheduler stopped between them and the tick started it again.
    expect(run.scheduler.ended.idle ?? 0).toBeGreaterThanOrEqual(4);
    expect(run.scheduler.invoked.tick ?? 0).toBeGreaterThanOrEqual(30);
  }, 240_000);
});
