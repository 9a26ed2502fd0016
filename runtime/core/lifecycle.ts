/**
 * The task state machine. Every transition is a pure function of (current task, inputs, now)
 * that either refuses (typed error) or returns a plan: the next item and the precondition the
 * store must check in the same conditional write. The store never decides anything itself.
 *
 *   QUEUED ──dispatch──▶ DISPATCHED ──start──▶ RUNNING ──succeed──▶ SUCCEEDED
 *     ▲  ╲                  │                   │ ╲
 *     │   ╲cancel           │expireLease        │  ╲fail (no attempts left / non-retryable)──▶ FAILED
 *     │    ▼                ▼                   │   ╲
 *     │  CANCELLED ◀──── (back to QUEUED) ◀─────┘    cancel (requested; the handler's signal) ──▶ CANCELLED
 *     └──────── fail (retryable, attempts left) / expireLease: back to QUEUED with a backoff runAt
 *   FAILED | CANCELLED ──retry (operator)──▶ QUEUED
 *
 * Fencing: `version` guards every write against a concurrent writer; `fence` (incremented at
 * each dispatch) identifies one attempt, so a worker whose lease was lost and whose task was
 * re-dispatched can no longer start, heartbeat or finish it.
 */
import { InvalidTransitionError, StaleAttemptError, type TransitionPrecondition } from './errors.ts';
import { stateChangeEvent, type TaskEvent } from './events.ts';
import type { NewTaskSpec, Task, TaskError, TaskState } from './task.ts';

export interface TransitionPlan {
  readonly name: TransitionName;
  readonly precondition: TransitionPrecondition;
  /** The whole next item, version already incremented. */
  readonly next: Task;
  /** The event of this write when it changes the state (recorded by the store's outbox, if on). */
  readonly event?: TaskEvent;
}

export type TransitionName =
  | 'dispatch'
  | 'start'
  | 'heartbeat'
  | 'succeed'
  | 'fail'
  | 'cancel'
  | 'requestCancel'
  | 'expireLease'
  | 'abandon'
  | 'deadLetter'
  | 'retry'
  | 'markDependents'
  | 'dependencySucceeded'
  | 'dependencyFailed';

const iso = (ms: number): string => new Date(ms).toISOString();
const ms = (isoTime: string): number => Date.parse(isoTime);

/** Build a new QUEUED task. `taskId` is chosen by the caller (deterministic for idempotent submits). */
export function createTask(taskId: string, spec: NewTaskSpec, now: Date, requestHash?: string): Task {
  const submittedAt = now.toISOString();
  const runAt = spec.runAt && spec.runAt.getTime() > now.getTime() ? spec.runAt.toISOString() : submittedAt;
  return {
    taskId,
    tenantId: spec.tenantId,
    type: spec.type,
    payload: spec.payload,
    priority: spec.priority,
    ...(spec.idempotencyKey === undefined ? {} : { idempotencyKey: spec.idempotencyKey }),
    resources: spec.resources,
    runtime: spec.runtime,
    timeoutSeconds: spec.timeoutSeconds,
    maxAttempts: spec.maxAttempts,
    state: 'QUEUED',
    attempts: 0,
    version: 1,
    fence: 0,
    submittedAt,
    runAt,
    // A delayed task ages from when it becomes eligible, not from submission.
    agingFrom: runAt,
    eventSequence: 1,
    stateChangedAt: submittedAt,
    ...(spec.traceparent === undefined ? {} : { traceparent: spec.traceparent }),
    ...(spec.concurrencyKey === undefined
      ? {}
      : { concurrencyKey: spec.concurrencyKey, concurrencyLimit: spec.concurrencyLimit ?? 1 }),
    ...(spec.dependsOn === undefined || spec.dependsOn.length === 0 ? {} : { dependsOn: spec.dependsOn }),
    ...(requestHash === undefined ? {} : { requestHash }),
    ...(spec.batchId === undefined ? {} : { batchId: spec.batchId, batchIndex: spec.batchIndex ?? 0 }),
  };
}

/** The event of a task's creation (its QUEUED, sequence 1). */
export function creationEvent(task: Task): TaskEvent {
  return stateChangeEvent(undefined, task)!;
}

