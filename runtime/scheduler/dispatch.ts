/**
 * A dispatch round: every task the policy lets start now is re-read consistently (the intake's
 * refs come from a lagging index or a message, never the truth), written `QUEUED → DISPATCHED`
 * with one conditional write each, and handed to its pool's worker queue.
 *
 *   policy.next ─▶ intake.taken ─▶ BatchGet (consistent) ─▶ conditional dispatch ─▶ worker queues
 *                                  └ not QUEUED: dropped; changed but waiting: back in the window
 *
 * Writes are idempotent on taskId + fence, so a duplicate ref, a replayed round or a second
 * scheduler cannot dispatch a task twice.
 */
import type { QueueClient, WorkerMessage } from '../adapters/queues.ts';
import type { TaskStore } from '../adapters/task-store.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { ConcurrentUpdateError, InvalidTransitionError } from '../core/errors.ts';
import type { QueuedRef } from '../core/intake/index.ts';
import { dispatch } from '../core/lifecycle.ts';
import type { SchedulingPolicy } from '../core/policy/index.ts';
import type { Task } from '../core/task.ts';
import { type Intake, toRef } from './intake.ts';

/**
 * A lease holder dispatches only while its lease, by its own clock, has more than this left: a
 * successor takes over no sooner than the lease's expiry (plus the settle time), so a dispatch
 * write issued inside the margin has the margin to land before anyone else dispatches.
 */
export const DEFAULT_DISPATCH_MARGIN_MS = 10_000;

/** The scheduler lease this scheduler dispatches under (see scheduler-loop.ts). */
export interface HeldLease {
  /** The lease token: the epoch written with, and checked by, every dispatch. */
  readonly token: number;
  /** When the lease runs out, by this host's clock. */
  readonly expiresAtMs: number;
  /** Dispatching stops this long before `expiresAtMs`. */
  readonly marginMs?: number;
}

export interface DispatchDeps {
  readonly store: TaskStore;
  readonly queues: QueueClient;
  readonly config: SchedulerConfig;
  readonly policy: SchedulingPolicy;
  readonly intake: Intake;
  /** Counts a dispatched attempt against capacity (taskId → fence). */
  /** `queued` is the item as it was read, still QUEUED (when it started waiting: its spans). */
  readonly onDispatched: (task: Task, nowMs: number, queued: Task) => void;
  /** True once the scheduler is stopping: nothing more is dispatched (checked again before the writes). */
  readonly stopped?: () => boolean;
}

/** Whether a lease (if any) leaves time to dispatch at `nowMs`. */
export function mayDispatch(lease: HeldLease | undefined, nowMs: number): boolean {
  return !lease || nowMs < lease.expiresAtMs - (lease.marginMs ?? DEFAULT_DISPATCH_MARGIN_MS);
}

/** Ask the policy for every task that can start now, and dispatch them together. */
export async function dispatchReady(deps: DispatchDeps, now: Date, lease: HeldLease | undefined): Promise<number> {
  const nowMs = now.getTime();
  if (!mayDispatch(lease, nowMs) || deps.stopped?.()) return 0;
  const { store, queues, config, policy, intake } = deps;
  const picked: QueuedRef[] = [];
  for (let candidate = policy.next(nowMs); candidate; candidate = policy.next(nowMs)) {
    const ref = intake.windows.taken(candidate.taskId, candidate.tenantId, candidate.priority);
    if (ref) picked.push(ref);
    else policy.release(candidate.taskId);
  }
  if (picked.length === 0) return 0;

  // The truth: one consistent read of every picked task (the index and messages may be stale).
  const current = await readOrReturn(deps, picked);
  const ready: { ref: QueuedRef; task: Task }[] = [];
  for (const ref of picked) {
    const task = current.get(ref.taskId);
    if (task?.state !== 'QUEUED') {
      policy.release(ref.taskId);
      intake.windows.dropped(ref.taskId, ref.tenantId, ref.priority);
    } else if (task.fence !== ref.fence || Date.parse(task.runAt) > nowMs || task.priority !== ref.priority) {
      // Waiting, but not as the ref said (retried, delayed): wait again as the item says.
      policy.release(ref.taskId);
      returnAs(intake, ref, task);
    } else {
      ready.push({ ref, task });
    }
  }

  if (deps.stopped?.()) {
    // Shutdown began during the read: the picks wait in their windows, written nothing.
    for (const { ref } of ready) {
      policy.release(ref.taskId);
      intake.returned(ref);
    }
    return 0;
  }

  // Every write is waited for, failed or not: one that lands after another failed must still
  // be counted and get its worker message.
  const outcomes = await Promise.allSettled(
    ready.map(({ task }) => store.apply(dispatch(task, now, config.scheduler.dispatchLeaseSeconds, lease?.token))),
  );
  const messages: WorkerMessage[] = [];
  const runtimes: Task['runtime'][] = [];
  let dispatched = 0;
  let failure: unknown;
  outcomes.forEach((outcome, i) => {
    const { ref, task: read } = ready[i]!;
    if (outcome.status === 'rejected') {
      policy.release(ref.taskId);
      const error = outcome.reason;
      if (error instanceof ConcurrentUpdateError && error.current?.state === 'QUEUED') {
        // Changed but still waiting (cancelled and retried, say): wait again as it is now.
        returnAs(intake, ref, error.current);
      } else if (error instanceof ConcurrentUpdateError || error instanceof InvalidTransitionError) {
        // Someone else moved it (cancelled, or dispatched by another scheduler): let go.
        intake.windows.dropped(ref.taskId, ref.tenantId, ref.priority);
      } else {
        // Not written (or not known to be): keep it waiting; the tick reports the error.
        intake.returned(toRef(read));
        failure ??= error;
      }
      return;
    }
    const task = outcome.value;
    intake.windows.dispatched(ref, read.fence, nowMs);
    deps.onDispatched(task, nowMs, read);
    messages.push({ taskId: task.taskId, fence: task.fence, tenantId: task.tenantId, type: task.type, task });
    runtimes.push(task.runtime);
    dispatched++;
  });
  const byRuntime = Map.groupBy(messages, (_message, i) => runtimes[i]!);
  await Promise.all([...byRuntime].map(([runtime, batch]) => queues.sendToWorkers(runtime, batch)));
  if (failure !== undefined) throw failure;
  return dispatched;
}

/** The picked tasks as stored; on a failed read every pick waits again and the error is thrown. */
async function readOrReturn(deps: DispatchDeps, picked: readonly QueuedRef[]): Promise<Map<string, Task>> {
  try {
    return await deps.store.getMany(picked.map((ref) => ref.taskId));
  } catch (error) {
    for (const ref of picked) {
      deps.policy.release(ref.taskId);
      deps.intake.returned(ref);
    }
    throw error;
  }
}

/** Back into its window as the item says, or out of it when the item moved to another tier. */
function returnAs(intake: Intake, ref: QueuedRef, task: Task): void {
  if (task.priority !== ref.priority || task.tenantId !== ref.tenantId) {
    intake.windows.dropped(ref.taskId, ref.tenantId, ref.priority);
    return;
  }
  intake.returned(toRef(task));
}
