/**
 * Flow control under every fault (issue 26): the `flow` scenario (start-rate limits, concurrency
 * keys, an operator pausing and resuming tenants and types) holds the rate, key-limit and pause
 * invariants; and the checker finds each kind of breach in a history that has one.
 */
import { describe, expect, it } from 'vitest';
import type { Task } from '../../runtime/core/task.ts';
import { checkHistory } from '../../sim/chaos/check.ts';
import type { History } from '../../sim/chaos/history.ts';
import { CHAOS_SCENARIOS, DEFAULT_OPTIONS, runChaos } from '../../sim/chaos/run.ts';
import { emptyHistory, HISTORY_T0, historyTask } from '../helpers/chaos-history.ts';

const T0 = HISTORY_T0;

function history(writes: { atMs: number; task: Task }[], extra: Partial<History> = {}): History {
  return emptyHistory({
    tenants: { a: { weight: 1, maxConcurrency: 10, maxStartsPerSecond: 1, burst: 2 } },
    writes,
    ...extra,
  });
}

const task = (taskId: string, state: Task['state'], atMs: number, extra: Partial<Task> = {}): Task =>
  historyTask(taskId, state, {
    ...(state === 'DISPATCHED' ? { dispatchedAt: new Date(atMs).toISOString() } : {}),
    ...extra,
  });

const dispatch = (taskId: string, atMs: number, extra: Partial<Task> = {}) => [
  { atMs: atMs - 1, task: task(taskId, 'QUEUED', atMs - 1, extra) },
  { atMs, task: task(taskId, 'DISPATCHED', atMs, extra) },
];

describe('chaos checker: flow control', () => {
  it('finds a dispatch over the start rate', () => {
    // 1/s, burst 2: three dispatches in the same second are one too many.
    const found = checkHistory(
      history([...dispatch('t1', T0 + 1000), ...dispatch('t2', T0 + 1100), ...dispatch('t3', T0 + 1200)]),
    );
    expect(found.violations.map((v) => v.invariant)).toEqual(['rate']);
    const fine = checkHistory(
      history([...dispatch('t1', T0 + 1000), ...dispatch('t2', T0 + 1100), ...dispatch('t3', T0 + 2100)]),
    );
    expect(fine.violations).toEqual([]);
  });

  it('finds more tasks of a key leased than its limit', () => {
    const keyed = { concurrencyKey: 'k', concurrencyLimit: 1 };
    const found = checkHistory(
      history([...dispatch('t1', T0 + 1000, keyed), ...dispatch('t2', T0 + 5000, keyed)], { tenants: {} }),
    );
    expect(found.violations.map((v) => v.invariant)).toEqual(['key-limit']);
  });

  it('finds a dispatch recorded after a pause answered and before the resume was asked', () => {
    const pauses: History['pauses'] = [
      { kind: 'type', id: 'sim.work', paused: true, requestedAtMs: T0 + 900, answeredAtMs: T0 + 1000 },
      { kind: 'type', id: 'sim.work', paused: false, requestedAtMs: T0 + 3000, answeredAtMs: T0 + 3100 },
    ];
    const found = checkHistory(history([...dispatch('t1', T0 + 2000)], { tenants: {}, pauses }));
    expect(found.violations.map((v) => v.invariant)).toEqual(['pause']);
    const before = checkHistory(history([...dispatch('t1', T0 + 950)], { tenants: {}, pauses }));
    expect(before.violations).toEqual([]);
  });

  it('holds the rate, key-limit and pause invariants with every fault on (seed 1 of --scenario flow)', async () => {
    const run = await runChaos({ ...DEFAULT_OPTIONS, ...CHAOS_SCENARIOS.flow, seed: 1 });
    const { violations, stats } = checkHistory(run);
    expect(violations).toEqual([]);
    expect(stats.flow.rateLimitedDispatches).toBeGreaterThan(20);
    expect(stats.flow.keyedDispatches).toBeGreaterThan(20);
    expect(stats.flow.pausesAnswered).toBeGreaterThan(4);
  }, 240_000);
});
