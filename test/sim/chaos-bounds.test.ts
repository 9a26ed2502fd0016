/**
 * The chaos checker's wait-bound check (issue 22): every bound the API gave is counted once
 * (checked, assumption broken, cancelled while waiting, unresolved at the run's end), a checked
 * one is judged against when its task left QUEUED, and a run of the `bounds` scenario (scaled
 * down: one seed, 8 steady tenants, 2 Lambda slots) keeps every bound while the same history with
 * its bounds shrunk breaks some. The thousands are `npm run sim -- chaos --scenario bounds`'s
 * (docs/policy.md).
 */
import { describe, expect, it } from 'vitest';
import type { Task } from '../../runtime/core/task.ts';
import { checkHistory, WAIT_BOUND_SLACK_MS } from '../../sim/chaos/check.ts';
import type { History } from '../../sim/chaos/history.ts';
import { CHAOS_SCENARIOS, DEFAULT_OPTIONS, runChaos } from '../../sim/chaos/run.ts';
import { emptyHistory, HISTORY_T0, historyTask } from '../helpers/chaos-history.ts';

const T0 = HISTORY_T0;

const task = (taskId: string, state: Task['state']): Task =>
  historyTask(taskId, state, { runAt: new Date(T0).toISOString() });

/** Task `t` of tenant a QUEUED at T0 + 0.5 s, then each of `then` ([state, seconds after T0]). */
const writes = (then: [Task['state'], number][], taskId = 't') => [
  { atMs: T0 + 500, task: task(taskId, 'QUEUED') },
  ...then.map(([state, seconds]) => ({ atMs: T0 + seconds * 1000, task: task(taskId, state) })),
];

/** A bound of `seconds` answered at T0 + 1 s (asked at T0 + 0.9 s). */
const bound = (seconds: number, extra: Partial<History['bounds'][number]> = {}): History['bounds'][number] => ({
  taskId: 't',
  tenantId: 'a',
  askedAtMs: T0 + 900,
  atMs: T0 + 1000,
  maxWaitSeconds: seconds,
  ...extra,
});

const check = (history: Partial<History>) => {
  const { violations, stats } = checkHistory(emptyHistory(history));
  const { given, checked, broken, assumptionBroken, cancelledWaiting, unresolved, none } = stats.waitBounds;
  const counts = { given, checked, broken, assumptionBroken, cancelledWaiting, unresolved, none };
  return { invariants: violations.map((v) => v.invariant), counts };
};

const counts = (given: Partial<ReturnType<typeof check>['counts']>) => ({
  given: 0,
  checked: 0,
  broken: 0,
  assumptionBroken: 0,
  cancelledWaiting: 0,
  unresolved: 0,
  none: 0,
  ...given,
});

