/**
 * The local stand-in for the redrive Lambda: long-polls the worker and tier dead-letter queues.
 * A worker dead letter is settled through `redriveDeadLetter` (a retry or a final FAILED); a tier
 * dead letter is drained back to its tier through `redriveTierDeadLetter` while its task is QUEUED.
 * A dead letter is deleted only once handled, so a failure leaves it for the next receive.
 */
import type { QueueClient, WorkerMessage } from '../runtime/adapters/queues.ts';
import type { TaskStore } from '../runtime/adapters/task-store.ts';
import type { SchedulerConfig } from '../runtime/core/config.ts';
import type { TaskLogger } from '../runtime/core/logger.ts';
import { RUNTIMES } from '../runtime/core/task.ts';
import { tierQueuesFor, workerQueue } from '../runtime/infra/resources.ts';
import { isTierMessage, redriveDeadLetter, redriveTierDeadLetter } from '../runtime/worker/redrive.ts';

export function startDeadLetterConsumer(deps: {
  store: TaskStore;
  queues: QueueClient;
  config: SchedulerConfig;
  logger: TaskLogger;
  /** Long-poll wait per receive (default 2 s: a local stop is quick; AWS's event source mapping waits 20 s). */
  waitSeconds?: number;
}): { stop(): Promise<void> } {
  const stopping = new AbortController();
  const dlqIds = [
    ...RUNTIMES.map((runtime) => workerQueue(runtime).deadLetter!.id),
    ...tierQueuesFor(deps.config.scheduler.shards).map((tier) => tier.deadLetter!.id),
  ];
  const loops = dlqIds.map(async (queueId) => {
    while (!stopping.signal.aborted) {
      try {
        const messages = await deps.queues.receive<unknown>(queueId, {
          waitSeconds: deps.waitSeconds ?? 2,
          abortSignal: stopping.signal,
        });
        for (const message of messages) {
          if (isTierMessage(message.body)) {
            const outcome = await redriveTierDeadLetter(deps, message.body);
            deps.logger.warn(`tier dead letter ${outcome}`, { taskId: message.body.taskId, queueId });
          } else {
            const task = await redriveDeadLetter(deps, message.body as WorkerMessage);
            if (task) deps.logger.warn(`dead letter settled: task ${task.state}`, { taskId: task.taskId, queueId });
          }
          await deps.queues.delete(queueId, [message.receiptHandle]);
        }
      } catch (error) {
        if (stopping.signal.aborted) break;
        deps.logger.warn('dead-letter consumer failed; retrying', { queueId, error: String(error) });
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  });
  return {
    async stop() {
      stopping.abort();
      await Promise.all(loops);
    },
  };
}
