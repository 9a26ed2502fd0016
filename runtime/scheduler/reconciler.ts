/**
 * Reconciliation: the safety net under every crash window. It finds, from DynamoDB,
 * - attempts whose lease ran out (worker crash, timeout, lost worker message) and puts them back
 *   through the scheduler (`expireLease`), keeping their tier and age;
 * - capacity the scheduler still counts for tasks that are no longer active (a lost completion
 *   report), and frees it;
 * - QUEUED tasks with no tier message (a crash between the write and the send at submit, or the
 *   queue state lost), and announces them again.
 * Each fix is a conditional write or an idempotent message, so running it twice is harmless.
 */
import type { ControlStore, SweepMarks } from '../adapters/control-store.ts';
import type { QueueClient } from '../adapters/queues.ts';
import type { ActiveTaskRef, TaskStore } from '../adapters/task-store.ts';
import { backoffMs } from '../core/backoff.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { ConcurrentUpdateError, InvalidTransitionError } from '../core/errors.ts';
import { expireLease } from '../core/lifecycle.ts';
import type { TaskLogger } from '../core/logger.ts';
import { ACTIVE_STATES, PRIORITY_TIERS, type PriorityTier, type Task } from '../core/task.ts';
import { TIER_RETENTION_SECONDS, tierQueue } from '../infra/resources.ts';

export interface ReconcilerDeps {
  readonly store: TaskStore;
  /** Where the sweeps' progress is kept across schedulers. */
  readonly control: ControlStore;
  readonly queues: QueueClient;
  readonly config: SchedulerConfig;
  readonly now: () => Date;
  readonly random?: (() => number) | undefined;
  readonly logger?: TaskLogger | undefined;
  /** How often the lease sweep runs. */
  readonly everyMs?: number;
  /** A QUEUED task due this long ago with no message is announced again. */
  readonly orphanAfterMs?: number;
}

/** What the intake will take care of (runtime/scheduler/intake.ts). */
export interface IntakeView {
  /** The intake holds this task (in a window, or being dispatched). */
  holds(ref: { taskId: string; tenantId: string; priority: PriorityTier }): boolean;
  /** The intake reads this task's tenant-tier from the index (it is registered): no message needed. */
  reads(ref: { tenantId: string; priority: PriorityTier }): boolean;
}

/** An intake that holds and reads nothing: every QUEUED task needs its message (tools, tests). */
export const NO_INTAKE: IntakeView = { holds: () => false, reads: () => false };

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
}

/**
 * Tier messages live at most this long in SQS (the tier queues' retention, less a day of
 * margin): a task delayed further than this may have lost its message by the time it is due.
 */
const MESSAGE_LIFETIME_MS = (TIER_RETENTION_SECONDS - 86_400) * 1000;
/** The stale sweep: how often, how long a task must have been due, how often per task. */
const STALE_SWEEP_EVERY_MS = 5 * 60_000;
const STALE_AFTER_MS = 15 * 60_000;
const STALE_REPEAT_MS = 60 * 60_000;
/** Long-delayed tasks are re-announced this long before they come due. */
const COMING_DUE_AHEAD_MS = 5 * 60_000;
/** The coming-due mark is written at most this often when nothing was announced. */
const COMING_DUE_MARK_EVERY_MS = 60_000;

/** GSIs lag the table by about a second; allow far more before trusting an absence. */
const INDEX_LAG_GRACE_MS = 15_000;