describe('chaos checker: the wait bound', () => {
  it('breaks a bound whose task started after it, and keeps one whose task started within it', () => {
    const late = check({ writes: writes([['DISPATCHED', 20]]), bounds: [bound(10)] });
    expect(late.invariants).toEqual(['wait-bound']);
    expect(late.counts).toEqual(counts({ given: 1, checked: 1, broken: 1 }));
    // Within the bound plus the checker's 2 s of slack for the simulated calls.
    const kept = check({ writes: writes([['DISPATCHED', 12.9]]), bounds: [bound(10)] });
    expect(kept.invariants).toEqual([]);
    expect(kept.counts).toEqual(counts({ given: 1, checked: 1 }));
  });

  it('counts every bound once: cancelled while waiting, assumption broken, unresolved, no bound', () => {
    const cancelled = check({ writes: writes([['CANCELLED', 30]]), bounds: [bound(10)] });
    expect(cancelled).toEqual({ invariants: [], counts: counts({ given: 1, cancelledWaiting: 1 }) });
    // Its tenant queued another task before it started: the bound's first assumption broke.
    const more = check({
      writes: [...writes([['DISPATCHED', 30]]), ...writes([], 'u').map((w) => ({ ...w, atMs: T0 + 5000 }))],
      bounds: [bound(10)],
    });
    expect(more).toEqual({ invariants: [], counts: counts({ given: 1, assumptionBroken: 1 }) });
    // Still waiting when the run ended (T0 + 60 s) before its deadline: nothing to judge.
    const open = check({ writes: writes([]), bounds: [bound(100)] });
    expect(open).toEqual({ invariants: [], counts: counts({ given: 1, unresolved: 1 }) });
    // Still waiting when the run ended past its deadline: broken.
    const stuck = check({ writes: writes([]), bounds: [bound(10)] });
    expect(stuck).toEqual({ invariants: ['wait-bound'], counts: counts({ given: 1, checked: 1, broken: 1 }) });
    const none = check({ writes: writes([['DISPATCHED', 2]]), bounds: [bound(0, { maxWaitSeconds: null })] });
    expect(none).toEqual({ invariants: [], counts: counts({ none: 1 }) });
  });

  it('splits bound / wait between the answer right after the submit and the later ones', () => {
    // Asked at 1 s (bound 100 s) and again at 5 s (bound 48 s); it starts at 11 s.
    const again = bound(48, { askedAtMs: T0 + 4900, atMs: T0 + 5000 });
    const { stats } = checkHistory(emptyHistory({ writes: writes([['DISPATCHED', 11]]), bounds: [bound(100), again] }));
    expect(stats.waitBounds).toMatchObject({
      given: 2,
      checked: 2,
      checkedTasks: 1,
      ratioAtSubmit: { median: 10, max: 10 },
      ratioLater: { median: 8, max: 8 },
      ratio: { median: 8, max: 10 },
    });
  });

  it("judges a bound on the Lambda pool's pace only while the pool freed what it assumed", () => {
    // Other tenants' tasks free a slot each (DISPATCHED, then SUCCEEDED) at 3 s and at 4 s.
    const others = ['u1', 'u2'].flatMap((taskId, i) => [
      { atMs: T0 + 500, task: { ...task(taskId, 'DISPATCHED'), tenantId: 'b' } },
      { atMs: T0 + (3 + i) * 1000, task: { ...task(taskId, 'SUCCEEDED'), tenantId: 'b' } },
    ]);
    const onPace = (slots: number) => bound(5, { assumedFreed: { slots, fromMs: T0 + 1000, byMs: T0 + 5000 } });
    const late = [...writes([['DISPATCHED', 20]]), ...others].sort((a, b) => a.atMs - b.atMs);
    // Two slots freed as assumed, and the task still started late: broken.
    const kept = check({ writes: late, bounds: [onPace(2)] });
    expect(kept).toEqual({ invariants: ['wait-bound'], counts: counts({ given: 1, checked: 1, broken: 1 }) });
    // Three assumed, two freed: its assumption broke, so it is not judged.
    const slower = checkHistory(emptyHistory({ writes: late, bounds: [onPace(3)] }));
    expect(slower.violations).toEqual([]);
    expect(slower.stats.waitBounds).toMatchObject({ given: 1, checked: 0, assumptionBroken: 1, paceNotKept: 1 });
    // Started within it: kept, whatever the pool freed.
    const inTime = [...writes([['DISPATCHED', 6]]), ...others].sort((a, b) => a.atMs - b.atMs);
    expect(check({ writes: inTime, bounds: [onPace(3)] }).counts).toEqual(counts({ given: 1, checked: 1 }));
  });

  it("judges a bound on the Lambda pool's headroom only while the pool kept a free slot, as the scheduler counts it", () => {
    // Other tenants' tasks u1 and u2 hold two Lambda slots from 0.5 s; u2 ends at 3 s.
    const others = [
      { atMs: T0 + 500, task: { ...task('u1', 'DISPATCHED'), tenantId: 'b' } },
      { atMs: T0 + 500, task: { ...task('u2', 'RUNNING'), tenantId: 'c' } },
      { atMs: T0 + 3000, task: { ...task('u2', 'SUCCEEDED'), tenantId: 'c' } },
    ];
    const onHeadroom = (slots: number, fromSeconds = 1) =>
      bound(3, { assumedHeadroom: { slots, fromMs: T0 + fromSeconds * 1000, byMs: T0 + 4000 } });
    const late = [...writes([['DISPATCHED', 20]]), ...others].sort((a, b) => a.atMs - b.atMs);
    // Three slots, two ever in use: the pool kept room and the task still started late: broken.
    const kept = check({ writes: late, bounds: [onHeadroom(3)] });
    expect(kept).toEqual({ invariants: ['wait-bound'], counts: counts({ given: 1, checked: 1, broken: 1 }) });
    // Two slots: full from 1 s on, so its assumption broke and it is not judged.
    const full = checkHistory(emptyHistory({ writes: late, bounds: [onHeadroom(2)] }));
    expect(full.violations).toEqual([]);
    expect(full.stats.waitBounds).toMatchObject({ given: 1, checked: 0, assumptionBroken: 1, headroomNotKept: 1 });
    // From 4.5 s u2 has ended and the scheduler has had 1.5 s to learn it; from 5.5 s, 2.5 s: the
    // pool was full as the scheduler counts it until 5 s.
    const learned = (fromSeconds: number) =>
      checkHistory(
        emptyHistory({
          writes: late,
          bounds: [bound(3, { assumedHeadroom: { slots: 2, fromMs: T0 + fromSeconds * 1000, byMs: T0 + 8000 } })],
        }),
      ).stats.waitBounds;
    expect(learned(4.5)).toMatchObject({ headroomNotKept: 1, broken: 0 });
    expect(learned(5.5)).toMatchObject({ headroomNotKept: 0, broken: 1 });
    // Started within it: kept, however full the pool.
    const inTime = [...writes([['DISPATCHED', 4]]), ...others].sort((a, b) => a.atMs - b.atMs);
    expect(check({ writes: inTime, bounds: [onHeadroom(2)] }).counts).toEqual(counts({ given: 1, checked: 1 }));
  });

  it('does not judge a late bound whose tenant ran a task it did not count (the index it read lagging a dispatch)', () => {
    // Tenant a's task r is dispatched at 0.8 s (just before the question at 0.9 s) and ends at 9 s.
    const own = [
      { atMs: T0 + 800, task: task('r', 'DISPATCHED') },
      { atMs: T0 + 9000, task: task('r', 'SUCCEEDED') },
    ];
    const others = ['u1', 'u2'].flatMap((taskId, i) => [
      { atMs: T0 + 500, task: { ...task(taskId, 'DISPATCHED'), tenantId: 'b' } },
      { atMs: T0 + (3 + i) * 1000, task: { ...task(taskId, 'SUCCEEDED'), tenantId: 'b' } },
    ]);
    const late = [...writes([['DISPATCHED', 20]]), ...own, ...others].sort((a, b) => a.atMs - b.atMs);
    // On the pace from 1 s: had the answer counted r, its count would have begun after r's end.
    const onPace = bound(5, { assumedFreed: { slots: 2, fromMs: T0 + 1000, byMs: T0 + 5000 } });
    const paced = checkHistory(emptyHistory({ writes: late, bounds: [onPace] }));
    expect(paced.violations).toEqual([]);
    expect(paced.stats.waitBounds).toMatchObject({ checked: 0, assumptionBroken: 1, runningNotSeen: 1 });
    // Counted (the count begins at 9 s, when r's end frees a slot): judged, and broken.
    const counted = bound(5, { assumedFreed: { slots: 1, fromMs: T0 + 9000, byMs: T0 + 10_000 } });
    expect(check({ writes: late, bounds: [counted] }).invariants).toEqual(['wait-bound']);
    // On the headroom: its tenant (quota 1) was at its quota meanwhile; with quota 2 it was not.
    const onHeadroom = bound(3, { assumedHeadroom: { slots: 10, fromMs: T0 + 1000, byMs: T0 + 4000 } });
    const quota = (maxConcurrency: number) =>
      checkHistory(emptyHistory({ writes: late, bounds: [onHeadroom], tenants: { a: { weight: 1, maxConcurrency } } }))
        .stats.waitBounds;
    expect(quota(1)).toMatchObject({ checked: 0, runningNotSeen: 1 });
    expect(quota(2)).toMatchObject({ checked: 1, broken: 1, runningNotSeen: 0 });
  });

  it("does not judge a bound on the pace whose tenant's running task ran past when it assumed it would end", () => {
    const others = ['u1', 'u2'].flatMap((taskId, i) => [
      { atMs: T0 + 500, task: { ...task(taskId, 'DISPATCHED'), tenantId: 'b' } },
      { atMs: T0 + (3 + i) * 1000, task: { ...task(taskId, 'SUCCEEDED'), tenantId: 'b' } },
    ]);
    // Tenant a's own task r runs from 0.2 s to 9 s; the bound took it to end by 2 s.
    const own = [
      { atMs: T0 + 200, task: task('r', 'RUNNING') },
      { atMs: T0 + 9000, task: task('r', 'SUCCEEDED') },
    ];
    const late = [...writes([['DISPATCHED', 20]]), ...others, ...own].sort((a, b) => a.atMs - b.atMs);
    const assumed = (tenantFreeByMs: number) =>
      bound(5, { assumedFreed: { slots: 2, fromMs: T0 + 1000, byMs: T0 + 5000, tenantFreeByMs } });
    const overran = checkHistory(emptyHistory({ writes: late, bounds: [assumed(T0 + 2000)] }));
    expect(overran.violations).toEqual([]);
    expect(overran.stats.waitBounds).toMatchObject({ given: 1, checked: 0, assumptionBroken: 1, paceNotKept: 1 });
    // Had it assumed 10 s, the assumption held and the late start breaks the bound.
    expect(check({ writes: late, bounds: [assumed(T0 + 10_000)] }).invariants).toEqual(['wait-bound']);
  });

  it('does not judge a bound whose count of tenants joining after the snapshot was exceeded', () => {
    // Tenants b and c start waiting (a QUEUED task each, due) at 2 s and 3 s; d's task was QUEUED before.
    const others = [
      { atMs: T0 + 100, task: { ...task('d1', 'QUEUED'), tenantId: 'd' } },
      { atMs: T0 + 2000, task: { ...task('b1', 'QUEUED'), tenantId: 'b' } },
      { atMs: T0 + 2500, task: { ...task('d2', 'QUEUED'), tenantId: 'd' } },
      { atMs: T0 + 3000, task: { ...task('c1', 'QUEUED'), tenantId: 'c' } },
    ];
    const late = [...writes([['DISPATCHED', 20]]), ...others].sort((a, b) => a.atMs - b.atMs);
    const counted = (atMost: number) => bound(5, { assumedJoins: { atMost, fromMs: T0 + 1000, byMs: T0 + 5000 } });
    // It counted 1; 2 joined (d was already waiting): not judged.
    const exceeded = checkHistory(emptyHistory({ writes: late, bounds: [counted(1)] }));
    expect(exceeded.violations).toEqual([]);
    expect(exceeded.stats.waitBounds).toMatchObject({ given: 1, checked: 0, assumptionBroken: 1, joinsExceeded: 1 });
    // It counted 2: the assumption held, and the late start breaks the bound.
    expect(check({ writes: late, bounds: [counted(2)] }).invariants).toEqual(['wait-bound']);
  });

  it('does not judge a late bound whose tenant was taken to stay below its fair share while the tenants with work weighed more', () => {
    // Tenant a's task t waits from 0 (dispatched at 20 s). Tenants b (weight 2) and c start work at
    // 2 s and 3 s; b's ends at 4 s (the scheduler learns of it by 6 s), c's runs on.
    const others = [
      { atMs: T0 + 2000, task: { ...task('b1', 'QUEUED'), tenantId: 'b' } },
      { atMs: T0 + 3000, task: { ...task('c1', 'QUEUED'), tenantId: 'c' } },
      { atMs: T0 + 4000, task: { ...task('b1', 'SUCCEEDED'), tenantId: 'b' } },
    ];
    const late = [...writes([['DISPATCHED', 20]]), ...others].sort((a, b) => a.atMs - b.atMs);
    const tenants = { a: { weight: 1, maxConcurrency: 5 }, b: { weight: 2, maxConcurrency: 5 } };
    const assumed = (atMost: number) => bound(5, { assumedBusyWeight: { atMost, fromMs: T0 + 1000, byMs: T0 + 5000 } });
    // a, b and c at once weigh 4 (3 to 6 s); it took at most 3: not judged.
    const exceeded = checkHistory(emptyHistory({ writes: late, bounds: [assumed(3)], tenants }));
    expect(exceeded.violations).toEqual([]);
    expect(exceeded.stats.waitBounds).toMatchObject({ checked: 0, assumptionBroken: 1, busyWeightExceeded: 1 });
    // It took at most 4: the assumption held, and the late start breaks the bound.
    expect(check({ writes: late, bounds: [assumed(4)], tenants }).invariants).toEqual(['wait-bound']);
  });

  it("does not judge a late bound when a worker's report of an end it counted on was delivered again (its first receive's answer lost)", () => {
    // Tenant a's own task r ends at 1 s; its report is received at 1.1 s and again at 31 s (the
    // first receive freed nothing); t, asked about at 0.5 s with a bound of 5 s, starts at 20 s.
    const own = [
      { atMs: T0 + 200, task: task('r', 'RUNNING') },
      { atMs: T0 + 1000, task: task('r', 'SUCCEEDED') },
    ];
    const late = [...writes([['DISPATCHED', 20]]), ...own].sort((a, b) => a.atMs - b.atMs);
    const report = (atMs: number, receiveCount: number) => ({
      queueId: 'completions',
      messageId: 'm-r',
      body: JSON.stringify({ taskId: 'r', fence: 1, tenantId: 'a', state: 'SUCCEEDED' }),
      atMs,
      receiveCount,
    });
    const answer = bound(5);
    const lost = checkHistory(
      emptyHistory({ writes: late, bounds: [answer], receives: [report(T0 + 1100, 1), report(T0 + 31_000, 2)] }),
    );
    expect(lost.violations).toEqual([]);
    expect(lost.stats.waitBounds).toMatchObject({ checked: 0, assumptionBroken: 1, reportLost: 1 });
    // Delivered once: the scheduler learned of it at once, and the late start breaks the bound.
    expect(check({ writes: late, bounds: [answer], receives: [report(T0 + 1100, 1)] }).invariants).toEqual([
      'wait-bound',
    ]);
  });

  it('does not judge a late bound whose task the scheduler took in later than the answer assumed', () => {
    // Dispatched at 20 s; the answer assumed it in the engine by 5 s (its join instant) or, from a
    // snapshot that held it, by 1 s.
    const late = writes([['DISPATCHED', 20]]);
    const atSubmit = bound(5, { assumedJoins: { atMost: 5, fromMs: T0 + 1000, byMs: T0 + 5000 } });
    const fromSnapshot = bound(5, { asOfMs: T0 + 1000 });
    const takenIn = (seconds: number) => new Map([['t', T0 + seconds * 1000]]);
    // Taken in at 18 s (a lost announcement, found by the backstop): not judged.
    for (const answer of [atSubmit, fromSnapshot]) {
      const result = checkHistory(emptyHistory({ writes: late, bounds: [answer], admitted: takenIn(18) }));
      expect(result.violations).toEqual([]);
      expect(result.stats.waitBounds).toMatchObject({ checked: 0, assumptionBroken: 1, intakeNotKept: 1 });
    }
    // Taken in on time: the late start breaks it.
    expect(check({ writes: late, bounds: [atSubmit], admitted: takenIn(4) }).invariants).toEqual(['wait-bound']);
    expect(check({ writes: late, bounds: [fromSnapshot], admitted: takenIn(0.8) }).invariants).toEqual(['wait-bound']);
  });

  it('takes a retried task to be taken in when the engine took it in again, not at its first attempt', () => {
    // Dispatched at 1 s, back to QUEUED at 2 s (a retry), asked about at 2.9 s (snapshot of 3 s),
    // dispatched again at 20 s; the engine took it in at 0.8 s and, for the retry, at 18 s.
    const retried = writes([
      ['DISPATCHED', 1],
      ['QUEUED', 2],
      ['DISPATCHED', 20],
    ]);
    const answer = bound(5, { askedAtMs: T0 + 2900, atMs: T0 + 3000, asOfMs: T0 + 3000 });
    const admissions = new Map([['t', [T0 + 800, T0 + 18_000]]]);
    const result = checkHistory(
      emptyHistory({ writes: retried, bounds: [answer], admitted: new Map([['t', T0 + 800]]), admissions }),
    );
    expect(result.violations).toEqual([]);
    expect(result.stats.waitBounds).toMatchObject({ checked: 0, assumptionBroken: 1, intakeNotKept: 1 });
    // Taken in again by 3 s: the late start breaks it.
    const onTime = new Map([['t', [T0 + 800, T0 + 2500]]]);
    expect(check({ writes: retried, bounds: [answer], admissions: onTime }).invariants).toEqual(['wait-bound']);
  });

  it('does not judge a late bound whose tenant had another task waiting when it was asked (its index lagging)', () => {
    const other = [
      { atMs: T0 + 200, task: task('u', 'QUEUED') },
      { atMs: T0 + 15_000, task: task('u', 'DISPATCHED') },
    ];
    const late = [...writes([['DISPATCHED', 20]]), ...other].sort((a, b) => a.atMs - b.atMs);
    const result = checkHistory(emptyHistory({ writes: late, bounds: [bound(5)] }));
    expect(result.violations).toEqual([]);
    expect(result.stats.waitBounds).toMatchObject({ checked: 0, assumptionBroken: 1, notOnlyWaitingLate: 1 });
    // Its other task gone before the question: judged, and broken.
    const before = [
      { atMs: T0 + 200, task: task('u', 'QUEUED') },
      { atMs: T0 + 800, task: task('u', 'DISPATCHED') },
    ];
    const judged = [...writes([['DISPATCHED', 20]]), ...before].sort((a, b) => a.atMs - b.atMs);
    expect(check({ writes: judged, bounds: [bound(5)] }).invariants).toEqual(['wait-bound']);
  });

  it('takes a task that left QUEUED between the question and the answer as started then', () => {
    // Read QUEUED, dispatched at 0.95 s, the answer (bound 0) arriving at 1 s: no later write.
    const quick = check({ writes: writes([['DISPATCHED', 0.95]]), bounds: [bound(0)] });
    expect(quick).toEqual({ invariants: [], counts: counts({ given: 1, checked: 1 }) });
  });
});

