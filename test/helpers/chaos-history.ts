/**
 * A chaos history with nothing in it (sim/chaos/history.ts), for tests of single checker rules:
 * each test fills in only what its rule reads.
 */
import type { Task } from '../../runtime/core/task.ts';
import type { History } from '../../sim/chaos/history.ts';

export const HISTORY_T0 = Date.parse('2026-01-05T00:00:00.000Z');

export function emptyHistory(overrides: Partial<History> = {}): History {
  return {
    seed: 0,
    startMs: HISTORY_T0,
    endMs: HISTORY_T0 + 60_000,
    tenants: {},
    accepted: [],
    bounds: [],
    admitted: new Map(),
    leases: [],
    stalls: [],
    pauses: [],
    unacknowledged: 0,
    runs: [],
    starts: [],
    deaths: [],
    writes: [],
    receives: [],
    sends: [],
    deadLettered: [],
    finalTasks: [],
    schedulerInvocations: 0,
    scheduler: { invoked: {}, ended: {} },
    calls: { ok: 0, lost: 0, throttled: 0 },
    ...overrides,
  };
}

/** A task item as the history records its writes: tenant `a`'s `sim.work` on Lambda, fence 1; `extra` on top. */
export const historyTask = (taskId: string, state: Task['state'], extra: Partial<Task> = {}): Task =>
  ({
    taskId,
    tenantId: 'a',
    type: 'sim.work',
    state,
    version: 1,
    fence: 1,
    attempts: 0,
    maxAttempts: 3,
    priority: 'normal',
    runtime: 'lambda',
    ...extra,
  }) as Task;
