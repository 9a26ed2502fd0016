/**
 * Scale to zero: the scheduler runs only while there is something to hold or run, and whatever
 * announces work wakes it at once.
 *
 *   submit / retry / redrive ──▶ announce on the tier queue ──▶ waker: lease live? ── no ──▶ wake
 *   scheduler idle for IDLE_STOP_MS, nothing due within DUE_HORIZON_MS
 *       ──▶ publishes its stop (lease expiry STOP_GRACE_MS ahead), keeps polling until then, exits
 *   every minute, the safety-net tick ──▶ lease live? exit : work due? run the loop : exit
 *
 * No wake-up is lost to the race between a stopping scheduler and a submit: the submitter sends
 * its message first and reads the lease second; the stopping holder publishes its stop first and
 * polls the tiers until that expiry. A submitter that still saw the lease live sent its message
 * while the holder polls; one that reads later sees no live lease and wakes a new scheduler. A
 * cached "live" is trusted for at most WAKE_CACHE_MS and never past the lease's expiry, and
 * STOP_GRACE_MS is longer, so no cache outlives a stopping holder's polls.
 *
 * Delayed tasks and retries with backoff need no wake: their tenant-tier stays registered while
 * it has queued work (docs/intake.md §10, deviation 1), a scheduler does not stop while a
 * registered tenant-tier's first task is due within DUE_HORIZON_MS, and the tick (every minute)
 * starts one for any task due that soon (`hasSchedulerWork`).
 */
import type { QueuedTaskRef, QueueScanCursor } from '../adapters/task-store.ts';
import type { TaskLogger } from '../core/logger.ts';
import { ownsTenant, type ShardScope, SINGLE_SHARD, schedulerLeaseName, shardOfTenant } from '../core/shards.ts';
import { PRIORITY_TIERS, type Task } from '../core/task.ts';
import { tierQueue } from '../infra/resources.ts';
import { QueueBackstop } from './backstop.ts';
import type { Announcer, IntakeRegistry, LeaseStore, MessageQueues, SchedulerState, TaskRepository } from './ports.ts';

/** How long a scheduler with nothing to hold or run keeps polling before it stops. */
export const IDLE_STOP_MS = 20_000;
/** How far ahead a stopping scheduler publishes its stop (its lease expiry), polling until then. */
export const STOP_GRACE_MS = 3_000;
/** How long a submitter trusts a lease it read as live (capped at the lease's expiry). */
export const WAKE_CACHE_MS = 1_000;
/**
 * Work due within this keeps a scheduler running, and makes the tick start one: the tick
 * interval (60 s) plus margin, so a delayed task is held before it is due, not a minute late.
 */
export const DUE_HORIZON_MS = 90_000;

/** What the scheduler Lambda is invoked with; the EventBridge tick sends `{ reason: 'tick' }`. */
export interface SchedulerEvent {
  /**
   * `tick`: the per-minute safety net (exits at once when a scheduler runs or nothing is due).
   * `wake`: work was announced. `handover`: the previous invocation reached its time limit with
   * work left. Anything else is treated as a tick.
   */
  readonly reason?: 'tick' | 'wake' | 'handover';
  /** Which scheduler shard to run (`scheduler.shards`); 0 when absent. A tick without one checks every shard. */
  readonly shard?: number;
}

/**
 * Whether a scheduler is needed: a task dispatched or running (its completion frees capacity,
 * its lease may need recovering), or QUEUED work due within `horizonMs`. Reads, cheapest first:
 *
 *   the lease ledger, a Limit-1 scan (and, for one release, byLeased and byActive's LEASED# shards) ── any leased ──▶ yes
 *   the shard's tier queues ── an announcement visible (due, nobody took it) ──▶ yes
 *   byTenantQueue, a Limit-1 scan ── empty ──▶ no (the idle case: 4.5 read units in all, 2 once byLeased and byActive are deleted)
 *   byTenantQueue whole, while that costs no more than the two reads below ──▶ any due within the horizon?
 *   registry ──▶ a registered tenant-tier's first entry due within the horizon ──▶ yes
 *            (REGISTRY_READS_AT_ONCE at a time, stopping at the first due)
 *   one backstop page at its cursor ──▶ unregistered work due within the horizon ──▶ yes
 *
 * The last step finds work whose announcement was lost (a submit that crashed before its send, a
 * failed wake) behind registered tenant-tiers' delayed work; the ticks walk the index a page a
 * minute. The indexes may lag: a task they miss is seen by a later tick.
 */
