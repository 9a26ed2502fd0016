/**
 * Task dependencies under every fault (issue 25 item 3): the `mixed` scenario's dependency chains,
 * settled by the simulated stream function (crashing and retried), hold the dependency-order,
 * dependency-failed and stranded invariants; and the checker finds each kind of breach in a
 * history that has one.
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
    tenants: { a: { weight: 1, maxConcurrency: 10 } },
    writes,
    finalTasks: writes.map((write) => write.task),
    ...extra,
  });
}

const task = historyTask;

const violationsOf = (h: History, invariant: string) =>
  checkHistory(h).violations.filter((violation) => violation.invariant === invariant);

describe('Chaos: dependencies', () => {
  it('the mixed scenario (with dependency chains) keeps every invariant for seeds 1-2', async () => {
    for (const seed of [1, 2]) {
      const run = await runChaos({ ...DEFAULT_OPTIONS, ...CHAOS_SCENARIOS.mixed, seed });
      const summary = checkHistory(run);
      expect(summary.violations).toEqual([]);
      expect(summary.stats.dependencies.dependents).toBeGreaterThan(0);
      expect(summary.stats.unfinished).toBe(0);
    }
  }, 300_000);
});

describe('Checker: dependencies', () => {
  it('finds a dependent dispatched before its dependency succeeded', () => {
    const h = history(
      [
        { atMs: T0 + 1000, task: task('dep', 'RUNNING') },
        { atMs: T0 + 2000, task: task('child', 'DISPATCHED', { dependsOn: ['dep'] }) },
        { atMs: T0 + 3000, task: task('dep', 'SUCCEEDED') },
      ],
      { dependsOn: new Map([['child', ['dep']]]) },
    );
    expect(violationsOf(h, 'dependency-order')).toHaveLength(1);
  });

  it('finds a dependent of a failed task that did not end DEPENDENCY_FAILED, and one cancelled for no reason', () => {
    const failedCause = history([
      { atMs: T0 + 1000, task: task('dep', 'FAILED') },
      { atMs: T0 + 2000, task: task('child', 'QUEUED', { dependsOn: ['dep'], waitingOn: ['dep'] }) },
    ]);
    failedCause.finalTasks.splice(0, failedCause.finalTasks.length, task('dep', 'FAILED'), task('child', 'SUCCEEDED'));
    expect(
      violationsOf({ ...failedCause, dependsOn: new Map([['child', ['dep']]]) }, 'dependency-failed'),
    ).toHaveLength(1);

    const noCause = history(
      [
        { atMs: T0 + 1000, task: task('dep', 'RUNNING') },
        {
          atMs: T0 + 2000,
          task: task('child', 'CANCELLED', {
            error: { name: 'DEPENDENCY_FAILED', code: 'DEPENDENCY_FAILED', message: 'x', retryable: false },
          }),
        },
      ],
      { dependsOn: new Map([['child', ['dep']]]) },
    );
    expect(violationsOf(noCause, 'dependency-failed')).toHaveLength(1);
  });

  it('finds a task left held at the end', () => {
    const h = history([
      { atMs: T0 + 1000, task: task('dep', 'SUCCEEDED') },
      { atMs: T0 + 2000, task: task('child', 'QUEUED', { dependsOn: ['dep'], waitingOn: ['dep'] }) },
    ]);
    expect(violationsOf(h, 'stranded')).toHaveLength(1);
  });
});