export class Reconciler {
  readonly #deps: ReconcilerDeps;
  #lastRunMs = 0;
  #lastOrphanSweepMs = 0;
  /** The sweeps' progress: read from the control table once, then kept here and written back. */
  #marks: SweepMarks | undefined;
  #comingDueMarkedAtMs = 0;

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
  }

  async maybeRun(
    intake: IntakeView,
    active: ReadonlyMap<string, { fence: number; sinceMs: number }>,
  ): Promise<ReconcileResult> {
    const nowMs = this.#deps.now().getTime();
    if (nowMs - this.#lastRunMs < (this.#deps.everyMs ?? 5_000)) {
      return { released: [], adopted: [], expired: 0, reannounced: 0 };
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
    const stillActive = new Map<string, ActiveTaskRef>();
    const requeued: Task[] = [];
    let expired = 0;

    for (const state of ['DISPATCHED', 'RUNNING'] as const) {
      for await (const ref of store.listActive(state)) {
        stillActive.set(ref.taskId, ref);
        if (!ref.leaseExpiresAt || Date.parse(ref.leaseExpiresAt) > nowMs) continue;
        try {
          const task = await store.transition(ref.taskId, (current) =>
            expireLease(current, now, backoffMs(current.attempts, this.#deps.config.retry, this.#deps.random)),
          );
          expired++;
          stillActive.delete(ref.taskId);
          if (task.state === 'QUEUED') requeued.push(task);
          this.#deps.logger?.warn(`lease expired: task ${task.state}`, {
            taskId: task.taskId,
            attempts: task.attempts,
          });
        } catch (error) {
          // The lease was renewed or the task finished meanwhile: nothing to recover.
          if (!(error instanceof InvalidTransitionError || error instanceof ConcurrentUpdateError)) throw error;
        }
      }
    }
    if (requeued.length > 0) await this.#deps.queues.announce(requeued, now);

    // The index only hints: an entry it misses may lag, or be moving between keys. Capacity is
    // freed, or counted, only on what a consistent read of the item says.
    const missing = [...active].filter(
      ([taskId, { sinceMs }]) => !stillActive.has(taskId) && nowMs - sinceMs > INDEX_LAG_GRACE_MS,
    );
    const unknown = [...stillActive.values()]
      .filter((ref) => !active.has(ref.taskId) && !intake.holds(ref))
      .map((ref) => ref.taskId);
    const adopted: Task[] = [];
    if (missing.length > 0 || unknown.length > 0) {
      const items = await store.getMany([...missing.map(([taskId]) => taskId), ...unknown]);
      const activeWith = (task: Task | undefined, fence: number) =>
        task !== undefined && ACTIVE_STATES.includes(task.state) && task.fence === fence;
      for (const [taskId, { fence }] of missing) if (!activeWith(items.get(taskId), fence)) released.push(taskId);
      for (const taskId of unknown) {
        const task = items.get(taskId);
        if (task && ACTIVE_STATES.includes(task.state)) adopted.push(task);
      }
    }

    this.#marks ??= await this.#deps.control.getSweepMarks();
    const marks = this.#marks;
    let reannounced = await this.#announceComingDue(now, marks);
    let orphans = new Set<string>();
    if (nowMs - this.#lastOrphanSweepMs >= 30_000) {
      this.#lastOrphanSweepMs = nowMs;
      orphans = await this.#announceOrphans(intake, now);
      reannounced += orphans.size;
    }
    // Tasks the orphan sweep just announced are skipped like held ones.
    reannounced += await this.#announceStale(intake, orphans, now, marks);
    return { released, adopted, expired, reannounced };
  }

  /**
   * A QUEUED task needs a tier message unless its tenant-tier is registered (the intake reads
   * it from the index). When a tier queue holds no visible or delayed message, every QUEUED task
   * of that tier that is due, not held and of an unregistered tenant-tier has lost its message
   * (a crash between the write and the send at submit): announce it again; duplicates are
   * harmless. Checking the queue first skips the index read while announcements wait.
   */
  async #announceOrphans(intake: IntakeView, now: Date): Promise<Set<string>> {
    const drained = await this.#drainedTiers();
    if (drained.size === 0) return new Set();
    const dueBefore = new Date(now.getTime() - (this.#deps.orphanAfterMs ?? 60_000));
    const orphans: string[] = [];
    for await (const ref of this.#deps.store.listActive('QUEUED', dueBefore)) {
      if (drained.has(ref.priority) && !intake.reads(ref) && !intake.holds(ref)) orphans.push(ref.taskId);
    }
    if (orphans.length === 0) return new Set();
    const tasks = await this.#deps.store.getMany(orphans);
    const queued = [...tasks.values()].filter((task) => task.state === 'QUEUED');
    await this.#deps.queues.announce(queued, now);
    this.#deps.logger?.warn('re-announced QUEUED tasks that had no tier message', { count: queued.length });
    return new Set(queued.map((task) => task.taskId));
  }

  /**
   * A task delayed beyond a tier message's lifetime (runAt up to a year ahead, retention 14
   * days) is announced again as it comes due, whatever became of its first message. Each call
   * sweeps the window since the last one, kept in the control table (the first ever starts an
   * hour back), so a task is re-announced once, whichever scheduler runs; a duplicate of a
   * surviving message is dropped on receipt.
   */
  async #announceComingDue(now: Date, marks: SweepMarks): Promise<number> {
    const nowMs = now.getTime();
    const from = marks.comingDueSweptToMs ?? nowMs - 3_600_000;
    const to = nowMs + COMING_DUE_AHEAD_MS;
    if (to <= from) return 0;
    const candidates: string[] = [];
    for await (const ref of this.#deps.store.listActive('QUEUED', new Date(to), new Date(from))) {
      if (Date.parse(ref.runAt) - Date.parse(ref.submittedAt) > MESSAGE_LIFETIME_MS) candidates.push(ref.taskId);
    }
    let queued: Task[] = [];
    if (candidates.length > 0) {
      const tasks = await this.#deps.store.getMany(candidates);
      queued = [...tasks.values()].filter((task) => task.state === 'QUEUED');
      await this.#deps.queues.announce(queued, now);
    }
    this.#marks = { ...this.#marks, comingDueSweptToMs: to };
    // Written when it announced something, else now and then: a new scheduler re-sweeps at most
    // the last minute, announcing again only what came due in it.
    if (queued.length > 0 || nowMs - this.#comingDueMarkedAtMs >= COMING_DUE_MARK_EVERY_MS) {
      this.#comingDueMarkedAtMs = nowMs;
      await this.#deps.control.putSweepMarks(this.#marks);
    }
    return queued.length;
  }

  /**
   * Under steady load a tier never drains, so the orphan sweep cannot tell a lost message from
   * a long queue. A task due for STALE_AFTER_MS that the scheduler does not hold is announced
   * again then and every STALE_REPEAT_MS after, on a schedule fixed by its due time: each sweep
   * (every few minutes) announces the tasks whose scheduled instant fell since the last sweep,
   * which the control table records, so a new scheduler every minute does not announce them
   * again. A lost message is replaced within about 20 minutes; one that still exists gains an
   * hourly duplicate, dropped on receipt.
   */
  async #announceStale(
    intake: IntakeView,
    justAnnounced: ReadonlySet<string>,
    now: Date,
    marks: SweepMarks,
  ): Promise<number> {
    const nowMs = now.getTime();
    const from = Math.max(marks.staleSweptToMs ?? 0, nowMs - STALE_REPEAT_MS);
    const window = nowMs - from;
    if (window < STALE_SWEEP_EVERY_MS) return 0;
    const stale: string[] = [];
    for await (const ref of this.#deps.store.listActive('QUEUED', new Date(nowMs - STALE_AFTER_MS))) {
      const sinceStale = nowMs - STALE_AFTER_MS - Date.parse(ref.dueAt);
      // Its latest scheduled instant, nowMs - (sinceStale mod repeat), fell in (from, now].
      if (intake.reads(ref) || intake.holds(ref) || justAnnounced.has(ref.taskId)) continue;
      if (sinceStale % STALE_REPEAT_MS < window) stale.push(ref.taskId);
    }
    let queued: Task[] = [];
    if (stale.length > 0) {
      const tasks = await this.#deps.store.getMany(stale);
      queued = [...tasks.values()].filter((task) => task.state === 'QUEUED');
      await this.#deps.queues.announce(queued, now);
    }
    // Recorded after announcing: a crash in between repeats the announcements, never skips them.
    this.#marks = { ...this.#marks, staleSweptToMs: nowMs };
    await this.#deps.control.putSweepMarks(this.#marks);
    return queued.length;
  }

  async #drainedTiers(): Promise<Set<PriorityTier>> {
    const drained = new Set<PriorityTier>();
    await Promise.all(
      PRIORITY_TIERS.map(async (tier) => {
        const attributes = await this.#deps.queues.attributes(tierQueue(tier).id, [
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
}
