/**
 * A dispatch round's stages (the tick composes them, scheduler.ts): every task the policy lets
 * start now is re-read consistently (the intake's refs come from a lagging index or a message,
 * never the truth), written `QUEUED → DISPATCHED` with one conditional write each, and handed to
 * its pool's worker queue.
 *
 *   pick: reservations.pickAll ─▶ BatchGet (consistent) ─▶ settings version ─▶ flow admission
 *   writeDispatches: the round's page on the lease ledger ─▶ conditional dispatch writes, all side by side
 *   sendWorkerMessages: worker queues, a batch per runtime side by side
 *   Each pick ends committed (written) or aborted (reservation.ts): not QUEUED: dropped;
 *   changed, held or failed: back in its window.
 *
 * Writes are idempotent on taskId + fence, so a duplicate ref, a replayed round or a second
 * scheduler cannot dispatch a task twice.
 */
import type { KeyHolders } from '../adapters/flow-store.ts';
import type { WorkerMessage } from '../adapters/queues.ts';
import type { LeasedTaskRef } from '../adapters/task-store.ts';
import { isThrottling } from '../adapters/throttling.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { ConcurrentUpdateError, InvalidTransitionError } from '../core/errors.ts';
import { dispatch, type TransitionPlan } from '../core/lifecycle.ts';
import { DEFAULT_CONCURRENCY_LIMIT } from '../core/policy/constraints.ts';
import type { SchedulingPolicy } from '../core/policy/index.ts';
import { ACTIVE_STATES, type Task } from '../core/task.ts';
import { startRateOf } from '../core/tenant-settings.ts';
import type { LeaseLedger } from './lease-ledger.ts';
import type { FlowControl, MessageQueues, TaskRepository } from './ports.ts';
import type { Reservation, Reservations } from './reservation.ts';

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
  readonly store: Pick<TaskRepository, 'getMany' | 'apply'>;
  /** The durable flow-control records (start-rate buckets, concurrency keys). */
  readonly flow?: FlowControl | undefined;
  /**
   * One consistent read of the settings version after the round's picks: true when settings
   * moved since the engine last took them (it has taken them again), and the round starts nothing.
   */
  readonly settingsMoved?: (() => Promise<boolean>) | undefined;
  readonly config: SchedulerConfig;
  /** The engine's settings and flow-control mirrors (its picks come through `reservations`). */
  readonly policy: SchedulingPolicy;
  /** Picks reserve their task's capacity and window entry; each is committed or aborted here. */
  readonly reservations: Reservations;
  /** True once the scheduler is stopping: nothing more is dispatched (checked again before the writes). */
  readonly stopped?: () => boolean;
  /** Where attempts are recorded before their writes (absent: a store that lists leases itself, in tests). */
  readonly ledger?: Pick<LeaseLedger, 'record' | 'settle'> | undefined;
}

/** Whether a lease (if any) leaves time to dispatch at `nowMs`. */
export function mayDispatch(lease: HeldLease | undefined, nowMs: number): boolean {
  return !lease || nowMs < lease.expiresAtMs - (lease.marginMs ?? DEFAULT_DISPATCH_MARGIN_MS);
}

/**
 * Stage "pick": reserve every task the engine lets start now, re-read them consistently (the
 * index and messages may be stale), check the settings did not move, and admit them through
 * flow control. Returns the reservations to write: none when stopping or out of lease time.
 * When it throws, every pick of the round has been aborted (it waits again).
 */
export async function pick(deps: DispatchDeps, now: Date, lease: HeldLease | undefined): Promise<Reservation[]> {
  const nowMs = now.getTime();
  if (!mayDispatch(lease, nowMs) || deps.stopped?.()) return [];
  const picked = deps.reservations.pickAll(nowMs);
  if (picked.length === 0) return [];
  try {
    const ready = await readPicked(deps, picked, nowMs);
    if (ready.length === 0 || (await settingsMoved(deps, ready))) return [];
    const admitted = await admitFlow(deps, ready, nowMs);
    if (deps.stopped?.()) {
      // Shutdown began during the reads: the picks wait in their windows, written nothing.
      for (const reservation of admitted) reservation.abort('stopping');
      return [];
    }
    return admitted;
  } catch (error) {
    for (const reservation of picked) reservation.abort('round-failed');
    throw error;
  }
}