/**
 * The next item of a transition (exported for the other transitions of the core, e.g.
 * core/dependencies.ts). A write that changes `state` also moves `eventSequence` and
 * `stateChangedAt` and carries its event; any other write (a lease renewal) leaves them.
 */
export function plan(
  name: TransitionName,
  current: Task,
  now: Date,
  states: readonly TaskState[],
  changes: Partial<Task>,
  remove: readonly (keyof Task)[] = [],
  fence?: number,
): TransitionPlan {
  const next: Record<string, unknown> = { ...current, ...changes, version: current.version + 1 };
  for (const key of remove) delete next[key];
  if (next.state !== current.state) {
    next.eventSequence = (current.eventSequence ?? 0) + 1;
    next.stateChangedAt = now.toISOString();
  }
  const event = stateChangeEvent(current, next as unknown as Task);
  return {
    name,
    precondition: { states, version: current.version, fence },
    next: next as unknown as Task,
    ...(event ? { event } : {}),
  };
}

function requireState(name: TransitionName, task: Task, allowed: readonly TaskState[]): void {
  if (!allowed.includes(task.state)) {
    throw new InvalidTransitionError(name, task, `requires ${allowed.join(' or ')}`);
  }
}

/** A worker may act only for the attempt it was given: same fence, and the task still active. */
function requireFence(task: Task, fence: number, allowed: readonly TaskState[]): void {
  if (task.fence !== fence || !allowed.includes(task.state)) {
    throw new StaleAttemptError(task.taskId, fence, task);
  }
}

/**
 * QUEUED → DISPATCHED. The scheduler picked the task for a pool. Opens a dispatch lease: if no
 * worker starts it in time, reconciliation puts it back (no attempt is burned). With the
 * scheduler's lease token (`schedulerEpoch`) the write is refused when a newer epoch wrote it.
 */
export function dispatch(task: Task, now: Date, dispatchLeaseSeconds: number, schedulerEpoch?: number): TransitionPlan {
  requireState('dispatch', task, ['QUEUED']);
  if ((task.waitingOn?.length ?? 0) > 0) {
    throw new InvalidTransitionError('dispatch', task, `held until ${task.waitingOn!.join(', ')} succeed`);
  }
  if (ms(task.runAt) > now.getTime()) {
    throw new InvalidTransitionError('dispatch', task, `not eligible before ${task.runAt}`);
  }
  const planned = plan('dispatch', task, now, ['QUEUED'], {
    state: 'DISPATCHED',
    fence: task.fence + 1,
    dispatchedAt: iso(now.getTime()),
    leaseExpiresAt: iso(now.getTime() + dispatchLeaseSeconds * 1000),
    ...(schedulerEpoch === undefined ? {} : { schedulerEpoch }),
  });
  if (schedulerEpoch === undefined) return planned;
  return { ...planned, precondition: { ...planned.precondition, schedulerEpoch } };
}

/**
 * DISPATCHED → RUNNING for the attempt holding `fence`. Counts the attempt here, in DynamoDB,
 * so throttled or duplicate deliveries that never start the handler burn nothing.
 */
export function start(task: Task, fence: number, now: Date, runLeaseSeconds: number): TransitionPlan {
  requireFence(task, fence, ['DISPATCHED']);
  return plan(
    'start',
    task,
    now,
    ['DISPATCHED'],
    {
      state: 'RUNNING',
      attempts: task.attempts + 1,
      startedAt: iso(now.getTime()),
      leaseExpiresAt: iso(now.getTime() + runLeaseSeconds * 1000),
    },
    ['finishedAt'],
    fence,
  );
}

/** Extend a running attempt's lease. The caller learns of a cancel request from `next`. */
export function heartbeat(task: Task, fence: number, now: Date, runLeaseSeconds: number): TransitionPlan {
  requireFence(task, fence, ['RUNNING']);
  return plan(
    'heartbeat',
    task,
    now,
    ['RUNNING'],
    { leaseExpiresAt: iso(now.getTime() + runLeaseSeconds * 1000) },
    [],
    fence,
  );
}

