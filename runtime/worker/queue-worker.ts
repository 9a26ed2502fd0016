/**
 * A long-polling consumer of one worker queue: the Fargate worker service's main loop, and the
 * local runtime's Lambda and Fargate pools. At most `maxConcurrent` attempts run at once; a
 * message is deleted once its attempt is settled (or skipped), and kept (to come back after its
 * visibility timeout) when the attempt failed for infrastructure reasons.
 *
 * Deletes and completion reports are batched: a settled attempt's delete and report wait at most
 * `batchDelayMs` for up to nine others, so a busy worker makes one DeleteMessageBatch and one
 * SendMessageBatch per ten tasks instead of ten of each. A delete lost to a crash only brings
 * back a message whose task is already settled (dropped on receipt); a lost report only delays
 * the scheduler's freeing of the slot until it reconciles.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CompletionMessage, QueueClient, ReceivedMessage, WorkerMessage } from '../adapters/queues.ts';
import type { TaskLogger } from '../core/logger.ts';
import { MicroBatcher } from './micro-batcher.ts';
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
  readonly logger?: TaskLogger | undefined;
  /** Observer of every settled message (tests, metrics). */
  readonly onOutcome?: ((outcome: AttemptOutcome) => void) | undefined;
  /** Told when the worker goes from idle to running attempts and back (scale-in protection). */
  readonly onBusyChange?: ((busy: boolean) => void) | undefined;
  /** How long a settled attempt's delete and completion report may wait to share a batch call. */
  readonly batchDelayMs?: number;
  /**
   * Most deletes (and reports) per batch call, 1 to 10 (default 10). The local runtime's Lambda
   * pool uses 1, as the event source mapping with batch size 1 does on AWS.
   */
  readonly batchSize?: number;
  /**
   * Runs a message in place of `runAttempt`, with the attempt dependencies this worker built
   * (its completion reports and visibility heartbeats): the local Lambda pool's entry worker,
   * which hands a bigger task to its memory class. Undefined when the message was handed on
   * (nothing settled here; the message is deleted all the same).
   */
  readonly run?: (attempt: AttemptDeps, message: WorkerMessage) => Promise<AttemptOutcome | undefined>;
}

export class QueueWorker {
  readonly #options: QueueWorkerOptions;
  readonly #inFlight = new Set<Promise<void>>();
  #running = false;
  #loop: Promise<void> | undefined;
  #poll = new AbortController();
  #wakeUp: (() => void) | undefined;
  readonly #deletes: MicroBatcher<string>;
  readonly #completions: MicroBatcher<CompletionMessage>;

  constructor(options: QueueWorkerOptions) {
    this.#options = options;
    const { queues, queueId, logger } = options;
    const delayMs = options.batchDelayMs ?? 20;
    const size = options.batchSize ?? 10;
    this.#deletes = new MicroBatcher({
      size,
      delayMs,
      flush: async (handles) => {
        const refused = await queues.delete(queueId, handles);
        // Not deleted: the messages come back after their visibility timeout and are dropped then.
        if (refused.length > 0) logger?.warn('delete refused', { queueId, failures: refused });
      },
      // Not deleted: the messages come back after their visibility timeout and are dropped then.
      onError: (error, handles) =>
        logger?.warn('delete failed', { queueId, count: handles.length, error: String(error) }),
    });
    this.#completions = new MicroBatcher({
      size,
      delayMs,
      flush: (reports) => queues.reportCompletions(reports),
      // Not reported: the scheduler frees the capacity when it next reconciles. A batch member's
      // end it would have counted from the report is counted here instead (else by the sweeper).
      onError: (error, reports) => {
        logger?.warn('completion report failed', { count: reports.length, error: String(error) });
        for (const report of reports) {
          if (report.batchId === undefined) continue;
          void options.attempt.store
            .countBatchEnd(report)
            .catch((countError: unknown) =>
              logger?.warn('batch member not counted yet', { taskId: report.taskId, error: String(countError) }),
            );
        }
      },
    });
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

  /**
   * Stop receiving; wait for running attempts (they settle or their lease lapses). A long poll
   * under way is let end (within `waitSeconds`) and what it brought handed back at once: SQS may
   * have given a message to it already, and aborting it would strand that message, hidden for its
   * visibility. Aborted only if it outlasts its wait by far (the SDK's own timeout bounds it too).
   */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wakeUp?.();
    const lastResort = setTimeout(() => this.#poll.abort(), ((this.#options.waitSeconds ?? 5) + 10) * 1000);
    lastResort.unref();
    await this.#loop;
    clearTimeout(lastResort);
    await Promise.allSettled([...this.#inFlight]);
    await Promise.all([this.#deletes.drain(), this.#completions.drain()]);
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
      if (!this.#running) {
        // Received as the worker was told to stop: start nothing more; the messages go back now.
        await this.#handBack(messages);
        break;
      }
      for (const message of messages) this.#track(this.#handle(message, visibilitySeconds));
    }
  }

  async #handBack(messages: readonly ReceivedMessage<WorkerMessage>[]): Promise<void> {
    if (messages.length === 0) return;
    await this.#options.queues
      .changeVisibility(
        this.#options.queueId,
        messages.map((message) => message.receiptHandle),
        0,
      )
      .catch((error: unknown) =>
        this.#options.logger?.warn('handing messages back failed', {
          queueId: this.#options.queueId,
          error: String(error),
        }),
      );
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
      const attempt: AttemptDeps = {
        ...this.#options.attempt,
        reportCompletion: (report) => this.#completions.add(report),
        // Long tasks keep their message hidden for as long as they heartbeat.
        onHeartbeat: async (task) => {
          await queues.changeVisibility(queueId, [message.receiptHandle], visibilitySeconds);
          await this.#options.attempt.onHeartbeat?.(task);
        },
      };
      const outcome = await (this.#options.run ?? runAttempt)(attempt, message.body);
      this.#deletes.add(message.receiptHandle);
      if (outcome) this.#options.onOutcome?.(outcome);
    } catch (error) {
      // Leave the message: it comes back after its visibility timeout and is tried again.
      logger?.error('attempt failed before settling', { taskId: message.body.taskId, error: String(error) });
    }
  }
}