/** The picks as stored: those still QUEUED as their ref said go on; the others are let go. */
async function readPicked(deps: DispatchDeps, picked: readonly Reservation[], nowMs: number): Promise<Reservation[]> {
  let current: Map<string, Task>;
  try {
    current = await deps.store.getMany(picked.map(({ ref }) => ref.taskId));
  } catch (error) {
    for (const reservation of picked) reservation.abort('read-failed');
    throw error;
  }
  const ready: Reservation[] = [];
  for (const reservation of picked) {
    const { ref } = reservation;
    const task = current.get(ref.taskId);
    if (task?.state !== 'QUEUED') reservation.abort('gone');
    else if (task.fence !== ref.fence || Date.parse(task.runAt) > nowMs || task.priority !== ref.priority) {
      // Waiting, but not as the ref said (retried, delayed): wait again as the item says.
      reservation.abort('changed', { item: task });
    } else {
      reservation.read(task);
      ready.push(reservation);
    }
  }
  return ready;
}

/** A dispatched attempt as the lease ledger lists it. */
export const leasedRefOf = (task: Task): LeasedTaskRef => ({
  taskId: task.taskId,
  tenantId: task.tenantId,
  priority: task.priority,
  runtime: task.runtime,
  resources: task.resources,
  fence: task.fence,
  runAt: task.runAt,
  agingFrom: task.agingFrom,
  submittedAt: task.submittedAt,
  leasedAt: task.dispatchedAt ?? task.runAt,
});

/**
 * Stage "dispatch writes": the round's attempts recorded on the lease ledger first (a successor
 * must find every one that may land: a page that cannot be stored fails the round, nothing
 * written), then one conditional write per reservation, all side by side, and every one waited
 * for, failed or not (one that lands after another failed must still be counted and get its
 * worker message). Each reservation is committed or aborted by its outcome; an attempt refused
 * is settled on the ledger at once (one that failed unanswered may have landed: the reconciler
 * settles it from the item). Returns the attempts written and the first failure the tick must
 * report (a refusal or a throttle is none).
 */
export async function writeDispatches(
  deps: Pick<DispatchDeps, 'store' | 'config' | 'ledger'>,
  admitted: readonly Reservation[],
  now: Date,
  lease: HeldLease | undefined,
): Promise<{ written: Task[]; failure: unknown }> {
  const nowMs = now.getTime();
  // A plan refused here (not dispatchable as read) is refused like its write would be, below.
  const plans = admitted.map((reservation): TransitionPlan | Error => {
    try {
      return dispatch(reservation.item, now, deps.config.scheduler.dispatchLeaseSeconds, lease?.token);
    } catch (error) {
      return error as Error;
    }
  });
  if (deps.ledger) {
    try {
      const attempts = plans.filter((plan): plan is TransitionPlan => !(plan instanceof Error));
      if (attempts.length > 0)
        await deps.ledger.record(
          attempts.map((plan) => leasedRefOf(plan.next)),
          nowMs,
        );
    } catch (error) {
      for (const reservation of admitted) reservation.abort('round-failed', { error });
      return { written: [], failure: error };
    }
  }
  const outcomes = await Promise.allSettled(
    admitted.map((reservation, i) => {
      const plan = plans[i]!;
      if (plan instanceof Error) return Promise.reject(plan);
      reservation.writing();
      return deps.store.apply(plan);
    }),
  );
  const written: Task[] = [];
  let failure: unknown;
  outcomes.forEach((outcome, i) => {
    const reservation = admitted[i]!;
    if (outcome.status === 'fulfilled') {
      reservation.commit(outcome.value, nowMs);
      written.push(outcome.value);
      return;
    }
    const error = outcome.reason;
    if (error instanceof ConcurrentUpdateError || error instanceof InvalidTransitionError) {
      // Someone else moved it: it waits again as it is now (cancelled and retried, say), or
      // leaves its window (cancelled, or dispatched by another scheduler).
      const item = error instanceof ConcurrentUpdateError ? error.current : undefined;
      reservation.abort('refused', { item });
      const plan = plans[i]!;
      if (!(plan instanceof Error)) deps.ledger?.settle(plan.next.taskId, plan.next.fence);
    } else if (isThrottling(error)) {
      // Its tenant's index partitions are hot (a throttled GSI write refuses the table write,
      // and the SDK's retries did not get through): that tenant-tier backs off alone and the
      // task waits in the index; the round goes on, and nothing is thrown for it (a thrown
      // error ends the tick and hands the lease back, stalling every tenant).
      reservation.abort('throttled', { error });
    } else {
      // Not written (or not known to be): keep it waiting; the tick reports the error.
      reservation.abort('write-failed', { error });
      failure ??= error;
    }
  });
  return { written, failure };
}