/**
 * RUNNING → SUCCEEDED, only for the current attempt. A cancel requested before the result is
 * recorded wins (CANCELLED, result dropped): the caller was told the task would stop.
 */
export function succeed(task: Task, fence: number, now: Date, result: unknown): TransitionPlan {
  requireFence(task, fence, ['RUNNING']);
  if (task.cancelRequested) return acknowledgeCancel(task, fence, now);
  return plan(
    'succeed',
    task,
    now,
    ['RUNNING'],
    { state: 'SUCCEEDED', finishedAt: iso(now.getTime()), ...(result === undefined ? {} : { result }) },
    ['leaseExpiresAt', 'error'],
    fence,
  );
}

/**
 * The current attempt failed. Back to QUEUED after `backoffMs` while attempts remain and the
 * error is retryable; FAILED otherwise; CANCELLED when a cancel was requested meanwhile.
 * A retry keeps its tier and `agingFrom`, so it does not lose its place to newer work.
 */
export function fail(task: Task, fence: number, now: Date, error: TaskError, backoffMs: number): TransitionPlan {
  requireFence(task, fence, ['RUNNING']);
  return settleFailedAttempt('fail', task, now, error, backoffMs, fence);
}

function settleFailedAttempt(
  name: TransitionName,
  task: Task,
  now: Date,
  error: TaskError,
  backoffMs: number,
  fence?: number,
): TransitionPlan {
  const from: TaskState[] = [task.state];
  if (task.cancelRequested) {
    return plan(
      name,
      task,
      now,
      from,
      { state: 'CANCELLED', finishedAt: iso(now.getTime()), error },
      ['leaseExpiresAt'],
      fence,
    );
  }
  if (error.retryable && task.attempts < task.maxAttempts) {
    return plan(
      name,
      task,
      now,
      from,
      { state: 'QUEUED', runAt: iso(now.getTime() + backoffMs), error },
      ['leaseExpiresAt', 'dispatchedAt'],
      fence,
    );
  }
  return plan(
    name,
    task,
    now,
    from,
    { state: 'FAILED', finishedAt: iso(now.getTime()), error },
    ['leaseExpiresAt'],
    fence,
  );
}

/**
 * Cancel. A waiting task (QUEUED or DISPATCHED but not started) is cancelled at once; a running
 * one is asked to stop (`cancelRequested`), and its worker settles it as CANCELLED.
 * Cancelling a cancelled task is a no-op (returns undefined); a finished one is refused.
 */
export function cancel(task: Task, now: Date): TransitionPlan | undefined {
  if (task.state === 'CANCELLED' || (task.state === 'RUNNING' && task.cancelRequested)) return undefined;
  requireState('cancel', task, ['QUEUED', 'DISPATCHED', 'RUNNING']);
  if (task.state === 'RUNNING') {
    return plan('requestCancel', task, now, ['RUNNING'], { cancelRequested: true });
  }
  // A held task's hold ends with it: nothing waits on its dependencies any more.
  return plan('cancel', task, now, [task.state], { state: 'CANCELLED', finishedAt: iso(now.getTime()) }, [
    'leaseExpiresAt',
    'waitingOn',
  ]);
}

/** RUNNING → CANCELLED: the handler stopped after a cancel request. */
export function acknowledgeCancel(task: Task, fence: number, now: Date): TransitionPlan {
  requireFence(task, fence, ['RUNNING']);
  return plan(
    'cancel',
    task,
    now,
    ['RUNNING'],
    { state: 'CANCELLED', finishedAt: iso(now.getTime()) },
    ['leaseExpiresAt'],
    fence,
  );
}

export const LEASE_EXPIRED_ERROR: TaskError = {
  name: 'LeaseExpired',
  message: 'The worker stopped heartbeating (crash or timeout); the attempt was abandoned',
  retryable: true,
};

/**
 * Recovery of an abandoned attempt whose lease ran out (worker crash, timeout, lost message).
 * DISPATCHED: the worker never started it, so no attempt is burned and it is queued again.
 * RUNNING: the attempt counts as failed and follows the retry rules.
 */
