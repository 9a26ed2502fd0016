/**
 * Typed errors. Each carries the context a caller needs to act (the current item on a refused
 * write, the offending field on bad input). The domain knows codes, not HTTP: the API edge
 * (runtime/api/errors.ts, httpStatusOf) turns each error class into a status and its
 * `{ error: { code, message, details } }` body.
 */
import type { Task, TaskState } from './task.ts';

/** What a conditional write requires of the stored item. */
export interface TransitionPrecondition {
  readonly states: readonly TaskState[];
  readonly version?: number;
  readonly fence?: number | undefined;
  /** A dispatch's scheduler epoch: the stored one must be absent or no newer. */
  readonly schedulerEpoch?: number;
}

export class SchedulerError extends Error {
  /** Stable machine-readable code, e.g. "task_not_found". */
  readonly code: string;
  readonly details?: unknown;

  constructor(code: string, message: string, options?: { details?: unknown; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SchedulerError';
    this.code = code;
    this.details = options?.details;
  }
}

export class ConfigError extends SchedulerError {
  constructor(message: string, details: { problems: string[] }) {
    super('invalid_config', message, { details });
    this.name = 'ConfigError';
  }
}

/** The caller sent something we refuse. Nothing was written. */
export class ValidationError extends SchedulerError {
  constructor(code: string, message: string, details?: unknown) {
    super(code, message, { details });
    this.name = 'ValidationError';
  }
}

export class TaskNotFoundError extends SchedulerError {
  readonly taskId: string;
  constructor(taskId: string) {
    super('task_not_found', `No task with id ${taskId}`, { details: { taskId } });
    this.name = 'TaskNotFoundError';
    this.taskId = taskId;
  }
}

export class UnknownTaskTypeError extends ValidationError {
  constructor(type: string, known: readonly string[]) {
    super('unknown_task_type', `Unknown task type "${type}"`, { type, known });
    this.name = 'UnknownTaskTypeError';
  }
}

/** The same idempotency key was reused with a different request body. */
export class IdempotencyConflictError extends SchedulerError {
  readonly existing: Task;
  constructor(
    existing: Task,
    described: { message: string; details: unknown } = {
      message: `Idempotency key "${existing.idempotencyKey}" was already used for a different request (task ${existing.taskId})`,
      details: { taskId: existing.taskId },
    },
  ) {
    super('idempotency_key_reused', described.message, { details: described.details });
    this.name = 'IdempotencyConflictError';
    this.existing = existing;
  }
}

/**
 * A transition's precondition did not hold: the task is not in a state that allows it.
 * Carries the current item so the caller can decide (e.g. a duplicate delivery finds the task
 * already DISPATCHED and simply drops the message).
 */
export class InvalidTransitionError extends SchedulerError {
  readonly transition: string;
  readonly current: Task;
  constructor(transition: string, current: Task, reason: string) {
    super('invalid_state', `Cannot ${transition} task ${current.taskId} in state ${current.state}: ${reason}`, {
      details: { taskId: current.taskId, state: current.state, transition },
    });
    this.name = 'InvalidTransitionError';
    this.transition = transition;
    this.current = current;
  }
}

/**
 * A worker's write was fenced off: its attempt is no longer the current one (its lease was
 * lost and the task was re-dispatched, cancelled or finished). The worker must stop.
 */
export class StaleAttemptError extends SchedulerError {
  readonly taskId: string;
  readonly fence: number;
  readonly current: Task | undefined;
  constructor(taskId: string, fence: number, current: Task | undefined) {
    super(
      'stale_attempt',
      `Attempt with fence ${fence} of task ${taskId} is no longer current` +
        (current ? ` (now ${current.state}, fence ${current.fence})` : ' (task gone)'),
      { details: { taskId, fence, currentFence: current?.fence, currentState: current?.state } },
    );
    this.name = 'StaleAttemptError';
    this.taskId = taskId;
    this.fence = fence;
    this.current = current;
  }
}

/**
 * The store refused a conditional write because the item changed between our read and our
 * write (another writer won). Carries the item as it is now.
 */
export class ConcurrentUpdateError extends SchedulerError {
  readonly taskId: string;
  readonly expected: TransitionPrecondition;
  readonly current: Task | undefined;
  constructor(taskId: string, expected: TransitionPrecondition, current: Task | undefined) {
    super('concurrent_update', `Task ${taskId} changed concurrently; expected ${JSON.stringify(expected)}`, {
      details: { taskId, currentState: current?.state, currentVersion: current?.version },
    });
    this.name = 'ConcurrentUpdateError';
    this.taskId = taskId;
    this.expected = expected;
    this.current = current;
  }
}

/**
 * A dispatch write was refused because a scheduler holding a newer lease (epoch) has written the
 * task: this scheduler was deposed and must stop.
 */
export class SchedulerFencedError extends SchedulerError {
  readonly taskId: string;
  readonly epoch: number;
  readonly currentEpoch: number;
  constructor(taskId: string, epoch: number, currentEpoch: number) {
    super(
      'scheduler_fenced',
      `Scheduler epoch ${epoch} is deposed: task ${taskId} was written by epoch ${currentEpoch}`,
      { details: { taskId, epoch, currentEpoch } },
    );
    this.name = 'SchedulerFencedError';
    this.taskId = taskId;
    this.epoch = epoch;
    this.currentEpoch = currentEpoch;
  }
}

/** Marks a NonRetryableError whichever copy of this package made it (Symbol.for is process-wide). */
const NON_RETRYABLE = Symbol.for('serverless-task-scheduler.NonRetryableError');

/**
 * Thrown by a task handler to fail the task without further attempts. Recognised by `instanceof`
 * across copies of this package: a task module imports the installed package while `npm start`
 * runs this repository's sources, and a bundle may carry a second copy; a plain class check would
 * take their errors for retryable ones.
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
    Object.defineProperty(this, NON_RETRYABLE, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    // A subclass keeps the ordinary prototype check for itself.
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class instanceof was asked about (a subclass or this one)
    if (this !== NonRetryableError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[NON_RETRYABLE] === true;
  }
}

/** A webhook did not take an event (not a 2xx, or no answer): the delivery is retried. */
export class WebhookDeliveryError extends SchedulerError {
  readonly url: string;
  readonly status: number | undefined;
  constructor(url: string, eventId: string, status: number | undefined, cause?: unknown) {
    super(
      'webhook_delivery_failed',
      status === undefined
        ? `Webhook ${url} did not answer for event ${eventId}`
        : `Webhook ${url} answered ${status} for event ${eventId}`,
      { details: { url, eventId, status }, cause },
    );
    this.name = 'WebhookDeliveryError';
    this.url = url;
    this.status = status;
  }
}
