/**
 * The Lambda pool on one machine, as deployed (runtime/worker/lambda-classes.ts): an entry
 * worker of the smallest memory class consumes `worker-lambda` one message at a time, as the
 * event source mapping with batch size 1 does, runs what fits its class and hands a bigger task
 * to its class, which runs it in this process as the asynchronously invoked class function would
 * (its completion reported on its own, its message already deleted by the entry).
 *
 * Memory is not enforced here (one Node process); the class an attempt ran in is reported with
 * its outcome, so tests and benchmarks see the placement AWS would make.
 */
import type { QueueClient } from '../runtime/adapters/queues.ts';
import type { TaskLogger } from '../runtime/core/logger.ts';
import type { Runtime } from '../runtime/core/task.ts';
import { LAMBDA_ENTRY_CLASS, workerQueue } from '../runtime/infra/resources.ts';
import { runLambdaWorkerMessage } from '../runtime/worker/lambda-classes.ts';
import { QueueWorker } from '../runtime/worker/queue-worker.ts';
import { type AttemptDeps, type AttemptOutcome, runAttempt } from '../runtime/worker/run-attempt.ts';

/** Where an attempt ran: its pool, and on the Lambda pool the memory class of the function. */
export interface WorkerPlacement {
  readonly pool: Runtime;
  readonly memoryMiB?: number;
}

export type OutcomeObserver = (outcome: AttemptOutcome, where: WorkerPlacement) => void;

export interface LocalLambdaPoolOptions {
  readonly queues: QueueClient;
  /** `pools.lambda.concurrency`: the scheduler keeps the pool within it, whatever the class. */
  readonly concurrency: number;
  readonly attempt: AttemptDeps;
  readonly logger?: TaskLogger | undefined;
  readonly onOutcome?: OutcomeObserver | undefined;
}

export class LocalLambdaPool {
  readonly entry: QueueWorker;
  readonly #options: LocalLambdaPoolOptions;
  /** Attempts running in a bigger class, started by the entry's handoff. */
  readonly #handedOff = new Set<Promise<void>>();

  constructor(options: LocalLambdaPoolOptions) {
    this.#options = options;
    const own = LAMBDA_ENTRY_CLASS.memoryMiB;
    this.entry = new QueueWorker({
      queues: options.queues,
      queueId: workerQueue('lambda').id,
      maxConcurrent: options.concurrency,
      attempt: options.attempt,
      waitSeconds: 1,
      // One invocation per message, as the event source mapping (batch size 1) runs it on AWS:
      // a delete and a completion report per task, so counted calls match a deployment's.
      batchSize: 1,
      logger: options.logger,
      run: async (attempt, message) => {
        const outcome = await runLambdaWorkerMessage(
          { attempt, ownMemoryMiB: own, handOff: async (memoryMiB, handed) => this.#handOff(memoryMiB, handed) },
          message,
        );
        if (outcome.kind === 'handed-off') return undefined;
        options.onOutcome?.(outcome, { pool: 'lambda', memoryMiB: own });
        return outcome;
      },
    });
  }

  /** Attempts running in a bigger class right now. */
  get handedOff(): number {
    return this.#handedOff.size;
  }

  start(): void {
    this.entry.start();
  }

  async stop(): Promise<void> {
    await this.entry.stop();
    await Promise.allSettled([...this.#handedOff]);
  }

  /** What the class function's asynchronous invoke does: run the message there, on its own. */
  #handOff(memoryMiB: number, message: Parameters<typeof runAttempt>[1]): void {
    const { attempt, logger, onOutcome } = this.#options;
    const run = runAttempt(attempt, message).then(
      (outcome) => onOutcome?.(outcome, { pool: 'lambda', memoryMiB }),
      // As a class function's failed invocation: the task's dispatch lease runs out and the
      // reconciler dispatches it again.
      (error: unknown) =>
        logger?.error('attempt failed before settling', { taskId: message.taskId, memoryMiB, error: String(error) }),
    );
    this.#handedOff.add(run);
    void run.finally(() => this.#handedOff.delete(run));
  }
}
