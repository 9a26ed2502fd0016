/**
 * Reconciliation: the safety net under every crash window. It finds, from DynamoDB,
 * - attempts whose lease ran out (worker crash, timeout, lost worker message) and puts them back
 *   through the scheduler (`expireLease`), keeping their tier and age;
 * - capacity the scheduler still counts for tasks that are no longer active (a lost completion
 *   report), and frees it;
 * - QUEUED tasks nobody will read (no tier message, tenant-tier not registered: a crash between
 *   the write and the send at submit, or index lag at a deregistration), one page of
 *   `byTenantQueue` a pass (backstop.ts), and announces them again.
 * Each fix is a conditional write or an idempotent message, so running it twice is harmless.
 */
import type { LeasedTaskRef } from '../adapters/task-store.ts';
import { backoffMs } from '../core/backoff.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { ConcurrentUpdateError, InvalidTransitionError } from '../core/errors.ts';
import { expireLease } from '../core/lifecycle.ts';
import type { TaskLogger } from '../core/logger.ts';
import { ownsTenant, type ShardScope, SINGLE_SHARD } from '../core/shards.ts';
import { ACTIVE_STATES, type Task } from '../core/task.ts';
import { type IntakeView, QueueBackstop } from './backstop.ts';
import { type LeaseLedger, type LedgerRef, listedLeases, PAGE_LANDING_GRACE_MS } from './lease-ledger.ts';
import type { Announcer, MessageQueues, SchedulerState, TaskRepository } from './ports.ts';

export { type IntakeView, NO_INTAKE } from './backstop.ts';

export interface ReconcilerDeps {
  readonly store: TaskRepository;
  /** Where the backstop's cursor is kept across schedulers. */
  readonly control: Pick<SchedulerState, 'getSweepMarks' | 'putSweepMarks'>;
  readonly queues: Announcer & Pick<MessageQueues, 'attributes'>;
  readonly config: SchedulerConfig;
  readonly now: () => Date;
  readonly random?: (() => number) | undefined;
  readonly logger?: TaskLogger | undefined;
  /** How often the lease sweep runs. */
  readonly everyMs?: number;
  /** A QUEUED task of an unregistered tenant-tier due this long ago is announced again (backstop.ts). */
  readonly orphanAfterMs?: number;
  /** Entries of `byTenantQueue` the backstop reads per pass. */
  readonly backstopPage?: number;
  /** The scheduler's side of the lease ledger (absent: the store lists leased tasks itself). */
  readonly ledger?: LeaseLedger | undefined;
  /** Whose tenants' leased and queued tasks this reconciler looks after; one shard by default. */
  readonly shard?: ShardScope | undefined;
}

export interface ReconcileResult {
  /** Active tasks the scheduler may stop counting: a consistent read shows their attempt over. */
  readonly released: string[];
  /**
   * Active tasks (by a consistent read) the scheduler does not count: dispatched by a predecessor
   * whose writes its index read at takeover did not show yet. It counts them from now on.
   */
  readonly adopted?: Task[];
  readonly expired: number;
  readonly reannounced: number;
  /** QUEUED tasks the backstop found with no registered tenant-tier and overdue (normally 0). */
  readonly unregisteredQueued: number;
}

/** GSIs lag the table by about a second; allow far more before trusting an absence. */
const INDEX_LAG_GRACE_MS = 15_000;
/** A leased item whose last read showed its lease holding is read again after this at the latest. */
export const LEASE_REREAD_MS = 30_000;

