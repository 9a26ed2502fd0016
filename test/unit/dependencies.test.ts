/**
 * The dependency rules of the core (runtime/core/dependencies.ts): hold, release, DEPENDENCY_FAILED,
 * the mark on a dependency, and the wait explanation of a held task.
 */
import { describe, expect, it } from 'vitest';
import {
  DEPENDENCY_FAILED,
  dependencyFailed,
  dependencySucceeded,
  holdOnDependencies,
  isHeld,
  markHasDependents,
} from '../../runtime/core/dependencies.ts';
import { InvalidTransitionError } from '../../runtime/core/errors.ts';
import { cancel, createTask, dispatch, retry } from '../../runtime/core/lifecycle.ts';
import { explainWait } from '../../runtime/core/policy/explain.ts';
import type { Task, TaskState } from '../../runtime/core/task.ts';
import { taskSpec } from '../helpers/factories.ts';

const T0 = new Date('2026-12-01T10:00:00.000Z');
const later = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

const held = (dependsOn: string[], states: Record<string, TaskState> = {}): Task =>
  holdOnDependencies(createTask('tsk_dependent', taskSpec({ dependsOn }), T0), new Map(Object.entries(states)));

describe('Function: holdOnDependencies', () => {
  it('holds on the dependencies that have not succeeded, in the order given', () => {
    const task = held(['a', 'b', 'c'], { a: 'RUNNING', b: 'SUCCEEDED', c: 'QUEUED' });
    expect(task.waitingOn).toEqual(['a', 'c']);
    expect(isHeld(task)).toBe(true);
  });

  it('does not hold a task whose dependencies all succeeded', () => {
    const task = held(['a'], { a: 'SUCCEEDED' });
    expect(task.waitingOn).toBeUndefined();
    expect(task.dependsOn).toEqual(['a']);
    expect(isHeld(task)).toBe(false);
  });
});

describe('Function: dispatch (held)', () => {
  it('refuses a held task', () => {
    expect(() => dispatch(held(['a']), later(1), 120)).toThrow(InvalidTransitionError);
  });
});

describe('Function: dependencySucceeded', () => {
  it('takes one dependency off and keeps holding while others remain', () => {
    const planned = dependencySucceeded(held(['a', 'b']), 'a', later(5))!;
    expect(planned.next.waitingOn).toEqual(['b']);
    expect(planned.next.state).toBe('QUEUED');
    expect(planned.event).toBeUndefined();
    expect(planned.precondition).toEqual({ states: ['QUEUED'], version: 1, fence: undefined });
  });

  it('releases with the last one: eligible and aging from then', () => {
    const planned = dependencySucceeded(held(['a']), 'a', later(5))!;
    expect(planned.next.waitingOn).toBeUndefined();
    expect(planned.next.runAt).toBe(later(5).toISOString());
    expect(planned.next.agingFrom).toBe(later(5).toISOString());
    expect(() => dispatch(planned.next, later(6), 120)).not.toThrow();
  });

  it('keeps a later runAt (a delayed dependent stays delayed)', () => {
    const delayed = holdOnDependencies(
      createTask('tsk_d', taskSpec({ dependsOn: ['a'], runAt: later(600) }), T0),
      new Map([['a', 'RUNNING' as TaskState]]),
    );
    expect(dependencySucceeded(delayed, 'a', later(5))!.next.runAt).toBe(later(600).toISOString());
  });

  it('does nothing when repeated, or for a task not held on it', () => {
    const released = dependencySucceeded(held(['a']), 'a', later(5))!.next;
    expect(dependencySucceeded(released, 'a', later(6))).toBeUndefined();
    expect(dependencySucceeded(held(['b']), 'a', later(6))).toBeUndefined();
  });
});

describe('Function: dependencyFailed', () => {
  it('cancels the held task with DEPENDENCY_FAILED, naming the dependency and its end', () => {
    const planned = dependencyFailed(held(['a', 'b']), { taskId: 'a', state: 'FAILED' }, later(5))!;
    expect(planned.next.state).toBe('CANCELLED');
    expect(planned.next.waitingOn).toBeUndefined();
    expect(planned.next.error).toEqual({
      name: DEPENDENCY_FAILED,
      code: DEPENDENCY_FAILED,
      message: 'Dependency a ended FAILED',
      retryable: false,
    });
    expect(planned.event?.state).toBe('CANCELLED');
  });

  it('does nothing once the task is no longer held on it', () => {
    const cancelled = dependencyFailed(held(['a']), { taskId: 'a', state: 'CANCELLED' }, later(5))!.next;
    expect(dependencyFailed(cancelled, { taskId: 'a', state: 'CANCELLED' }, later(6))).toBeUndefined();
  });
});

describe('Function: markHasDependents', () => {
  it('marks a task that has not ended, once', () => {
    const planned = markHasDependents(createTask('tsk_a', taskSpec(), T0), later(1))!;
    expect(planned.next.hasDependents).toBe(true);
    expect(planned.next.version).toBe(2);
    expect(markHasDependents(planned.next, later(2))).toBeUndefined();
  });

  it('refuses a task that has ended: the caller settles the edge itself', () => {
    const ended = cancel(createTask('tsk_a', taskSpec(), T0), later(1))!.next;
    expect(() => markHasDependents(ended, later(2))).toThrow(InvalidTransitionError);
  });
});

describe('Cancel and operator retry of a held task', () => {
  it('drops the hold with the cancel, and a retry runs without waiting again', () => {
    const cancelled = cancel(held(['a']), later(1))!.next;
    expect(cancelled.waitingOn).toBeUndefined();
    const retried = retry(cancelled, later(2)).next;
    expect(isHeld(retried)).toBe(false);
  });
});

describe('Function: explainWait (held)', () => {
  it('says it waits on its dependencies, names them, and gives no bound', () => {
    const explanation = explainWait({
      policy: 'fair-share',
      agingSeconds: 300,
      nowMs: later(10).getTime(),
      task: {
        taskId: 'tsk_dependent',
        tenantId: 'acme',
        priority: 'normal',
        runtime: 'lambda',
        agingFromMs: T0.getTime(),
        runAtMs: T0.getTime(),
        fitsPool: true,
        fitsFree: true,
      },
      tenant: { active: 0, maxConcurrency: 10, weightedShare: 0 },
      pool: { heldForOther: false, leader: null },
      aheadCount: null,
      limits: { lambdaConcurrency: 10, holdSeconds: { lambda: 1000, fargate: 1000 }, reservations: true },
      dependencies: ['tsk_a', 'tsk_b'],
    });
    expect(explanation.reason).toBe('dependencies');
    expect(explanation.message).toBe('Held until its 2 dependencies tsk_a, tsk_b succeed');
    expect(explanation.waitBoundSeconds).toBeNull();
    expect(explanation.noBound?.code).toBe('dependencies');
  });
});
