/**
 * The local stand-in for the redrive Lambda: long-polls the worker dead-letter queues and
 * settles each dead letter through the same `redriveDeadLetter` (a retry or a final FAILED).
 */
import type { QueueClient, WorkerMessage } from '../adapters/queues.ts';
import type { TaskStore } from '../adapters/task-store.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { RUNTIMES } from '../core/task.ts';
import { workerQueue } from '../infra/resources.ts';
import type { TaskLogger } from '../task-types/define.ts';
import { redriveDeadLetter } from '../worker/redrive.ts';

export function startDeadLetterConsumer(deps: {
  store: TaskStore;
  queues: QueueClient;
  config: SchedulerConfig;
  logger: TaskLogger;
}): { stop(): Promise<void> } {
  const stopping = new AbortController();
  const dlqIds = RUNTIMES.map((runtime) => workerQueue(runtime).deadLetter!.id);
  const loops = dlqIds.map(async (queueId) => {
    while (!stopping.signal.aborted) {
      try {
        const messages = await deps.queues.receive<WorkerMessage>(queueId, {
          waitSeconds: 2,
          abortSignal: stopping.signal,
        });
        for (const message of messages) {
          const task = await redriveDeadLetter(deps, message.body);
          if (task) deps.logger.warn(`dead letter settled: task ${task.state}`, { taskId: task.taskId, queueId });
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
