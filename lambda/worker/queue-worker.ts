/**
 * A long-polling consumer of one worker queue: the Fargate worker service's main loop, and the
 * local runtime's Lambda and Fargate pools. At most `maxConcurrent` attempts run at once; a
 * message is deleted once its attempt is settled (or skipped), and kept (to come back after its
 * visibility timeout) when the attempt failed for infrastructure reasons.
 *
 * Deletes are batched: a settled message waits at most `deleteDelayMs` for up to nine others, so
 * a busy worker makes one DeleteMessageBatch call per ten tasks instead of ten. A delete lost to
 * a crash only brings back a message whose task is already settled; it is dropped on receipt.
 */
import type { QueueClient, ReceivedMessage, WorkerMessage } from '../adapters/queues.ts';
import type { TaskLogger } from '../task-types/define.ts';
import { type AttemptDeps, type AttemptOutcome, runAttempt } from './run-attempt.ts';

export interface QueueWorkerOptions {
  readonly queues: QueueClient;
  readonly queueId: string;
  readonly maxConcurrent: number;
  readonly attempt: AttemptDeps;
  /** Long-poll wait per receive (SQS allows up to 20 s). */
  readonly waitSeconds?: number;
  /** Visibility given at receive and renewed on every heartbeat. */
  readonly visibilitySeconds?: number;
  readonly logger?: TaskLogger;
  /** Observer of every settled message (tests, metrics). */
  readonly onOutcome?: (outcome: AttemptOutcome) => void;
  /** Told when the worker goes from idle to running attempts and back (scale-in protection). */
  readonly onBusyChange?: (busy: boolean) => void;
  /** How long a settled message may wait for others to share its delete call. */
  readonly deleteDelayMs?: number;
}

/** SQS's batch limit. */
const DELETE_BATCH_SIZE = 10;

export class QueueWorker {
  readonly #options: QueueWorkerOptions;
  readonly #inFlight = new Set<Promise<void>>();
  #running = false;
  #loop: Promise<void> | undefined;
  #poll = new AbortController();
  #wakeUp: (() => void) | undefined;
  #pendingDeletes: string[] = [];
  #deleteTimer: NodeJS.Timeout | undefined;
  readonly #deleting = new Set<Promise<void>>();

  constructor(options: QueueWorkerOptions) {
    this.#options = options;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#poll = new AbortController();
    this.#loop = this.#run();
  }

  /** Stop receiving; wait for running attempts (they settle or their lease lapses). */
  async stop(): Promise<void> {
    this.#running = false;
    this.#poll.abort();
    this.#wakeUp?.();
    await this.#loop;
    await Promise.allSettled([...this.#inFlight]);
    this.#flushDeletes();
    await Promise.allSettled([...this.#deleting]);
  }

  async #run(): Promise<void> {
    const { queues, queueId, maxConcurrent, logger } = this.#options;
    const visibilitySeconds = this.#options.visibilitySeconds ?? 60;
    while (this.#running) {
      const free = maxConcurrent - this.#inFlight.size;
      if (free <= 0) {
        // Wait for a slot rather than receive messages we could not start.
        await new Promise<void>((resolve) => {
          this.#wakeUp = resolve;
        });
        continue;
      }
      let messages: ReceivedMessage<WorkerMessage>[] = [];
      try {
        messages = await queues.receive<WorkerMessage>(queueId, {
          max: Math.min(10, free),
          waitSeconds: this.#options.waitSeconds ?? 5,
          visibilitySeconds,
          abortSignal: this.#poll.signal,
        });
      } catch (error) {
        if (!this.#running) break;
        logger?.warn('receive failed', { queueId, error: String(error) });
        await sleep(500);
        continue;
      }
      for (const message of messages) this.#track(this.#handle(message, visibilitySeconds));
    }
  }

  #track(work: Promise<void>): void {
    if (this.#inFlight.size === 0) this.#options.onBusyChange?.(true);
    this.#inFlight.add(work);
    work.finally(() => {
      this.#inFlight.delete(work);
      if (this.#inFlight.size === 0) this.#options.onBusyChange?.(false);
      this.#wakeUp?.();
      this.#wakeUp = undefined;
    });
  }

  async #handle(message: ReceivedMessage<WorkerMessage>, visibilitySeconds: number): Promise<void> {
    const { queues, queueId, logger } = this.#options;
    try {
      const outcome = await runAttempt(
        {
          ...this.#options.attempt,
          // Long tasks keep their message hidden for as long as they heartbeat.
          onHeartbeat: async (task) => {
            await queues.changeVisibility(queueId, [message.receiptHandle], visibilitySeconds);
            await this.#options.attempt.onHeartbeat?.(task);
          },
        },
        message.body,
      );
      this.#deleteSoon(message.receiptHandle);
      this.#options.onOutcome?.(outcome);
    } catch (error) {
      // Leave the message: it comes back after its visibility timeout and is tried again.
      logger?.error('attempt failed before settling', { taskId: message.body.taskId, error: String(error) });
    }
  }

  #deleteSoon(receiptHandle: string): void {
    this.#pendingDeletes.push(receiptHandle);
    if (this.#pendingDeletes.length >= DELETE_BATCH_SIZE) this.#flushDeletes();
    else this.#deleteTimer ??= setTimeout(() => this.#flushDeletes(), this.#options.deleteDelayMs ?? 20);
  }

  #flushDeletes(): void {
    clearTimeout(this.#deleteTimer);
    this.#deleteTimer = undefined;
    if (this.#pendingDeletes.length === 0) return;
    const handles = this.#pendingDeletes;
    this.#pendingDeletes = [];
    const { queues, queueId, logger } = this.#options;
    const deleting = queues
      .delete(queueId, handles)
      // Not deleted: the messages come back after their visibility timeout and are dropped then.
      .catch((error) => logger?.warn('delete failed', { queueId, count: handles.length, error: String(error) }))
      .finally(() => this.#deleting.delete(deleting));
    this.#deleting.add(deleting);
  }
}

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));
