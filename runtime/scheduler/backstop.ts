/**
 * The registry backstop (docs/intake.md §4(a), "GSI lag" case 3): a paced Scan of
 * `byTenantQueue`, one page per reconcile pass, that finds QUEUED tasks nobody will read: their
 * tenant-tier is not registered and their announcement is gone. Two ways to get there: a crash
 * between the task's write and its announcement at submit, and an index lagging more than G when
 * a tenant-tier was deregistered. Such a task is announced again, which puts it back under the
 * intake's one invariant, "every QUEUED task has its announcement in SQS or a registered
 * tenant-tier" (docs/failure-handling.md), through the path every submit takes: the scheduler
 * registers the tenant-tier before it deletes the message. (Registering from here instead would
 * give the registry a second writer with its own interleavings against probes and
 * deregistrations; a re-announcement needs none.)
 *
 *   control table cursor ─▶ Scan byTenantQueue (one page) ─▶ unregistered, not held, overdue
 *       ─▶ consistent re-read ─▶ still QUEUED ─▶ announce ─▶ cursor written (after the announce)
 *
 * The cursor is kept in the control table because the scheduler Lambda restarts every minute: a
 * fresh scheduler goes on with the pass instead of starting over. A pass over n entries takes
 * n / page reconcile passes; a lost cursor write repeats part of a pass, never skips one.
 */
import type { QueuedTaskRef, QueueScanCursor } from '../adapters/task-store.ts';
import type { TaskLogger } from '../core/logger.ts';
import { ownsTenant, type ShardScope, SINGLE_SHARD } from '../core/shards.ts';
import { PRIORITY_TIERS, type PriorityTier } from '../core/task.ts';
import { tierQueue } from '../infra/resources.ts';
import type { Announcer, MessageQueues, SchedulerState, TaskRepository } from './ports.ts';

/**
 * Entries read per page: at the index's 327 bytes an entry, a full page is about 160 KB, 20 read
 * units (eventually consistent); a pass over 1,000,000 queued entries is 2,000 pages.
 */
export const BACKSTOP_PAGE = 500;
/** A task due this long ago whose tenant-tier is not registered, in a tier with no waiting announcement, is an orphan. */
export const ORPHAN_AFTER_MS = 60_000;
/**
 * Under steady load a tier queue may never be empty, so "no waiting announcement" cannot be
 * asked; a task due this long ago and still unregistered is an orphan whatever the queue holds.
 */
export const STALE_AFTER_MS = 15 * 60_000;
/**
 * A task this backstop announced is not announced again for this long: its announcement
 * registers the tenant-tier when consumed, but a busy tier may take a while to reach it.
 */
export const REANNOUNCE_AFTER_MS = 5 * 60_000;

/** What the intake will take care of (runtime/scheduler/intake.ts). */
export interface IntakeView {
  /** The intake holds this task (in a window, or being dispatched). */
  holds(ref: { taskId: string; tenantId: string; priority: PriorityTier }): boolean;
  /** The intake reads this task's tenant-tier from the index (it is registered): no message needed. */
  reads(ref: { tenantId: string; priority: PriorityTier }): boolean;
}

/** An intake that holds and reads nothing: every QUEUED task needs its message (tools, tests). */
export const NO_INTAKE: IntakeView = { holds: () => false, reads: () => false };

export interface BackstopDeps {
  readonly store: Pick<TaskRepository, 'scanQueued' | 'getMany'>;
  /** Where the backstop's cursor is kept across schedulers. */
  readonly control: Pick<SchedulerState, 'getSweepMarks' | 'putSweepMarks'>;
  readonly queues: Announcer & Pick<MessageQueues, 'attributes'>;
  readonly now: () => Date;
  readonly logger?: TaskLogger | undefined;
  /** @default BACKSTOP_PAGE */
  readonly pageSize?: number | undefined;
  /** @default ORPHAN_AFTER_MS */
  readonly orphanAfterMs?: number | undefined;
  /** The shard whose tenants this backstop looks after (its sweep marks are the shard's own). */
  readonly shard?: ShardScope | undefined;
}

export interface BackstopStep {
  /** QUEUED tasks on the page whose tenant-tier is not registered and that are overdue (normally 0). */
  readonly unregistered: number;
  /** Of those, announced again (still QUEUED by a consistent read). */
  readonly reannounced: number;
}

export class QueueBackstop {
  readonly #deps: BackstopDeps;
  /** Where the pass goes on; read from the control table once, then kept here and written back. */
  #cursor: QueueScanCursor | undefined;
  #cursorRead = false;
  /** Tasks this backstop announced, and when (taskId#fence → ms). */
  readonly #announcedAt = new Map<string, number>();

  constructor(deps: BackstopDeps) {
    this.#deps = deps;
  }

