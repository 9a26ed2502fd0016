/**
 * Runs one dispatched attempt: the `DISPATCHED → RUNNING → SUCCEEDED | FAILED` writes around a
 * task handler, with a lease kept alive by heartbeats, a timeout, and cancellation through the
 * handler's AbortSignal. The same function serves the Lambda pool, the Fargate service and the
 * local pools.
 *
 * Safe under duplicate delivery: only the delivery that wins the fenced `start` write runs the
 * handler; a duplicate (or a zombie whose lease was lost) finds the fence or state changed and
 * returns `skipped` without running anything.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { CompletionMessage, QueueClient, WorkerMessage } from '../adapters/queues.ts';
import type { TaskStore } from '../adapters/task-store.ts';
import { backoffMs } from '../core/backoff.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { InvalidTransitionError, NonRetryableError, StaleAttemptError, TaskNotFoundError } from '../core/errors.ts';
import { acknowledgeCancel, fail, heartbeat, start, succeed } from '../core/lifecycle.ts';
import type { TaskLogger } from '../core/logger.ts';
import {
  clipText,
  MAX_ERROR_MESSAGE_BYTES,
  MAX_ERROR_NAME_BYTES,
  MAX_RESULT_BYTES,
  storableProblem,
} from '../core/storable.ts';
import { isTerminal, type Task, type TaskError } from '../core/task.ts';
import type { TaskServices, TaskTypeRegistry } from '../task-types/define.ts';
import { startTaskSpan } from '../telemetry/tracing.ts';

export type AttemptOutcome =
  | { readonly kind: 'skipped'; readonly reason: string; readonly task?: Task | undefined }
  | { readonly kind: 'finished'; readonly task: Task };

export interface AttemptDeps {
  readonly store: TaskStore;
  readonly queues: QueueClient;
  readonly registry: TaskTypeRegistry;
  readonly config: SchedulerConfig;
  readonly services?: TaskServices;
  readonly logger?: TaskLogger;
  readonly now?: () => Date;
  readonly random?: () => number;
  /**
   * Takes the completion report instead of sending it at once (the long-polling worker batches
   * reports across attempts). Absent: sent on its own, as the Lambda pool does.
   */
  readonly reportCompletion?: (report: CompletionMessage) => void;
  /**
   * Where the attempt's own lines go (started at debug; finished at info, failed at warn).
   * Default `logger`, which handlers get as `ctx.logger`; the local runtime thins these out
   * under load without touching the handlers' lines.
   */
  readonly lifecycleLogger?: TaskLogger;
  /** Called after each successful heartbeat (the Fargate pool extends message visibility here). */
  readonly onHeartbeat?: (task: Task) => Promise<void>;
  /** How often a running attempt looks for a cancel request (default CANCEL_WATCH_MS). */
  readonly cancelWatchMs?: number;
  /**
   * Time left in the Lambda invocation running the attempt (its context's
   * getRemainingTimeInMillis): the attempt times out ATTEMPT_END_RESERVE_MS before it, so its end
   * is written before Lambda stops the invocation. Absent (a container): only the task's timeout.
   */
  readonly remainingMs?: () => number;
  /** Test hook: called between the steps of an attempt, to inject crashes. */
  readonly faults?: (step: AttemptStep, task: Task) => Promise<void> | void;
}

export type AttemptStep = 'started' | 'handled' | 'settled' | 'announced';

/**
 * A cancel request reaches a running handler's signal within about this long (plus the read's
 * lag on AWS), instead of at the next heartbeat (runLeaseSeconds / 3, 20 s by default). One
 * small eventually consistent read per second of running time; attempts that finish within the
 * first second make none.
 */
export const CANCEL_WATCH_MS = 1000;

/**
 * Kept back from the end of the Lambda invocation running an attempt, to record its end (the
 * fenced write, its retries, the announcement and the completion report). Lambda stops an
 * invocation at its timeout with nothing more run: a task allowed Lambda's whole 900 s, or one
 * started late in an invocation, would have its end unwritten, sit RUNNING until its lease
 * lapsed, and its message come back.
 */
export const ATTEMPT_END_RESERVE_MS = 10_000;

const silentLogger: TaskLogger = { info() {}, warn() {}, error() {} };

/** Reasons an attempt's signal is aborted, so the outcome can tell them apart. */
class AttemptAbort extends Error {
  readonly kind: 'cancelled' | 'timeout' | 'lease_lost' | 'escaped';
  /** For `escaped`: the error the handler left unhandled, and how Node reported it. */
  readonly escaped?: { readonly error: unknown; readonly origin: string };
  constructor(
    cause: 'cancelled' | 'timeout' | 'lease_lost' | 'escaped',
    message: string,
    escaped?: { readonly error: unknown; readonly origin: string },
  ) {
    super(message);
    this.name = cause === 'timeout' ? 'TimeoutError' : 'AbortError';
    this.kind = cause;
    if (escaped) this.escaped = escaped;
  }
}

