/**
 * Dead letters, handled alike by the redrive Lambda, the local runtime and (worker messages) the
 * operator's `redrive` command. A worker message is settled: if its attempt is still current it
 * becomes a retry or a final FAILED; a stale one changes nothing. A tier message is drained back
 * to its tier while its task is QUEUED.
 */
import type { QueueClient, TierMessage, WorkerMessage } from '../adapters/queues.ts';
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

/** What became of a dead-lettered tier message. */
export type TierRedriveOutcome = 'announced' | 'dropped';

/**
 * Drains a dead-lettered tier message back into the scheduler (shared by the redrive Lambda and
 * the local runtime). A consistent read decides: a task still QUEUED is announced again on its
 * tier as a fresh message (receive count 0), so the scheduler sees it at once instead of after
 * the stale sweep; a task that is gone, terminal or no longer waiting needs nothing. The caller
 * deletes the dead letter only after this returns, so a failed announce leaves it to be retried.
 */
export async function redriveTierDeadLetter(
  deps: { store: TaskStore; queues: QueueClient; now?: () => Date },
  message: TierMessage,
): Promise<TierRedriveOutcome> {
  const task = await deps.store.get(message.taskId);
  if (task?.state !== 'QUEUED') return 'dropped';
  await deps.queues.announce([task], deps.now?.() ?? new Date());
  return 'announced';
}

/**
 * A tier message names a task, tenant and tier (and, since issue 11, the QUEUED item's fence);
 * a worker message always carries the task type of its attempt. Both kinds of dead letter reach
 * the same consumers.
 */
export function isTierMessage(body: unknown): body is TierMessage {
  return (
    typeof body === 'object' &&
    body !== null &&
    typeof (body as TierMessage).taskId === 'string' &&
    typeof (body as TierMessage).priority === 'string' &&
    !('type' in body)
  );
}