export class Reconciler {
  readonly #deps: ReconcilerDeps;
  readonly #backstop: QueueBackstop;
  #lastRunMs = 0;
  /**
   * What the last consistent read showed of each leased attempt (`taskId#fence`): when its lease
   * ends and when it was read. A lease of the same attempt only moves later while it is renewed,
   * except once, at start (the dispatch lease is replaced by the shorter run lease), so an item
   * is read again when its known lease has passed or LEASE_REREAD_MS after the last read,
   * whichever is first: a long task costs a read every LEASE_REREAD_MS, not every pass.
   */
  readonly #leaseSeen = new Map<string, { readonly untilMs: number; readonly readMs: number }>();

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
    this.#backstop = new QueueBackstop({
      store: deps.store,
      control: deps.control,
      queues: deps.queues,
      now: deps.now,
      logger: deps.logger,
      pageSize: deps.backstopPage,
      orphanAfterMs: deps.orphanAfterMs,
      shard: deps.shard,
    });
  }

  async maybeRun(
    intake: IntakeView,
    active: ReadonlyMap<string, { fence: number; sinceMs: number }>,
  ): Promise<ReconcileResult> {
    const nowMs = this.#deps.now().getTime();
    if (nowMs - this.#lastRunMs < (this.#deps.everyMs ?? 5_000)) {
      return { released: [], adopted: [], expired: 0, reannounced: 0, unregisteredQueued: 0 };
    }
    this.#lastRunMs = nowMs;
    return this.run(intake, active);
  }

  async run(
    intake: IntakeView,
    active: ReadonlyMap<string, { fence: number; sinceMs: number }>,
  ): Promise<ReconcileResult> {
    const { store } = this.#deps;
    const now = this.#deps.now();
    const nowMs = now.getTime();
    const released: string[] = [];
    const requeued: Task[] = [];
    let expired = 0;

    // The ledger (and older versions' indexes) list the leased tasks without their state or lease
    // (start and renewals write neither), so the items, never more than the pools hold, are read
    // consistently for those: each once its known lease has passed, or LEASE_REREAD_MS after its
    // last read (#leaseSeen).
    const { ledger } = this.#deps;
    const listed = await listedLeases({ store, ledger }, nowMs);
    const stillActive = new Map<string, LeasedTaskRef>();
    // Every shard's leased tasks are listed together: each looks after its own tenants'.
    const shard = this.#deps.shard ?? SINGLE_SHARD;
    for (const ref of listed.latest.values()) if (ownsTenant(shard, ref.tenantId)) stillActive.set(ref.taskId, ref);
    const seenKey = (ref: { taskId: string; fence: number }) => `${ref.taskId}#${ref.fence}`;
    const toRead = [...stillActive.values()].filter((ref) => {
      // Adoption needs the item's state, whatever its lease.
      if (!active.has(ref.taskId) && !intake.holds(ref)) return true;
      const seen = this.#leaseSeen.get(seenKey(ref));
      return seen === undefined || seen.untilMs <= nowMs || nowMs - seen.readMs >= LEASE_REREAD_MS;
    });
    // Attempts on pages this scheduler keeps that are not its tenants' latest (an earlier fence,
    // another shard's tenant): settled from their items, read each pass (they are few).
    const toSettle = listed.onLedger.filter((ref) => ref.tracked && stillActive.get(ref.taskId)?.fence !== ref.fence);
    const readIds = new Set([...toRead, ...toSettle].map((ref) => ref.taskId));
    const items = await store.getMany([...readIds]);
    // The lease sweep looks at its own tenants' latest attempts only.
    const ownIds = new Set(toRead.map((ref) => ref.taskId));
    const leased = new Map([...items].filter(([taskId]) => ownIds.has(taskId)));
    const listedKeys = new Set([...stillActive.values()].map(seenKey));
    for (const key of this.#leaseSeen.keys()) if (!listedKeys.has(key)) this.#leaseSeen.delete(key);
    for (const task of leased.values()) {
      if (ACTIVE_STATES.includes(task.state) && task.leaseExpiresAt) {
        this.#leaseSeen.set(seenKey(task), { untilMs: Date.parse(task.leaseExpiresAt), readMs: nowMs });
      }
      if (!ACTIVE_STATES.includes(task.state) || !task.leaseExpiresAt || Date.parse(task.leaseExpiresAt) > nowMs) {
        continue;
      }
      try {
        const after = await store.transition(
          task.taskId,
          (current) =>
            expireLease(current, now, backoffMs(current.attempts, this.#deps.config.retry, this.#deps.random)),
          { known: task },
        );
        expired++;
        stillActive.delete(task.taskId);
        leased.delete(task.taskId);
        items.set(task.taskId, after);
        if (after.state === 'QUEUED') requeued.push(after);
        this.#deps.logger?.warn(`lease expired: task ${after.state}`, {
          taskId: after.taskId,
          attempts: after.attempts,
        });
      } catch (error) {
        // The lease was renewed or the task finished meanwhile: nothing to recover.
        if (!(error instanceof InvalidTransitionError || error instanceof ConcurrentUpdateError)) throw error;
      }
    }
    if (requeued.length > 0) await this.#deps.queues.announce(requeued, now);

    // The index only hints: an entry it misses may lag. Capacity is freed, or counted, only on
    // what a consistent read of the item says (for the listed ones, the read above).
    const missing = [...active].filter(
      ([taskId, { sinceMs }]) => !stillActive.has(taskId) && nowMs - sinceMs > INDEX_LAG_GRACE_MS,
    );
    const activeWith = (task: Task | undefined, fence: number) =>
      task !== undefined && ACTIVE_STATES.includes(task.state) && task.fence === fence;
    if (missing.length > 0) {
      const missingItems = await store.getMany(missing.map(([taskId]) => taskId));
      for (const [taskId, { fence }] of missing) {
        if (!activeWith(missingItems.get(taskId), fence)) released.push(taskId);
      }
    }
    // Attempts the ledger still lists that a read shows over: a counted one is released (which
    // settles it), any other on a page this scheduler keeps is settled. One the item shows no
    // sign of yet may still be landing (a write that failed unanswered, a predecessor's stalled
    // call): counted and kept while its page is young.
    const releasedNow = new Set(released);
    for (const ref of [...stillActive.values(), ...toSettle]) {
      if (!readIds.has(ref.taskId)) continue;
      const task = items.get(ref.taskId);
      if (activeWith(task, ref.fence)) continue;
      const onLedger = 'recordedAtMs' in ref ? (ref as LedgerRef) : undefined;
      const landingMayFollow = task !== undefined && task.fence < ref.fence;
      if (landingMayFollow && onLedger && nowMs - onLedger.recordedAtMs <= PAGE_LANDING_GRACE_MS) continue;
      if (active.get(ref.taskId)?.fence === ref.fence) {
        if (!releasedNow.has(ref.taskId)) released.push(ref.taskId);
        releasedNow.add(ref.taskId);
      } else if (ledger && onLedger?.tracked) {
        ledger.settle(ref.taskId, ref.fence);
      }
    }
    await ledger?.flush();
    const adopted: Task[] = [];
    for (const ref of stillActive.values()) {
      if (active.has(ref.taskId) || intake.holds(ref)) continue;
      const task = leased.get(ref.taskId);
      if (task && ACTIVE_STATES.includes(task.state)) adopted.push(task);
    }

    const backstop = await this.#backstop.step(intake);
    return { released, adopted, expired, reannounced: backstop.reannounced, unregisteredQueued: backstop.unregistered };
  }
}