export async function hasSchedulerWork(
  services: {
    readonly store: Pick<TaskRepository, 'anyLeased' | 'listLeased' | 'scanQueued' | 'firstQueued' | 'getMany'>;
    readonly control: Pick<IntakeRegistry, 'listIntake'> &
      Pick<SchedulerState, 'getSweepMarks' | 'putSweepMarks'> & {
        /** The shard's own sweep marks (ControlStore.forShard); without it, the one set. */
        readonly forShard?: (shard: number) => Pick<SchedulerState, 'getSweepMarks' | 'putSweepMarks'>;
      };
    readonly queues: Announcer & Pick<MessageQueues, 'attributes'>;
  },
  now: Date,
  horizonMs = DUE_HORIZON_MS,
  shard: ShardScope = SINGLE_SHARD,
  /** Called between the registrations' reads: a running scheduler's check renews its lease there. */
  keepAlive?: () => Promise<void>,
): Promise<boolean> {
  const { store, control } = services;
  if (await anyLeasedOf(store, shard)) return true;
  if (await announcementWaiting(services.queues, shard)) return true;
  const { refs, next } = await store.scanQueued(1);
  // An empty page is the end only without a cursor: a Scan may return one and go on.
  if (refs.length === 0 && next === undefined) return false;
  const dueByMs = now.getTime() + horizonMs;
  const registrations = (await control.listIntake()).filter(({ tenantId }) => ownsTenant(shard, tenantId));
  // The whole index, when reading it costs no more than the registrations' first entries would.
  const whole = await dueInWholeIndex(
    store,
    shard,
    dueByMs,
    registrations.length * FIRST_QUEUED_READ_UNITS + BACKSTOP_PEEK_READ_UNITS,
    keepAlive,
  );
  if (whole !== 'unknown') return whole === 'due';
  const registered = new Set(registrations.map(({ tenantId, tier }) => `${tier}#${tenantId}`));
  const isRegistered = (ref: QueuedTaskRef) => registered.has(`${ref.priority}#${ref.tenantId}`);
  if (refs.some((ref) => ownsTenant(shard, ref.tenantId) && !isRegistered(ref) && Date.parse(ref.runAt) <= dueByMs))
    return true;
  if (await anyFirstDue(store, registrations, dueByMs, keepAlive)) return true;
  const backstop = new QueueBackstop({
    ...services,
    control: control.forShard?.(shard.shard) ?? control,
    now: () => now,
    shard,
  });
  return backstop.peek(isRegistered, dueByMs);
}

/** Read units of one registered tenant-tier's first entry: a Query of each of its index keys, 0.5 at least each. */
const FIRST_QUEUED_READ_UNITS = 9 * 0.5;
/** Read units of the backstop's page (500 entries of 327 bytes, eventually consistent). */
const BACKSTOP_PEEK_READ_UNITS = 20;
/** Entries of `byTenantQueue` one read unit scans: 0.5 a 4 KB, at 327 bytes an entry. */
const ENTRIES_PER_READ_UNIT = Math.floor((2 * 4096) / 327);
/** Entries a page of the whole-index read asks for: about DynamoDB's 1 MB a page. */
const WHOLE_INDEX_PAGE = 3_000;

/**
 * Whether `byTenantQueue` holds work of the shard due by `dueByMs`, read whole in pages (a Scan;
 * the index lags, as every other read here), while that costs at most `budgetUnits` read units:
 * `unknown` when the budget ran out first. At 10,000 registered tenant-tiers with a task each due
 * tomorrow it is 4 pages, about 400 read units, where their first entries were 90,000 Queries
 * (45,000 units, 52 s on dynalite) every minute; a few registrations over a large index cost
 * what they did (the budget, spent, is the most this adds).
 */
async function dueInWholeIndex(
  store: Pick<TaskRepository, 'scanQueued'>,
  shard: ShardScope,
  dueByMs: number,
  budgetUnits: number,
  keepAlive?: () => Promise<void>,
): Promise<'due' | 'none' | 'unknown'> {
  let cursor: QueueScanCursor | undefined;
  let left = budgetUnits;
  for (;;) {
    const affordable = Math.min(WHOLE_INDEX_PAGE, Math.floor(left * ENTRIES_PER_READ_UNIT));
    if (affordable < 1) return 'unknown';
    await keepAlive?.();
    const page = await store.scanQueued(affordable, cursor);
    if (page.refs.some((ref) => ownsTenant(shard, ref.tenantId) && Date.parse(ref.runAt) <= dueByMs)) return 'due';
    if (page.next === undefined) return 'none';
    left -= Math.max(0.5, page.refs.length / ENTRIES_PER_READ_UNIT);
    cursor = page.next;
  }
}

/**
 * Registered tenant-tiers whose first entry is read at once. Each read is a Query per key of the
 * tenant-tier (9), so reading every registration at once was 90,000 Queries at 10,000 tenant-tiers
 * with nothing due: queued behind the SDK's 50 sockets, they failed on their timeouts (dynalite,
 * `TimeoutError`), and with them the minute tick's check and the idle stop's.
 */
export const REGISTRY_READS_AT_ONCE = 4;