describe('chaos: the bounds scenario', () => {
  it('keeps every bound of a small run (one seed), and breaks some once the bounds are shrunk', async () => {
    const history = await runChaos({
      ...DEFAULT_OPTIONS,
      ...CHAOS_SCENARIOS.bounds,
      steadyTenants: 8,
      tasks: 16,
      submitSeconds: 60,
      crowdSubmitSeconds: 10,
      delayRate: 0,
      config: {
        pools: {
          lambda: { concurrency: 2, maxTimeoutSeconds: 60 },
          fargate: { vcpu: 2, memoryMiB: 4096, maxTimeoutSeconds: 120 },
        },
      },
      seed: 1,
    });
    const { violations, stats } = checkHistory(history);
    expect(violations).toEqual([]);
    const bounds = stats.waitBounds;
    expect(bounds.checked).toBeGreaterThanOrEqual(40);
    expect(bounds.given).toBe(bounds.checked + bounds.assumptionBroken + bounds.cancelledWaiting + bounds.unresolved);

    // The same history with every bound a fiftieth of what the API said (a formula shrunk 50×).
    const shrunk = checkHistory({
      ...history,
      bounds: history.bounds.map((b) => ({
        ...b,
        maxWaitSeconds: b.maxWaitSeconds === null ? null : Math.floor(b.maxWaitSeconds / 50),
      })),
    });
    const broken = shrunk.violations.filter((v) => v.invariant === 'wait-bound');
    expect(broken.length).toBeGreaterThan(0);
    expect(shrunk.stats.waitBounds.broken).toBe(broken.length);
    // What the answers assumed of the others (the pool's pace or headroom, the tenants joining, the
    // intake, its tenant's other tasks) is judged only for a late start, so a shrunk bound may move
    // from checked to assumption broken, no further.
    const judgedLate = (b: typeof bounds) =>
      b.paceNotKept +
      b.headroomNotKept +
      b.runningNotSeen +
      b.joinsExceeded +
      b.busyWeightExceeded +
      b.reportLost +
      b.intakeNotKept +
      b.notOnlyWaitingLate;
    expect(shrunk.stats.waitBounds.checked + judgedLate(shrunk.stats.waitBounds)).toBe(
      bounds.checked + judgedLate(bounds),
    );
    expect(shrunk.stats.waitBounds.given).toBe(bounds.given);
  }, 120_000);

  it("gives answers on the Lambda pool's headroom at light load (the quiet scenario), and keeps them", async () => {
    const history = await runChaos({
      ...DEFAULT_OPTIONS,
      ...CHAOS_SCENARIOS.quiet,
      steadyTenants: 6,
      tasks: 10,
      submitSeconds: 240,
      seed: 1,
    });
    const { violations, stats } = checkHistory(history);
    expect(violations).toEqual([]);
    const bounds = stats.waitBounds;
    expect(bounds.onHeadroom).toBeGreaterThanOrEqual(20);
    // A headroom answer is one round and the intake: seconds, not the minutes of the timeouts.
    const onHeadroom = history.bounds.filter((b) => b.assumedHeadroom && b.maxWaitSeconds !== null);
    expect(Math.max(...onHeadroom.map((b) => b.maxWaitSeconds as number))).toBeLessThanOrEqual(12);
    // Shrunk to nothing (less the checker's slack, which headroom starts now fit in since the
    // scheduler stopped rescanning the settings every 10 s), every start after its answer breaks
    // it: the check can fail.
    const shrunk = checkHistory({
      ...history,
      bounds: history.bounds.map((b) =>
        b.assumedHeadroom ? { ...b, maxWaitSeconds: -WAIT_BOUND_SLACK_MS / 1000 } : b,
      ),
    });
    expect(shrunk.violations.filter((v) => v.invariant === 'wait-bound').length).toBeGreaterThan(0);
  }, 120_000);
});
