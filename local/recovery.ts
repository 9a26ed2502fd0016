/**
 * A start after an unclean stop (kill -9, a crash, a second Ctrl-C) takes back at once the
 * attempts the previous process held, instead of leaving them DISPATCHED or RUNNING, holding
 * their tenants' quota, until their leases run out (a minute for a running task by default).
 *
 * Why every leased task of the store is the dead process's: the embedded DynamoDB lives in
 * DATA_DIR, and DATA_DIR/runtime.pid lets one process at a time open it (data-dir-lock.ts).
 * The lock was found left by a process that is gone, and this process has started neither
 * scheduler nor worker yet, so no live process holds a lease on this store. (A store at an
 * external endpoint, shared by other processes, proves nothing of the kind: this runs only on
 * the embedded one.)
 *
 * Each recovery is one fenced conditional write (`abandon`): the attempt the consistent read
 * showed, still in that state and version; anything that moved meanwhile is left alone.
 */

import type { QueueClient } from '../runtime/adapters/queues.ts';
import type { TaskStore } from '../runtime/adapters/task-store.ts';
import { backoffMs } from '../runtime/core/backoff.ts';
import type { SchedulerConfig } from '../runtime/core/config.ts';
import { ConcurrentUpdateError, InvalidTransitionError, StaleAttemptError } from '../runtime/core/errors.ts';
import { abandon } from '../runtime/core/lifecycle.ts';
import { ACTIVE_STATES, type Task } from '../runtime/core/task.ts';

export interface RecoveryDeps {
  readonly store: TaskStore;
  readonly queues: QueueClient;
  readonly config: SchedulerConfig;
  readonly now: () => Date;
  readonly random?: () => number;
}

export interface RecoveryResult {
  /** Attempts taken back, by the state they went to (QUEUED again, FAILED, CANCELLED). */
  readonly recovered: Task[];
}

/** Take back every attempt leased in the store; call only when its holder is known to be gone. */
export async function recoverAbandonedAttempts(deps: RecoveryDeps): Promise<RecoveryResult> {
  const { store } = deps;
  const ids: string[] = [];
  for await (const ref of store.listLeased()) ids.push(ref.taskId);
  const leased = await store.getMany(ids);
  const recovered: Task[] = [];
  for (const task of leased.values()) {
    if (!ACTIVE_STATES.includes(task.state)) continue;
    try {
      const after = await store.transition(
        task.taskId,
        (current) =>
          abandon(current, task.fence, deps.now(), backoffMs(current.attempts, deps.config.retry, deps.random)),
        { known: task },
      );
      recovered.push(after);
    } catch (error) {
      // Moved on meanwhile (another attempt, or settled): not ours to touch.
      if (
        !(
          error instanceof StaleAttemptError ||
          error instanceof InvalidTransitionError ||
          error instanceof ConcurrentUpdateError
        )
      ) {
        throw error;
      }
    }
  }
  const requeued = recovered.filter((task) => task.state === 'QUEUED');
  if (requeued.length > 0) await deps.queues.announce(requeued, deps.now());
  return { recovered };
}
