/**
 * Settles a dead-lettered worker message (shared by the redrive Lambda, the local runtime and
 * the operator's `redrive` command): if its attempt is still current, it becomes a retry or a
 * final FAILED; a stale one changes nothing.
 */
import type { QueueClient, WorkerMessage } from '../adapters/queues.ts';
import type { TaskStore } from '../adapters/task-store.ts';
import { backoffMs } from '../core/backoff.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { deadLetter } from '../core/lifecycle.ts';
import type { Task } from '../core/task.ts';

export async function redriveDeadLetter(
  deps: { store: TaskStore; queues: QueueClient; config: SchedulerConfig; now?: () => Date },
  message: WorkerMessage,
): Promise<Task | undefined> {
  const now = deps.now?.() ?? new Date();
  const before = await deps.store.get(message.taskId);
  if (!before) return undefined;
  const task = await deps.store.transition(
    message.taskId,
    (current) => deadLetter(current, message.fence, now, backoffMs(current.attempts + 1, deps.config.retry)),
    { known: before },
  );
  if (task.version === before.version) return undefined; // stale: the task had moved on
  if (task.state === 'QUEUED') await deps.queues.announce([task], now);
  await deps.queues.reportCompletions([
    { taskId: task.taskId, fence: message.fence, tenantId: task.tenantId, state: task.state },
  ]);
  return task;
}