/** The attempt whose handler started the asynchronous work now running (none outside handlers). */
interface HandlerScope {
  readonly taskId: string;
  /** Fails the attempt with an error its handler left unhandled (no-op once the attempt ended). */
  escape(error: unknown, origin: string): void;
}
const handlerScope = new AsyncLocalStorage<HandlerScope>();

/**
 * For a process's `uncaughtException` listener: an error nothing caught (a throw in a handler's
 * timer callback, a promise it rejected and never awaited) that a task handler's own
 * asynchronous work raised fails the attempt that ran the handler, as a retryable error naming
 * it, instead of taking down the process and every other attempt in it. `origin` is the
 * listener's second argument (`uncaughtException` or `unhandledRejection`). Returns the task id
 * when the error came from a handler's work (its attempt may have ended meanwhile), undefined
 * when it did not: the caller's own crash, to be treated as one.
 */
export function escapedFromHandler(error: unknown, origin: string): string | undefined {
  const scope = handlerScope.getStore();
  scope?.escape(error, origin);
  return scope?.taskId;
}

/**
 * An `uncaughtException` listener for a process that runs task handlers (the local runtime, a
 * worker container): an error from a handler's work fails that attempt (escapedFromHandler) and
 * is reported to `onEscaped`; any other error ends the process as Node would without the listener
 * (its stack on stderr, exit 1), unless the program has listeners of its own, which then decide.
 */
export function handlerErrorListener(
  onEscaped: (taskId: string, origin: string, error: unknown) => void,
): (error: Error, origin: NodeJS.UncaughtExceptionOrigin) => void {
  return (error, origin) => {
    const taskId = escapedFromHandler(error, origin);
    if (taskId !== undefined) return onEscaped(taskId, origin, error);
    if (process.listenerCount('uncaughtException') > 1) return;
    process.stderr.write(`${error instanceof Error ? (error.stack ?? String(error)) : String(error)}\n`);
    process.exit(1);
  };
}

