/**
 * The chaos checker's then-once invariant (issue 25): it finds a batch whose members all ended
 * and whose then-task never came (a count never made), a then-task created before the last member
 * ended, one whose counts disagree with the members' end states, and a second task carrying the
 * batch's summary; a correct batch passes. A chaos run with batches holds it.
 */
import { describe, expect, it } from 'vitest';
import type { Task } from '../../runtime/core/task.ts';
import { checkHistory } from '../../sim/chaos/check.ts';
import type { History } from '../../sim/chaos/history.ts';
import { DEFAULT_OPTIONS, runChaos } from '../../sim/chaos/run.ts';
import { emptyHistory, HISTORY_T0 } from '../helpers/chaos-history.ts';

const T0 = HISTORY_T0;

const task = (taskId: string, state: Task['state'], payload: unknown = {}): Task =>
  ({
    taskId,
    tenantId: 'a',
    state,
    version: 1,
    fence: 0,
    attempts: 0,
    payloadJson: JSON.stringify(payload),
  }) as unknown as Task;

/** Members m1 (SUCCEEDED at +10 s) and m2 (FAILED at +20 s), and a then-task `then` created at `thenAtMs`. */
function history(then: { atMs: number; summary: unknown } | undefined, extra: Task[] = []): History {
  const writes = [
    { atMs: T0 + 1000, task: task('m1', 'QUEUED') },
    { atMs: T0 + 1000, task: task('m2', 'QUEUED') },
    { atMs: T0 + 10_000, task: task('m1', 'SUCCEEDED') },
    { atMs: T0 + 20_000, task: task('m2', 'FAILED') },
    ...(then ? [{ atMs: then.atMs, task: task('then', 'SUCCEEDED', { batch: then.summary }) }] : []),
  ];
  const finals = new Map(writes.map(({ task }) => [task.taskId, task]));
  return emptyHistory({
    accepted: ['m1', 'm2'].map((taskId) => ({
      taskId,
      tenantId: 'a',
      atMs: T0,
      maxAttempts: 1,
      maxWaitSeconds: null,
      boundAtMs: T0,
    })),
    batches: [{ batchId: 'bat_1', tenantId: 'a', memberIds: ['m1', 'm2'], thenTaskId: 'then', atMs: T0 }],
    writes,
    finalTasks: [...finals.values(), ...extra],
  });
}

const right = { batchId: 'bat_1', succeeded: 1, failed: 1, cancelled: 0 };
const thenOnce = (h: History) =>
  checkHistory(h)
    .violations.filter((v) => v.invariant === 'then-once')
    .map((v) => v.detail);

describe('chaos checker: then-once', () => {
  it('passes a then-task created after the last end with the right counts', () => {
    expect(thenOnce(history({ atMs: T0 + 21_000, summary: right }))).toEqual([]);
  });

  it('finds a batch that ended without its then-task', () => {
    expect(thenOnce(history(undefined))).toEqual([expect.stringContaining('no then-task was submitted')]);
  });

  it('finds a then-task created before the last member ended', () => {
    expect(thenOnce(history({ atMs: T0 + 15_000, summary: right }))).toEqual([
      expect.stringContaining('a member ended at 20 s'),
    ]);
  });

  it('finds wrong counts, and a second task with the batch summary', () => {
    expect(thenOnce(history({ atMs: T0 + 21_000, summary: { ...right, failed: 0 } }))).toEqual([
      expect.stringContaining('then-task counts'),
    ]);
    expect(
      thenOnce(history({ atMs: T0 + 21_000, summary: right }, [task('then-2', 'QUEUED', { batch: right })])),
    ).toEqual([expect.stringContaining('other task(s) carry its summary')]);
  });

  it('holds in a chaos run with batches under every fault', async () => {
    const run = await runChaos({ ...DEFAULT_OPTIONS, seed: 3, tasks: 10, batches: 3, batchSize: [3, 8] });
    const summary = checkHistory(run);
    expect(summary.violations).toEqual([]);
    expect(summary.stats.batches.checked).toBe(3);
  }, 300_000);
});