/** Stage "sends": each written attempt's worker message, a batch per runtime, side by side. */
export async function sendWorkerMessages(
  queues: Pick<MessageQueues, 'sendToWorkers'>,
  written: readonly Task[],
): Promise<void> {
  const byRuntime = Map.groupBy(written, (task) => task.runtime);
  await Promise.all(
    [...byRuntime].map(([runtime, tasks]) =>
      queues.sendToWorkers(
        runtime,
        tasks.map(
          (task): WorkerMessage => ({
            taskId: task.taskId,
            fence: task.fence,
            tenantId: task.tenantId,
            type: task.type,
            task,
          }),
        ),
      ),
    ),
  );
}

/**
 * Pauses bind from the moment the PUT answers: after the picks (and their consistent reads), one
 * consistent read of the settings version. The round's `now`, its dispatches' recorded time, was
 * taken before that read; a PUT that answered before the read is seen by it. So a task is
 * recorded as dispatched after a pause answered only if the engine knew of the pause. When the
 * settings moved, every pick waits again and the round starts nothing (the next one picks under
 * the new settings). A failed read throws: the round aborts its picks.
 */
async function settingsMoved(deps: DispatchDeps, ready: readonly Reservation[]): Promise<boolean> {
  if (!deps.settingsMoved) return false;
  const moved = await deps.settingsMoved();
  if (moved) for (const reservation of ready) reservation.abort('settings-moved');
  return moved;
}

/**
 * The constraint units on the items just read (the index carried neither type nor key): a paused
 * tenant or type, then the start-rate bucket (one conditional write per tenant, the arbiter),
 * then each key's holders (a conditional write per task). A task held waits again with what its
 * item said, so the engine parks it or holds its tenant: the round goes on with the others. The
 * calls of a stage are all waited for before a failure is thrown, so every place a key granted
 * is known to its reservation (and handed back when the round aborts it).
 */
async function admitFlow(deps: DispatchDeps, ready: readonly Reservation[], nowMs: number): Promise<Reservation[]> {
  const { policy } = deps;
  const open = ready.filter((reservation) => {
    const { item } = reservation;
    const held = policy.tenantSettings(item.tenantId).paused === true || policy.pausedTypes.has(item.type);
    if (held) reservation.abort('paused');
    return !held;
  });
  const flow = deps.flow;
  if (!flow) return open;
  // Start rate: the tenant's picks in pick order, as many as its bucket grants.
  const byTenant = Map.groupBy(open, ({ item }) => item.tenantId);
  const granted: Reservation[] = [];
  await allSettledOrThrow(
    [...byTenant].map(async ([tenantId, picks]) => {
      const rate = startRateOf(policy.tenantSettings(tenantId));
      if (!rate) {
        granted.push(...picks);
        return;
      }
      const grant = await flow.grant(tenantId, rate, nowMs, picks.length);
      policy.syncRate(tenantId, grant.tatUs);
      granted.push(...picks.slice(0, grant.granted));
      for (const reservation of picks.slice(grant.granted)) reservation.abort('rate');
    }),
  );
  // Concurrency keys: one key's picks one after another (each sees the last), keys side by side.
  const keyed = Map.groupBy(
    granted.filter(({ item }) => item.concurrencyKey !== undefined),
    ({ item }) => JSON.stringify([item.tenantId, item.concurrencyKey]),
  );
  const admitted = granted.filter(({ item }) => item.concurrencyKey === undefined);
  await allSettledOrThrow(
    [...keyed.values()].map(async (picks) => {
      for (const reservation of picks) {
        const { item } = reservation;
        const key = item.concurrencyKey as string;
        const outcome = await flow.acquireKey(
          item.tenantId,
          key,
          item.concurrencyLimit ?? DEFAULT_CONCURRENCY_LIMIT,
          item.taskId,
          reservation.fence,
          nowMs,
          (holders, atMs) => staleHolders(deps.store, holders, atMs),
        );
        if (outcome.acquired) {
          reservation.keyTaken();
          admitted.push(reservation);
        } else {
          policy.keyBlocked(item.tenantId, key, nowMs + KEY_RECHECK_MS);
          reservation.abort('key-full');
        }
      }
    }),
  );
  return admitted;
}

/** Wait for every call, then throw the first failure (none is left running behind the round). */
async function allSettledOrThrow(calls: readonly Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(calls)).find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
}

/** A key whose holders refused a start is asked again after this long (or when one of its tasks ends). */
export const KEY_RECHECK_MS = 5_000;
/**
 * A holder whose task does not show its attempt yet is kept this long: its dispatch write may
 * still be landing (a scheduler dispatches only with its lease's 10 s margin left, and a stalled
 * call lands within the lease fence's 12 s window).
 */
export const KEY_HOLDER_GRACE_MS = 60_000;

/** The holders whose attempt is over, from a consistent read of their tasks. */
async function staleHolders(
  store: Pick<TaskRepository, 'getMany'>,
  holders: KeyHolders,
  nowMs: number,
): Promise<string[]> {
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
