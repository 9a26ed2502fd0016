/**
 * Dead letters, handled alike by the redrive Lambda (a scheduled drain), the local runtime and
 * (worker messages) the operator's `redrive` command. A worker message is settled: if its attempt is still current it
 * becomes a retry or a final FAILED; a stale one changes nothing. A tier message is drained back
 * to its tier while its task is QUEUED.
 */
import type { QueueClient, TierMessage, WorkerMessage } from '../adapters/queues.ts';
import type { TaskStore } from '../adapters/task-store.ts';
import { backoffMs } from '../core/backoff.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { deadLetter } from '../core/lifecycle.ts';
import type { TaskLogger } from '../core/logger.ts';
import type { Task } from '../core/task.ts';
import { tierQueuesFor, WORKER_QUEUES } from '../infra/resources.ts';

export async function redriveDeadLetter(
  deps: { store: TaskStore; queues: QueueClient; config: SchedulerConfig; now?: (() => Date) | undefined },
  message: WorkerMessage,
): Promise<Task | undefined> {
  const now = deps.now?.() ?? new Date();
  const before = await deps.store.get(message.taskId);
  if (!before) return undefined;
  const task = await deps.store.transition(
    message.taskId,
    // Backed off as the failed attempt it counts as: a RUNNING one is counted already, a
    // DISPATCHED one is counted by deadLetter.
    (current) =>
      deadLetter(
        current,
        message.fence,
        now,
        backoffMs(current.state === 'DISPATCHED' ? current.attempts + 1 : current.attempts, deps.config.retry),
      ),
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
 * the registry backstop; a task that is gone, terminal or no longer waiting needs nothing. The caller
 * deletes the dead letter only after this returns, so a failed announce leaves it to be retried.
 */
export async function redriveTierDeadLetter(
  deps: { store: TaskStore; queues: QueueClient; now?: (() => Date) | undefined },
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

/** What became of one dead letter of either kind. */
export type DeadLetterOutcome = 'retried' | 'failed' | 'cancelled' | 'stale' | TierRedriveOutcome;

type RedriveDeps = { store: TaskStore; queues: QueueClient; config: SchedulerConfig; now?: (() => Date) | undefined };

/** Decide and act on one dead letter, worker or tier; the caller deletes it afterwards. */
export async function handleDeadLetter(deps: RedriveDeps, body: unknown): Promise<DeadLetterOutcome> {
  if (isTierMessage(body)) return redriveTierDeadLetter(deps, body);
  const task = await redriveDeadLetter(deps, body as WorkerMessage);
  if (!task) return 'stale';
  return task.state === 'QUEUED' ? 'retried' : task.state === 'FAILED' ? 'failed' : 'cancelled';
}

/** The dead-letter queues the drain empties: every worker queue's and every shard's tier queues'. */
export const drainedDeadLetterQueues = (shards: number): readonly string[] =>
  [...WORKER_QUEUES, ...tierQueuesFor(shards)].map((queue) => queue.deadLetter!.id);
/** The same with one scheduler shard. */
export const DRAINED_DEAD_LETTER_QUEUES: readonly string[] = drainedDeadLetterQueues(1);

export interface DrainOptions {
  readonly queueIds?: readonly string[];
  /** How long a received dead letter stays hidden (default DRAIN_VISIBILITY_SECONDS). */
  readonly visibilitySeconds?: number;
  /** Asked before each receive: stop receiving (a Lambda near its timeout). */
  readonly outOfTime?: () => boolean;
  /** Told how many dead letters a receive returned (the DeadLettered metric). */
  readonly onReceived?: (queueId: string, count: number) => void;
  readonly logger?: TaskLogger;
}

export interface DrainReport {
  /** Dead letters received, handled or not. */
  readonly received: number;
  readonly outcomes: Partial<Record<DeadLetterOutcome, number>>;
  /** Dead letters whose handling failed: left in their queue for the next drain. */
  readonly errors: number;
}

/**
 * Empty the dead-letter queues once: what the scheduled redrive Lambda runs every few minutes
 * (no event source mapping polls them while idle). Each queue is read until a receive brings
 * nothing new; a dead letter is deleted only once handled, and one whose handling fails is left
 * (hidden by its receive's visibility, and not handled twice in one run) for the next drain. Long
 * polls of 1 s: a short poll samples only some SQS servers and can answer empty while messages wait.
 */
export async function drainDeadLetters(deps: RedriveDeps, options: DrainOptions = {}): Promise<DrainReport> {
  const outcomes: Partial<Record<DeadLetterOutcome, number>> = {};
  let received = 0;
  let errors = 0;
  const drainQueue = async (queueId: string) => {
    // A dead letter left unhandled must not loop within one run should it reappear (short visibility).
    const seen = new Set<string>();
    while (!options.outOfTime?.()) {
      const messages = (
        await deps.queues.receive<unknown>(queueId, {
          waitSeconds: 1,
          visibilitySeconds: options.visibilitySeconds ?? DRAIN_VISIBILITY_SECONDS,
        })
      ).filter((message) => !seen.has(message.messageId));
      if (messages.length === 0) return;
      for (const message of messages) seen.add(message.messageId);
      received += messages.length;
      options.onReceived?.(queueId, messages.length);
      const handled: string[] = [];
      for (const message of messages) {
        try {
          const outcome = await handleDeadLetter(deps, message.body);
          outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
          handled.push(message.receiptHandle);
        } catch (error) {
          errors++;
          options.logger?.warn('dead letter not handled; left for the next drain', {
            queueId,
            messageId: message.messageId,
            error: String(error),
          });
        }
      }
      const refused = await deps.queues.delete(queueId, handled);
      // Handled but not deleted: it comes back and is handled again, which is idempotent.
      if (refused.length > 0) options.logger?.warn('dead letter delete refused', { queueId, failures: refused });
    }
  };
  await Promise.all((options.queueIds ?? DRAINED_DEAD_LETTER_QUEUES).map(drainQueue));
  return { received, outcomes, errors };
}

/** How long a drained dead letter stays hidden: longer than a drain runs (the Lambda's timeout). */
export const DRAIN_VISIBILITY_SECONDS = 120;