export async function runAttempt(deps: AttemptDeps, message: WorkerMessage): Promise<AttemptOutcome> {
  const now = deps.now ?? (() => new Date());
  const logger = deps.logger ?? silentLogger;
  const lifecycle = deps.lifecycleLogger ?? logger;
  const { store, config } = deps;
  const { runLeaseSeconds } = config.scheduler;

  let task: Task;
  try {
    // The dispatched task travels in the message: start from it instead of reading it again.
    const known =
      message.task?.taskId === message.taskId && message.task.fence === message.fence ? message.task : undefined;
    task = await store.transition(
      message.taskId,
      (current) => start(current, message.fence, now(), runLeaseSeconds),
      known ? { known } : {},
    );
  } catch (error) {
    if (error instanceof StaleAttemptError || error instanceof InvalidTransitionError) {
      // Duplicate delivery, re-dispatched task, or cancelled before start: nothing to run.
      return { kind: 'skipped', reason: error.message, task: error.current };
    }
    if (error instanceof TaskNotFoundError) {
      return { kind: 'skipped', reason: error.message };
    }
    throw error;
  }
  await deps.faults?.('started', task);
  lifecycle.debug?.('task RUNNING', { taskId: task.taskId, attempt: task.attempts, fence: task.fence });

  const controller = new AbortController();
  const abort = (reason: AttemptAbort) => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  const timeoutMs = task.timeoutSeconds * 1000;
  const invocationLeftMs = deps.remainingMs ? Math.max(0, deps.remainingMs() - ATTEMPT_END_RESERVE_MS) : timeoutMs;
  const timeout = setTimeout(
    () =>
      abort(
        new AttemptAbort(
          'timeout',
          invocationLeftMs < timeoutMs
            ? `Task stopped after ${Math.round(invocationLeftMs / 1000)} s, before its timeout of ${task.timeoutSeconds} s: the worker's Lambda invocation ends then (its function timeout)`
            : `Task exceeded its timeout of ${task.timeoutSeconds} s`,
        ),
      ),
    Math.min(timeoutMs, invocationLeftMs),
  );

  // Heartbeats keep the lease (and, on Fargate, the message) alive and carry cancel requests.
  let latest = task;
  const beat = async () => {
    try {
      latest = await store.transition(
        task.taskId,
        (current) => heartbeat(current, message.fence, now(), runLeaseSeconds),
        { known: latest },
      );
      await deps.onHeartbeat?.(latest);
      if (latest.cancelRequested) abort(new AttemptAbort('cancelled', 'The task was cancelled'));
    } catch (error) {
      if (error instanceof StaleAttemptError) {
        abort(new AttemptAbort('lease_lost', 'The attempt lost its lease'));
        return;
      }
      throw error;
    }
  };
  const heartbeatEvery = Math.max(1000, (runLeaseSeconds * 1000) / 3);
  const heartbeatTimer = setInterval(() => {
    beat().catch((error) => logger.warn('heartbeat failed', { taskId: task.taskId, error: String(error) }));
  }, heartbeatEvery);

  // The cancel watch: the task item, read on its own between heartbeats.
  let watching = false;
  const cancelWatch = setInterval(() => {
    if (watching || controller.signal.aborted) return;
    watching = true;
    store
      .isCancelRequested(task.taskId)
      .then((requested) => {
        if (requested) abort(new AttemptAbort('cancelled', 'The task was cancelled'));
      })
      .catch((error) => logger.warn('cancel watch failed', { taskId: task.taskId, error: String(error) }))
      .finally(() => {
        watching = false;
      });
  }, deps.cancelWatchMs ?? CANCEL_WATCH_MS);

  // The attempt's span continues the task's trace; the handler gets its traceparent.
  const span = await startTaskSpan('task.run', task.traceparent, {
    'task.id': task.taskId,
    'task.tenant': task.tenantId,
    'task.type': task.type,
    'task.attempt': task.attempts,
  });
  let result: unknown;
  let failure: unknown;
  let succeeded = false;
  try {
    const definition = deps.registry.get(task.type);
    const payload = parsePayloadOrFailPermanently(deps.registry, task);
    const scope: HandlerScope = {
      taskId: task.taskId,
      escape: (error, origin) =>
        abort(new AttemptAbort('escaped', 'The handler left an error unhandled', { error, origin })),
    };
    result = await raceAbort(
      handlerScope.run(scope, () =>
        definition.handler(payload, {
          taskId: task.taskId,
          tenantId: task.tenantId,
          type: task.type,
          idempotencyKey: task.idempotencyKey ?? task.taskId,
          attempt: task.attempts,
          maxAttempts: task.maxAttempts,
          fence: message.fence,
          ...(span.traceparent ? { traceparent: span.traceparent } : {}),
          signal: controller.signal,
          heartbeat: beat,
          logger,
          services: deps.services ?? {},
        }),
      ),
      controller.signal,
    );
    const problem = storableProblem(result ?? null, MAX_RESULT_BYTES);
    if (problem) throw new NonRetryableError(`The handler's result cannot be stored: it ${problem}`);
    succeeded = true;
  } catch (error) {
    failure = error;
  } finally {
    clearTimeout(timeout);
    clearInterval(heartbeatTimer);
    clearInterval(cancelWatch);
  }
  await deps.faults?.('handled', task);

  const abortReason = controller.signal.reason as AttemptAbort | undefined;
  span.end(
    succeeded
      ? { attributes: { 'task.outcome': 'succeeded' } }
      : { error: abortReason?.message ?? (failure instanceof Error ? failure.message : String(failure)) },
  );
  if (abortReason?.kind === 'lease_lost') {
    // Another attempt owns the task now; writing anything would be a zombie write.
    return { kind: 'skipped', reason: 'lease lost during the attempt' };
  }

  // The result is checked alone before this (MAX_RESULT_BYTES); beside the rest of the item (a
  // payload a type's schema grew, a local outbox of undelivered events) it may still not fit:
  // DynamoDB refuses the write whatever the retry, so the attempt fails instead, for good.
  let resultFits = true;
  const settle = () =>
    store.transition(
      task.taskId,
      (current) => {
        const at = now();
        // A cancel requested before the result is recorded wins over the result.
        if (abortReason?.kind === 'cancelled' || current.cancelRequested) {
          return acknowledgeCancel(current, message.fence, at);
        }
        if (succeeded && resultFits) return succeed(current, message.fence, at, result);
        const taskError = succeeded
          ? recordedError(
              new NonRetryableError(
                `The handler's result cannot be stored: with the rest of the task it is over DynamoDB's 400 KB item (the result alone is ${Buffer.byteLength(JSON.stringify(result ?? null), 'utf8')} bytes)`,
              ),
            )
          : toTaskError(failure, abortReason);
        const delay = backoffMs(current.attempts, config.retry, deps.random);
        return fail(current, message.fence, at, taskError, delay);
      },
      // A batch member's end rides in the completion report below, and the scheduler counts a
      // round's ends of one counter shard in one write instead of this write's own count.
      { known: latest, batchEndReported: true },
    );
  let settled: Task;
  try {
    try {
      settled = await settle();
    } catch (error) {
      if (!succeeded || !isItemTooLarge(error)) throw error;
      resultFits = false;
      settled = await settle();
    }
  } catch (error) {
    if (error instanceof StaleAttemptError) return { kind: 'skipped', reason: error.message };
    throw error;
  }
  await deps.faults?.('settled', settled);
  (settled.state === 'FAILED' ? lifecycle.warn : lifecycle.info).call(lifecycle, `task ${settled.state}`, {
    taskId: settled.taskId,
    type: settled.type,
    attempt: settled.attempts,
    ...(settled.error && settled.state !== 'SUCCEEDED' ? { error: settled.error.message } : {}),
  });

  if (settled.state === 'QUEUED') await deps.queues.announce([settled], now());
  await deps.faults?.('announced', settled);
  const completion: CompletionMessage = {
    taskId: settled.taskId,
    fence: message.fence,
    tenantId: settled.tenantId,
    state: settled.state,
    ...(settled.batchId !== undefined && isTerminal(settled.state)
      ? { batchId: settled.batchId, batchIndex: settled.batchIndex ?? 0 }
      : {}),
  };
  // Best effort: if this is lost the scheduler frees the capacity when it next reconciles.
  if (deps.reportCompletion) deps.reportCompletion(completion);
  else {
    await deps.queues.reportCompletions([completion]).catch(async (error) => {
      logger.warn('completion report failed', { taskId: settled.taskId, error: String(error) });
      // The scheduler will not count this member's end from a report: count it here (else the
      // batch sweeper would, at its next look).
      if (completion.batchId !== undefined) await store.countBatchEnd(settled);
    });
  }
  return { kind: 'finished', task: settled };
}

