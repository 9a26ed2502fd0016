import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidTransitionError, StaleAttemptError } from '../../runtime/core/errors.ts';
import {
  abandon,
  acknowledgeCancel,
  cancel,
  createTask,
  deadLetter,
  dispatch,
  expireLease,
  fail,
  heartbeat,
  retry,
  start,
  succeed,
  type TransitionPlan,
} from '../../runtime/core/lifecycle.ts';
import { isTerminal, type NewTaskSpec, type Task } from '../../runtime/core/task.ts';
import { taskSpec } from '../helpers/factories.ts';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const spec = (overrides: Partial<NewTaskSpec> = {}) => taskSpec({ payload: { n: 1 }, ...overrides });
const retryable = { name: 'Error', message: 'boom', retryable: true };

function running(task = createTask('t1', spec(), T0)): Task {
  const dispatched = dispatch(task, T0, 120).next;
  return start(dispatched, dispatched.fence, T0, 60).next;
}

describe('Module: lifecycle', () => {
  describe('Function: createTask', () => {
    it('creates a QUEUED task eligible now, aging from now', () => {
      // Act
      const task = createTask('t1', spec(), T0, 'hash');

      // Assess
      expect(task).toMatchObject({
        state: 'QUEUED',
        attempts: 0,
        version: 1,
        fence: 0,
        submittedAt: T0.toISOString(),
        runAt: T0.toISOString(),
        agingFrom: T0.toISOString(),
        requestHash: 'hash',
      });
    });

    it('ages a delayed task from when it becomes eligible', () => {
      const task = createTask('t1', spec({ runAt: at(600) }), T0);
      expect(task.runAt).toBe(at(600).toISOString());
      expect(task.agingFrom).toBe(at(600).toISOString());
    });
  });

  describe('Function: dispatch', () => {
    it('moves QUEUED to DISPATCHED with a new fence and a dispatch lease, conditioned on the version', () => {
      // Prepare
      const task = createTask('t1', spec(), T0);

      // Act
      const plan = dispatch(task, at(1), 120);

      // Assess
      expect(plan.precondition).toEqual({ states: ['QUEUED'], version: 1 });
      expect(plan.next).toMatchObject({
        state: 'DISPATCHED',
        fence: 1,
        version: 2,
        dispatchedAt: at(1).toISOString(),
        leaseExpiresAt: at(121).toISOString(),
      });
    });

    it('refuses a task that is not yet eligible', () => {
      const task = createTask('t1', spec({ runAt: at(60) }), T0);
      expect(() => dispatch(task, at(59), 120)).toThrow(InvalidTransitionError);
      expect(dispatch(task, at(60), 120).next.state).toBe('DISPATCHED');
    });

    it('refuses a task that is not QUEUED', () => {
      expect(() => dispatch(running(), T0, 120)).toThrow(/requires QUEUED/);
    });
  });

  describe('Function: start', () => {
    it('counts the attempt when it starts, fenced on the dispatch', () => {
      const dispatched = dispatch(createTask('t1', spec(), T0), T0, 120).next;
      const plan = start(dispatched, 1, at(2), 60);
      expect(plan.precondition).toEqual({ states: ['DISPATCHED'], version: 2, fence: 1 });
      expect(plan.next).toMatchObject({ state: 'RUNNING', attempts: 1, leaseExpiresAt: at(62).toISOString() });
    });

    it('refuses a stale fence (a zombie delivery of an earlier dispatch)', () => {
      const dispatched = dispatch(createTask('t1', spec(), T0), T0, 120).next;
      expect(() => start(dispatched, 0, T0, 60)).toThrow(StaleAttemptError);
    });

    it('refuses a second start of the same dispatch (duplicate delivery)', () => {
      expect(() => start(running(), 1, T0, 60)).toThrow(StaleAttemptError);
    });
  });

  describe('Function: fail', () => {
    it('returns a retryable failure to QUEUED after the backoff, keeping tier and age', () => {
      const task = running();
      const plan = fail(task, task.fence, at(10), retryable, 4000);
      expect(plan.next).toMatchObject({
        state: 'QUEUED',
        runAt: at(14).toISOString(),
        agingFrom: task.agingFrom,
        priority: 'normal',
        attempts: 1,
        error: retryable,
      });
      expect(plan.next.leaseExpiresAt).toBeUndefined();
    });

    it('fails for good when attempts are used up or the error is not retryable', () => {
      const once = running(createTask('t1', spec({ maxAttempts: 1 }), T0));
      expect(fail(once, once.fence, at(1), retryable, 0).next.state).toBe('FAILED');
      const task = running();
      const permanent = { ...retryable, retryable: false };
      expect(fail(task, task.fence, at(1), permanent, 0).next).toMatchObject({ state: 'FAILED', error: permanent });
    });
  });

  describe('Function: cancel', () => {
    it('cancels a waiting task at once', () => {
      expect(cancel(createTask('t1', spec(), T0), at(1))?.next.state).toBe('CANCELLED');
    });

    it('asks a running task to stop, and its worker acknowledges', () => {
      const task = running();
      const requested = cancel(task, at(1))!.next;
      expect(requested).toMatchObject({ state: 'RUNNING', cancelRequested: true });
      expect(acknowledgeCancel(requested, requested.fence, at(2)).next.state).toBe('CANCELLED');
    });

    it('is a no-op on a cancelled task and refused on a finished one', () => {
      const cancelled = cancel(createTask('t1', spec(), T0), at(1))!.next;
      expect(cancel(cancelled, at(2))).toBeUndefined();
      const task = running();
      const done = succeed(task, task.fence, at(3), { ok: true }).next;
      expect(() => cancel(done, at(4))).toThrow(InvalidTransitionError);
    });
  });

  describe('Function: expireLease', () => {
    it('requeues a DISPATCHED task whose worker never started it, burning no attempt', () => {
      const dispatched = dispatch(createTask('t1', spec(), T0), T0, 120).next;
      expect(() => expireLease(dispatched, at(119), 0)).toThrow(/lease runs until/);
      const plan = expireLease(dispatched, at(121), 0);
      expect(plan.next).toMatchObject({ state: 'QUEUED', attempts: 0 });
    });

    it('treats an expired RUNNING lease as a failed attempt', () => {
      const task = running(createTask('t1', spec({ maxAttempts: 1 }), T0));
      const plan = expireLease(task, at(61), 0);
      expect(plan.next).toMatchObject({ state: 'FAILED', error: { name: 'LeaseExpired' } });
    });
  });

  describe('Function: abandon', () => {
    it('takes back the attempt of a gone holder at once, lease or not: DISPATCHED queued, RUNNING retried', () => {
      const dispatched = dispatch(createTask('t1', spec(), T0), T0, 120).next;
      const task = running(createTask('t2', spec({ maxAttempts: 3 }), T0));

      expect(abandon(dispatched, dispatched.fence, T0, 0)).toMatchObject({
        precondition: { states: ['DISPATCHED'], fence: dispatched.fence, version: dispatched.version },
        next: { state: 'QUEUED', attempts: 0 },
      });
      const plan = abandon(task, task.fence, at(1), 2_000);
      expect(plan.precondition).toEqual({ states: ['RUNNING'], fence: task.fence, version: task.version });
      expect(plan.next).toMatchObject({ state: 'QUEUED', runAt: at(3).toISOString(), error: { name: 'WorkerGone' } });
      expect(plan.next.leaseExpiresAt).toBeUndefined();
    });

    it('fails the task when it was the last attempt, and cancels it when a cancel was requested', () => {
      const last = running(createTask('t1', spec({ maxAttempts: 1 }), T0));
      const cancelled = { ...dispatch(createTask('t2', spec(), T0), T0, 120).next, cancelRequested: true };

      expect(abandon(last, last.fence, T0, 0).next).toMatchObject({ state: 'FAILED', error: { retryable: true } });
      expect(abandon(cancelled, cancelled.fence, T0, 0).next).toMatchObject({ state: 'CANCELLED' });
    });

    it('refuses another attempt than the one named, and a task no longer leased', () => {
      const task = running();
      const done = succeed(task, task.fence, T0, null).next;

      expect(() => abandon(task, task.fence - 1, T0, 0)).toThrow(StaleAttemptError);
      expect(() => abandon(done, task.fence, T0, 0)).toThrow(StaleAttemptError);
    });
  });

  describe('Function: deadLetter', () => {
    it('counts an attempt for a message that never started, so poison cannot loop forever', () => {
      const dispatched = dispatch(createTask('t1', spec({ maxAttempts: 1 }), T0), T0, 120).next;
      const plan = deadLetter(dispatched, dispatched.fence, at(5), 0)!;
      expect(plan.precondition).toEqual({ states: ['DISPATCHED'], version: 2, fence: 1 });
      expect(plan.next).toMatchObject({ state: 'FAILED', attempts: 1, error: { name: 'DeadLettered' } });
    });

    it('ignores a stale dead letter', () => {
      const task = running();
      expect(deadLetter(task, task.fence - 1, at(5), 0)).toBeUndefined();
    });
  });

  describe('Function: retry', () => {
    it('gives a failed task a fresh attempt budget', () => {
      const task = running(createTask('t1', spec({ maxAttempts: 1 }), T0));
      const failed = fail(task, task.fence, at(1), retryable, 0).next;
      expect(retry(failed, at(9)).next).toMatchObject({ state: 'QUEUED', attempts: 0, runAt: at(9).toISOString() });
      expect(() => retry(task, at(9))).toThrow(InvalidTransitionError);
    });
  });

  describe('Invariants (property)', () => {
    type Op =
      | { kind: 'dispatch' }
      | { kind: 'start'; staleFence: boolean }
      | { kind: 'heartbeat' }
      | { kind: 'succeed'; staleFence: boolean }
      | { kind: 'fail'; retryable: boolean }
      | { kind: 'cancel' }
      | { kind: 'expire' }
      | { kind: 'retry' };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.constant({ kind: 'dispatch' as const }),
      fc.record({ kind: fc.constant('start' as const), staleFence: fc.boolean() }),
      fc.constant({ kind: 'heartbeat' as const }),
      fc.record({ kind: fc.constant('succeed' as const), staleFence: fc.boolean() }),
      fc.record({ kind: fc.constant('fail' as const), retryable: fc.boolean() }),
      fc.constant({ kind: 'cancel' as const }),
      fc.constant({ kind: 'expire' as const }),
      fc.constant({ kind: 'retry' as const }),
    );

    it('versions and fences only grow, attempts stay within budget, a stale fence never writes', () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 5 }), fc.array(op, { maxLength: 40 }), (maxAttempts, ops) => {
          let task = createTask('t1', spec({ maxAttempts }), T0);
          let clock = 0;
          let successes = 0;
          for (const step of ops) {
            clock += 200; // past every lease, so expiry is always possible
            const now = at(clock);
            let plan: TransitionPlan | undefined;
            try {
              switch (step.kind) {
                case 'dispatch':
                  plan = dispatch(task, now, 120);
                  break;
                case 'start':
                  plan = start(task, step.staleFence ? task.fence - 1 : task.fence, now, 60);
                  if (step.staleFence) throw new Error('a stale start must be refused');
                  break;
                case 'heartbeat':
                  plan = heartbeat(task, task.fence, now, 60);
                  break;
                case 'succeed':
                  plan = succeed(task, step.staleFence ? task.fence + 1 : task.fence, now, 'ok');
                  if (step.staleFence) throw new Error('a stale completion must be refused');
                  break;
                case 'fail':
                  plan = fail(task, task.fence, now, { ...retryable, retryable: step.retryable }, 1000);
                  break;
                case 'cancel':
                  plan = cancel(task, now);
                  break;
                case 'expire':
                  plan = expireLease(task, now, 1000);
                  break;
                case 'retry':
                  plan = retry(task, now);
                  break;
              }
            } catch (error) {
              if (!(error instanceof InvalidTransitionError || error instanceof StaleAttemptError)) throw error;
              continue;
            }
            if (!plan) continue;
            const next = plan.next;
            expect(plan.precondition.version).toBe(task.version);
            expect(plan.precondition.states).toContain(task.state);
            expect(next.version).toBe(task.version + 1);
            expect(next.fence).toBeGreaterThanOrEqual(task.fence);
            if (next.state === 'SUCCEEDED' && task.state !== 'SUCCEEDED') successes++;
            // A finished task only leaves its terminal state through an operator retry.
            if (isTerminal(task.state)) expect(plan.name).toBe('retry');
            if (plan.name !== 'retry') expect(next.attempts).toBeLessThanOrEqual(maxAttempts);
            task = next;
          }
          expect(successes).toBeLessThanOrEqual(1 + ops.filter((o) => o.kind === 'retry').length);
        }),
        { numRuns: 500 },
      );
    });
  });
});