export function expireLease(task: Task, now: Date, backoffMs: number): TransitionPlan {
  requireState('expireLease', task, ['DISPATCHED', 'RUNNING']);
  if (!task.leaseExpiresAt || ms(task.leaseExpiresAt) > now.getTime()) {
    throw new InvalidTransitionError('expireLease', task, `lease runs until ${task.leaseExpiresAt}`);
  }
  if (task.state === 'DISPATCHED') {
    if (task.cancelRequested) {
      return plan('expireLease', task, now, ['DISPATCHED'], { state: 'CANCELLED', finishedAt: iso(now.getTime()) }, [
        'leaseExpiresAt',
      ]);
    }
    return plan('expireLease', task, now, ['DISPATCHED'], { state: 'QUEUED' }, ['leaseExpiresAt', 'dispatchedAt']);
  }
  return settleFailedAttempt('expireLease', task, now, LEASE_EXPIRED_ERROR, backoffMs);
}

export const HOLDER_GONE_ERROR: TaskError = {
  name: 'WorkerGone',
  message: 'The process running the attempt stopped (crash or kill); the attempt was abandoned',
  retryable: true,
};

/**
 * Recovery of the attempt `fence` when the process holding its lease is known to be gone (the
 * local runtime's previous process, found dead at the next start), at once instead of when the
 * lease runs out. The same outcome as expireLease; fenced, so a later attempt is never touched.
 */
export function abandon(task: Task, fence: number, now: Date, backoffMs: number): TransitionPlan {
  requireFence(task, fence, ['DISPATCHED', 'RUNNING']);
  if (task.state === 'DISPATCHED') {
    if (task.cancelRequested) {
      return plan(
        'abandon',
        task,
        now,
        ['DISPATCHED'],
        { state: 'CANCELLED', finishedAt: iso(now.getTime()) },
        ['leaseExpiresAt'],
        fence,
      );
    }
    return plan('abandon', task, now, ['DISPATCHED'], { state: 'QUEUED' }, ['leaseExpiresAt', 'dispatchedAt'], fence);
  }
  return settleFailedAttempt('abandon', task, now, HOLDER_GONE_ERROR, backoffMs, fence);
}

export const DEAD_LETTERED_ERROR: TaskError = {
  name: 'DeadLettered',
  message: 'The worker message was received too many times without the attempt settling',
  retryable: true,
};

/**
 * A worker message reached its dead-letter queue (received `maxReceiveCount` times without being
 * settled: the worker kept crashing or timing out). If that attempt is still the current one,
 * it counts as a failed attempt — also when it never reached RUNNING, so a message that crashes
 * every worker cannot loop forever — and follows the retry rules. A stale dead letter (the task
 * moved on) changes nothing: returns undefined.
 */
export function deadLetter(task: Task, fence: number, now: Date, backoffMs: number): TransitionPlan | undefined {
  if (task.fence !== fence || (task.state !== 'DISPATCHED' && task.state !== 'RUNNING')) return undefined;
  const counted = task.state === 'DISPATCHED' ? { ...task, attempts: task.attempts + 1 } : task;
  const planned = settleFailedAttempt('deadLetter', counted, now, DEAD_LETTERED_ERROR, backoffMs);
  // The precondition is on the stored item (its version), not on the adjusted copy.
  return { ...planned, precondition: { states: [task.state], version: task.version, fence } };
}

/**
 * Operator retry of a FAILED or CANCELLED task: a fresh attempt budget, eligible now. Its age
 * restarts (it is new work as far as fairness is concerned); the last error stays visible.
 * A task cancelled for a failed dependency runs without waiting again: the operator asked for it.
 */
export function retry(task: Task, now: Date): TransitionPlan {
  requireState('retry', task, ['FAILED', 'CANCELLED']);
  const at = iso(now.getTime());
  return plan('retry', task, now, [task.state], { state: 'QUEUED', attempts: 0, runAt: at, agingFrom: at }, [
    'finishedAt',
    'startedAt',
    'result',
    'cancelRequested',
    'leaseExpiresAt',
    'dispatchedAt',
    'waitingOn',
  ]);
}