/** Whether a registered tenant-tier's first entry is due by `dueByMs`: a few reads at a time, stopping at the first. */
async function anyFirstDue(
  store: Pick<TaskRepository, 'firstQueued'>,
  registrations: readonly { readonly tenantId: string; readonly tier: QueuedTaskRef['priority'] }[],
  dueByMs: number,
  keepAlive?: () => Promise<void>,
): Promise<boolean> {
  let next = 0;
  let found = false;
  const reader = async () => {
    while (!found && next < registrations.length) {
      const { tenantId, tier } = registrations[next++]!;
      await keepAlive?.();
      const first = await store.firstQueued(tenantId, tier);
      if (first !== undefined && Date.parse(first.runAt) <= dueByMs) found = true;
    }
  };
  await Promise.all(Array.from({ length: REGISTRY_READS_AT_ONCE }, reader));
  return found;
}

/**
 * Whether a tier queue of the shard shows an announcement nobody took: visible, so due (sent with
 * its task's delay, up to SQS's 15 minutes) or sent when no scheduler ran. Only a scheduler takes
 * it in; of an unregistered tenant-tier, nothing else here would find its task but the backstop's
 * one page a minute (500 entries of the index in Scan order: hours behind a large index). SQS
 * counts approximately; a count that lags is read again at the next tick.
 */
async function announcementWaiting(queues: Pick<MessageQueues, 'attributes'>, shard: ShardScope): Promise<boolean> {
  const counts = await Promise.all(
    PRIORITY_TIERS.map((tier) => queues.attributes(tierQueue(tier, shard.shard).id, ['ApproximateNumberOfMessages'])),
  );
  return counts.some((attributes) => Number(attributes.ApproximateNumberOfMessages ?? 0) > 0);
}

/** A task of the shard's tenants DISPATCHED or RUNNING (one shard: any at all, a Limit-1 read). */
async function anyLeasedOf(
  store: Pick<TaskRepository, 'anyLeased' | 'listLeased'>,
  shard: ShardScope,
): Promise<boolean> {
  if (shard.shards === 1) return store.anyLeased();
  // Never more entries than the pools hold.
  for await (const ref of store.listLeased()) if (ownsTenant(shard, ref.tenantId)) return true;
  return false;
}

/** Whether a lease read at `nowMs` shows a scheduler that is running. */
export const leaseIsLive = (lease: { expiresAt: number } | undefined, nowMs: number): boolean =>
  lease !== undefined && lease.expiresAt > nowMs;

export interface SchedulerWakerOptions {
  readonly control: Pick<LeaseStore, 'getLease'>;
  /** Start shard `shard`'s scheduler without waiting for it (on AWS: an asynchronous Lambda invoke). */
  readonly wake: (shard: number) => Promise<void>;
  /** `scheduler.shards`: a task wakes the scheduler of its tenant's shard. @default 1 */
  readonly shards?: number;
  readonly now?: () => number;
  readonly logger?: TaskLogger | undefined;
  /** @default WAKE_CACHE_MS */
  readonly cacheMs?: number;
}

/**
 * Called after tasks are announced on their tier queues: wakes a scheduler when none runs and
 * one of the tasks is due soon. A failed check or wake is logged, never thrown: the task is
 * already accepted, and the per-minute tick starts a scheduler for it.
 */
export class SchedulerWaker {
  readonly #options: SchedulerWakerOptions;
  readonly #now: () => number;
  /** Per shard: a scheduler is known to run (or to have been woken) until then. */
  readonly #liveUntilMs = new Map<number, number>();
  #wakes = 0;

  constructor(options: SchedulerWakerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Schedulers this waker started (tests, the local runtime's log). */
  get wakes(): number {
    return this.#wakes;
  }

  async afterAnnounce(tasks: readonly Pick<Task, 'runAt' | 'tenantId'>[], now: Date): Promise<void> {
    const shards = this.#options.shards ?? 1;
    const due = tasks.filter((task) => Date.parse(task.runAt) - now.getTime() <= DUE_HORIZON_MS);
    const wanted = new Set(due.map((task) => shardOfTenant(task.tenantId, shards)));
    await Promise.all([...wanted].map((shard) => this.#wake(shard)));
  }

  async #wake(shard: number): Promise<void> {
    const nowMs = this.#now();
    if ((this.#liveUntilMs.get(shard) ?? 0) > nowMs) return;
    const cacheMs = this.#options.cacheMs ?? WAKE_CACHE_MS;
    try {
      const lease = await this.#options.control.getLease(schedulerLeaseName(shard));
      if (lease && leaseIsLive(lease, nowMs)) {
        this.#liveUntilMs.set(shard, Math.min(lease.expiresAt, nowMs + cacheMs));
        return;
      }
      // Several submitters may wake at once: the extra schedulers find the lease taken and exit.
      await this.#options.wake(shard);
      this.#wakes++;
      this.#liveUntilMs.set(shard, nowMs + cacheMs);
    } catch (error) {
      this.#options.logger?.warn('could not wake the scheduler; the next tick starts it', {
        shard,
        error: String(error),
      });
    }
  }
}
