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
import type { FlowStore, KeyHolders } from '../adapters/flow-store.ts';
import type { QueueClient, WorkerMessage } from '../adapters/queues.ts';
import type { TaskStore } from '../adapters/task-store.ts';
import { isThrottling } from '../adapters/throttling.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { ConcurrentUpdateError, InvalidTransitionError } from '../core/errors.ts';
import type { QueuedRef } from '../core/intake/index.ts';
import { dispatch } from '../core/lifecycle.ts';
import { DEFAULT_CONCURRENCY_LIMIT } from '../core/policy/constraints.ts';
import type { SchedulingPolicy } from '../core/policy/index.ts';
import { ACTIVE_STATES, type Task } from '../core/task.ts';
import { startRateOf } from '../core/tenant-settings.ts';
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
  /** The durable flow-control records (start-rate buckets, concurrency keys). */
  readonly flow?: FlowStore | undefined;
  /**
   * One consistent read of the settings version after the round's picks: true when settings
   * moved since the engine last took them (it has taken them again), and the round starts nothing.
   */
  readonly settingsMoved?: (() => Promise<boolean>) | undefined;
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
  if (ready.length > 0 && (await settingsMovedOrReturn(deps, ready))) return 0;
  const admitted = await admitFlow(deps, ready, nowMs);

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
    admitted.map(({ task }) => store.apply(dispatch(task, now, config.scheduler.dispatchLeaseSeconds, lease?.token))),
  );
  const messages: WorkerMessage[] = [];
  const releases: Promise<void>[] = [];
  const runtimes: Task['runtime'][] = [];
  let dispatched = 0;
  let failure: unknown;
  outcomes.forEach((outcome, i) => {
    const { ref, task: read } = admitted[i]!;
    if (outcome.status === 'rejected') {
      policy.release(ref.taskId);
      // Not dispatched (or not known to be): its place in its key goes back, unless the write landed.
      if (
        read.concurrencyKey !== undefined &&
        deps.flow &&
        !(outcome.reason instanceof Error && isUnknown(outcome.reason))
      ) {
        releases.push(deps.flow.releaseKey(read.tenantId, read.concurrencyKey, read.taskId, read.fence + 1));
      }
      const error = outcome.reason;
      if (error instanceof ConcurrentUpdateError && error.current?.state === 'QUEUED') {
        // Changed but still waiting (cancelled and retried, say): wait again as it is now.
        returnAs(intake, ref, error.current);
      } else if (error instanceof ConcurrentUpdateError || error instanceof InvalidTransitionError) {
        // Someone else moved it (cancelled, or dispatched by another scheduler): let go.
        intake.windows.dropped(ref.taskId, ref.tenantId, ref.priority);
      } else if (isThrottling(error)) {
        // Its tenant's index partitions are hot (a throttled GSI write refuses the table write,
        // and the SDK's retries did not get through): that tenant-tier backs off alone and the
        // task waits in the index; the round goes on, and nothing is thrown for it (a thrown
        // error ends the tick and hands the lease back, stalling every tenant).
        intake.throttled(ref.tenantId, ref.priority, error);
        intake.returned(toRef(read));
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
  await Promise.all([
    ...[...byRuntime].map(([runtime, batch]) => queues.sendToWorkers(runtime, batch)),
    ...releases.map((release) => release.catch(() => undefined)),
  ]);
  if (failure !== undefined) throw failure;
  return dispatched;
}

/**
 * Pauses bind from the moment the PUT answers: after the picks (and their consistent reads), one
 * consistent read of the settings version. The round's `now`, its dispatches' recorded time, was
 * taken before that read; a PUT that answered before the read is seen by it. So a task is
 * recorded as dispatched after a pause answered only if the engine knew of the pause. When the
 * settings moved, every pick waits again and the round starts nothing (the next one picks under
 * the new settings).
 */
async function settingsMovedOrReturn(
  deps: DispatchDeps,
  ready: readonly { ref: QueuedRef; task: Task }[],
): Promise<boolean> {
  if (!deps.settingsMoved) return false;
  let moved: boolean;
  try {
    moved = await deps.settingsMoved();
  } catch (error) {
    giveBack(deps, ready);
    throw error;
  }
  if (moved) giveBack(deps, ready);
  return moved;
}

function giveBack(deps: DispatchDeps, picks: readonly { ref: QueuedRef; task: Task }[]): void {
  for (const { ref, task } of picks) {
    deps.policy.release(ref.taskId);
    returnAs(deps.intake, ref, task);
  }
}

/**
 * The constraint units on the items just read (the index carried neither type nor key): a paused
 * tenant or type, then the start-rate bucket (one conditional write per tenant, the arbiter),
 * then each key's holders (a conditional write per task). A task held waits again with what its
 * item said, so the engine parks it or holds its tenant: the round goes on with the others.
 */
async function admitFlow(
  deps: DispatchDeps,
  ready: readonly { ref: QueuedRef; task: Task }[],
  nowMs: number,
): Promise<{ ref: QueuedRef; task: Task }[]> {
  const { policy } = deps;
  const hold = (pick: { ref: QueuedRef; task: Task }) => {
    policy.release(pick.ref.taskId);
    returnAs(deps.intake, pick.ref, pick.task);
  };
  const open = ready.filter((pick) => {
    const held = policy.tenantSettings(pick.task.tenantId).paused === true || policy.pausedTypes.has(pick.task.type);
    if (held) hold(pick);
    return !held;
  });
  const flow = deps.flow;
  if (!flow) return open;
  // Start rate: the tenant's picks in pick order, as many as its bucket grants.
  const byTenant = Map.groupBy(open, (pick) => pick.task.tenantId);
  const granted: { ref: QueuedRef; task: Task }[] = [];
  await Promise.all(
    [...byTenant].map(async ([tenantId, picks]) => {
      const rate = startRateOf(policy.tenantSettings(tenantId));
      if (!rate) {
        granted.push(...picks);
        return;
      }
      let count = 0;
      try {
        const grant = await flow.grant(tenantId, rate, nowMs, picks.length);
        policy.syncRate(tenantId, grant.tatUs);
        count = grant.granted;
      } finally {
        granted.push(...picks.slice(0, count));
        for (const pick of picks.slice(count)) hold(pick);
      }
    }),
  );
  // Concurrency keys: one key's picks one after another (each sees the last), keys side by side.
  const keyed = Map.groupBy(
    granted.filter((pick) => pick.task.concurrencyKey !== undefined),
    (pick) => JSON.stringify([pick.task.tenantId, pick.task.concurrencyKey]),
  );
  const admitted = granted.filter((pick) => pick.task.concurrencyKey === undefined);
  await Promise.all(
    [...keyed.values()].map(async (picks) => {
      for (const [i, pick] of picks.entries()) {
        const { task } = pick;
        const key = task.concurrencyKey as string;
        let acquired = false;
        try {
          const outcome = await flow.acquireKey(
            task.tenantId,
            key,
            task.concurrencyLimit ?? DEFAULT_CONCURRENCY_LIMIT,
            task.taskId,
            task.fence + 1,
            nowMs,
            (holders, atMs) => staleHolders(deps.store, holders, atMs),
          );
          acquired = outcome.acquired;
        } catch (error) {
          for (const rest of picks.slice(i)) hold(rest);
          throw error;
        }
        if (acquired) admitted.push(pick);
        else {
          policy.keyBlocked(task.tenantId, key, nowMs + KEY_RECHECK_MS);
          hold(pick);
        }
      }
    }),
  );
  return admitted;
}

/** A write refused for a known reason (the task moved on) rather than unanswered. */
const isUnknown = (error: Error): boolean =>
  !(error instanceof ConcurrentUpdateError || error instanceof InvalidTransitionError);

/** A key whose holders refused a start is asked again after this long (or when one of its tasks ends). */
export const KEY_RECHECK_MS = 5_000;
/**
 * A holder whose task does not show its attempt yet is kept this long: its dispatch write may
 * still be landing (a scheduler dispatches only with its lease's 10 s margin left, and a stalled
 * call lands within the lease fence's 12 s window).
 */
export const KEY_HOLDER_GRACE_MS = 60_000;

/** The holders whose attempt is over, from a consistent read of their tasks. */
async function staleHolders(store: TaskStore, holders: KeyHolders, nowMs: number): Promise<string[]> {
  const ids = Object.keys(holders);
  const tasks = await store.getMany(ids);
  return ids.filter((taskId) => {
    const holder = holders[taskId]!;
    const task = tasks.get(taskId);
    if (!task) return nowMs - holder.sinceMs > KEY_HOLDER_GRACE_MS;
    if (task.fence > holder.fence) return true;
    if (task.fence === holder.fence) return !ACTIVE_STATES.includes(task.state);
    // Its dispatch (to this fence) has not landed: it may still.
    return nowMs - holder.sinceMs > KEY_HOLDER_GRACE_MS;
  });
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