  /** One page of the pass: announce the orphans on it again, then move the cursor on. */
  async step(intake: IntakeView): Promise<BackstopStep> {
    const { store, queues } = this.#deps;
    const now = this.#deps.now();
    const nowMs = now.getTime();
    for (const [key, atMs] of this.#announcedAt) if (nowMs - atMs >= REANNOUNCE_AFTER_MS) this.#announcedAt.delete(key);
    const cursor = await this.#readCursor();
    const page = await store.scanQueued(this.#deps.pageSize ?? BACKSTOP_PAGE, cursor);
    const shard = this.#deps.shard ?? SINGLE_SHARD;
    const overdue = page.refs.filter(
      (ref) =>
        ownsTenant(shard, ref.tenantId) &&
        !intake.reads(ref) &&
        !intake.holds(ref) &&
        !this.#announcedAt.has(`${ref.taskId}#${ref.fence}`) &&
        Date.parse(ref.runAt) <= nowMs - (this.#deps.orphanAfterMs ?? ORPHAN_AFTER_MS),
    );
    const orphans = await this.#withoutAnnouncement(overdue, nowMs);
    let reannounced = 0;
    if (orphans.length > 0) {
      // The index lags: only what a consistent read still shows QUEUED is announced.
      const tasks = await store.getMany(orphans.map((ref) => ref.taskId));
      const queued = [...tasks.values()].filter((task) => task.state === 'QUEUED');
      await queues.announce(queued, now);
      for (const task of queued) this.#announcedAt.set(`${task.taskId}#${task.fence}`, nowMs);
      reannounced = queued.length;
      this.#deps.logger?.warn('re-announced QUEUED tasks of tenant-tiers nobody reads', {
        unregistered: orphans.length,
        reannounced,
        tenantTiers: [...new Set(orphans.map((ref) => `${ref.tenantId}#${ref.priority}`))].slice(0, 10),
      });
    }
    await this.#moveCursor(page.next);
    return { unregistered: orphans.length, reannounced };
  }

  /**
   * The idle tick's question, without a scheduler: does the page at the cursor hold QUEUED work
   * of a tenant-tier not in `registered`, due by `dueByMs`? If so it answers yes and leaves the
   * cursor, so the scheduler it starts reads that page first; if not it moves the cursor on, so
   * the ticks walk the index a page a minute.
   */
  async peek(registered: (ref: QueuedTaskRef) => boolean, dueByMs: number): Promise<boolean> {
    const page = await this.#deps.store.scanQueued(this.#deps.pageSize ?? BACKSTOP_PAGE, await this.#readCursor());
    const shard = this.#deps.shard ?? SINGLE_SHARD;
    if (
      page.refs.some((ref) => ownsTenant(shard, ref.tenantId) && !registered(ref) && Date.parse(ref.runAt) <= dueByMs)
    )
      return true;
    await this.#moveCursor(page.next);
    return false;
  }

  /**
   * Overdue unregistered tasks whose announcement is surely gone: in a tier whose queue holds no
   * visible or delayed message, or due for STALE_AFTER_MS. Asks the tier queues only when there
   * is something to decide (normally never).
   */
  async #withoutAnnouncement(overdue: readonly QueuedTaskRef[], nowMs: number): Promise<QueuedTaskRef[]> {
    const recent = overdue.filter((ref) => Date.parse(ref.runAt) > nowMs - STALE_AFTER_MS);
    if (recent.length === 0) return [...overdue];
    const drained = await this.#drainedTiers(new Set(recent.map((ref) => ref.priority)));
    return overdue.filter((ref) => Date.parse(ref.runAt) <= nowMs - STALE_AFTER_MS || drained.has(ref.priority));
  }

  async #drainedTiers(tiers: ReadonlySet<PriorityTier>): Promise<Set<PriorityTier>> {
    const drained = new Set<PriorityTier>();
    await Promise.all(
      PRIORITY_TIERS.filter((tier) => tiers.has(tier)).map(async (tier) => {
        const attributes = await this.#deps.queues.attributes(tierQueue(tier, this.#deps.shard?.shard ?? 0).id, [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesDelayed',
        ]);
        const waiting =
          Number(attributes.ApproximateNumberOfMessages ?? 0) +
          Number(attributes.ApproximateNumberOfMessagesDelayed ?? 0);
        if (waiting === 0) drained.add(tier);
      }),
    );
    return drained;
  }

  async #readCursor(): Promise<QueueScanCursor | undefined> {
    if (!this.#cursorRead) {
      this.#cursor = (await this.#deps.control.getSweepMarks()).backstopCursor;
      this.#cursorRead = true;
    }
    return this.#cursor;
  }

  /** Written only when it moved: a small index, read in one page, costs no write at all. */
  async #moveCursor(next: QueueScanCursor | undefined): Promise<void> {
    const moved = JSON.stringify(next) !== JSON.stringify(this.#cursor);
    this.#cursor = next;
    if (moved) await this.#deps.control.putSweepMarks(next ? { backstopCursor: next } : {});
  }
}