function parsePayloadOrFailPermanently(registry: TaskTypeRegistry, task: Task): unknown {
  try {
    return registry.parsePayload(task.type, task.payload);
  } catch (error) {
    // Accepted at submit but invalid now (the type's schema changed): retrying cannot help.
    throw new NonRetryableError(error instanceof Error ? error.message : String(error), { cause: error });
  }
}

/** Settle as soon as the signal aborts, even if the handler ignores its signal. */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function toTaskError(failure: unknown, abortReason: AttemptAbort | undefined): TaskError {
  if (abortReason?.kind === 'timeout') return { name: 'TimeoutError', message: abortReason.message, retryable: true };
  if (abortReason?.kind === 'escaped' && abortReason.escaped) {
    const { error, origin } = abortReason.escaped;
    const how = origin === 'unhandledRejection' ? 'an unhandled rejection' : 'an uncaught exception';
    const what = error instanceof Error ? error.message : printable(error);
    return recorded(
      error instanceof Error ? error.name : 'Error',
      `The handler left ${how}: ${what}`,
      !(error instanceof NonRetryableError),
    );
  }
  return recordedError(failure);
}

/** A handler's error may be any size: what is recorded is bounded, so the end write always fits. */
function recorded(name: unknown, message: unknown, retryable: boolean): TaskError {
  return {
    name: clipText(printable(name), MAX_ERROR_NAME_BYTES),
    message: clipText(printable(message), MAX_ERROR_MESSAGE_BYTES),
    retryable,
  };
}

function recordedError(failure: unknown): TaskError {
  if (failure instanceof NonRetryableError) return recorded(failure.name, failure.message, false);
  if (failure instanceof Error) return recorded(failure.name, failure.message, true);
  return recorded('Error', failure, true);
}

/** DynamoDB's refusal of a write whose item would be over 400 KB (PutItem's and UpdateItem's wording). */
function isItemTooLarge(error: unknown): boolean {
  return error instanceof Error && error.name === 'ValidationException' && /item size/i.test(error.message);
}

/** String(value), or a placeholder for a value that cannot be made one (`Object.create(null)`). */
function printable(value: unknown): string {
  try {
    // A thrown plain object (some libraries reject with one) says more as JSON than as
    // "[object Object]"; one JSON cannot write (a cycle, a BigInt) falls back to String.
    if (typeof value === 'object' && value !== null && String(value) === '[object Object]') {
      try {
        const json = JSON.stringify(value);
        if (typeof json === 'string') return json;
      } catch {}
    }
    return String(value);
  } catch {
    return '(a value that cannot be converted to a string)';
  }
}
