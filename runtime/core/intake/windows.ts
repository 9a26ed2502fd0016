/**
 * The intake's bookkeeping (docs/intake.md §4(a)): per active tenant-tier, a window of its
 * oldest due QUEUED work, what to read from the index next, and whether the tenant-tier is in
 * the durable registry. Pure: no I/O, time comes in as epoch milliseconds. The scheduler does
 * the reads and writes these decisions ask for and reports back.
 *
 *   announcement ─▶ announced(): register first if needed; admit the ref or leave it to the index
 *   refillsDue() ─▶ Query byTenantQueue ─▶ listed(): admit what is new (skip the just-dispatched)
 *   probesDue()  ─▶ first entry of the partition ─▶ probed(): deregister once empty G after the
 *                   last announcement, or note when its next task comes due
 *   engine picks ─▶ taken() ─▶ dispatched() | returned() | dropped()
 *   backlogged  ─▶ promisesDue() ─▶ write scanUntilMs into the registry ─▶ promised()
 *
 * The promise (docs/intake.md §4(a), "Suppressing the flood's announcements"): a backlogged
 * tenant-tier's registry item carries `scanUntilMs`, "this tenant-tier's index is read at least
 * until then", and the submit path skips the announcement while the promise holds. So a task may
 * be QUEUED with no announcement at all, and the scheduler must find it in the index: it keeps
 * reading a promised partition (every `promiseRereadMs` while its window is below half) until
 * `scanUntilMs + promiseGraceMs` (G: by then the index shows every task written before
 * `scanUntilMs`), and deregisters only after that. Promises only ever grow.
 *
 * Invariant kept with the scheduler: every QUEUED task either still has its announcement in SQS
 * or belongs to a registered tenant-tier whose promise covers it (written before `scanUntilMs`).
 * Announcements are deleted only after registration; a tenant-tier is deregistered only when the
 * index, read at least `indexLagMs` after its last announcement and `promiseGraceMs` after its
 * promise ended, shows nothing queued (due or not), with nothing in its window or being dispatched.
 * The index is never trusted for state: what it lists is re-read consistently before dispatch.
 */
import type { PriorityTier, TaskResources } from '../task.ts';

/** A QUEUED task as the intake holds it: what the policy engine needs. */
export interface QueuedRef {
  readonly taskId: string;
  readonly tenantId: string;
  readonly priority: PriorityTier;
  readonly runtime: 'lambda' | 'fargate';
  readonly resources: TaskResources;
  readonly agingFromMs: number;
  readonly runAtMs: number;
  /** The fence of the QUEUED item: a retry waits with a higher fence than its last dispatch. */
  readonly fence: number;
  /** Known once the item was read (the index does not carry them): flow control holds on them. */
  readonly type?: string | undefined;
  readonly concurrencyKey?: string | undefined;
  readonly concurrencyLimit?: number | undefined;
}

export interface TenantTier {
  readonly tenantId: string;
  readonly tier: PriorityTier;
}

/**
 * Parked refs a tenant-tier holds beyond its window at most. Past it, parked work counts against
 * the window again (and the tenant's other work waits behind it): it bounds the memory and the
 * re-reads of parked entries (each refill reads past them).
 */
export const PARKED_WINDOW_CAP = 1000;

export interface IntakeOptions {
  /** The engine's parked tasks of a tenant-tier (they take no room in its window). */
  readonly parked?: (tenantId: string, tier: PriorityTier) => number;
  /** The window a tenant may hold (e.g. twice its quota), before the global cap. */
  readonly windowSize: (tenantId: string) => number;
  /** All windows together hold about this many refs at most: windows shrink towards 1. */
  readonly bufferSize: number;
  /** How long the index may be assumed to lag the table (G). */
  readonly indexLagMs: number;
  /** The least time between two index reads of one tenant-tier. */
  readonly minQueryGapMs?: number;
  /**
   * Length of a promise (H): a backlogged tenant-tier's `scanUntilMs` is set to now + H, and
   * renewed once less than H/2 is left. Undefined: no promises are made (every submit announces).
   */
  readonly promiseMs?: number;
  /** How long a promised partition is still read after `scanUntilMs` (default `indexLagMs`, G). */
  readonly promiseGraceMs?: number;
  /** While a promise holds, a window below half is read again this often (default 1 s). */
  readonly promiseRereadMs?: number;
  /**
   * A tenant-tier throttled by DynamoDB (after the SDK's own retries) is left alone this long,
   * doubled per throttle in a row up to `maxBackoffMs` (defaults 500 ms and 8 s).
   */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
}

/** A promise to write into the registry item of a registered tenant-tier. */
export interface PromiseDue extends TenantTier {
  /** The registration the write is conditional on. */
  readonly token: string;
  readonly scanUntilMs: number;
}

/** What to do with a received announcement. */
export interface AnnouncementDecision {
  /** Write the tenant-tier into the registry before deleting the message. */
  readonly register: boolean;
  /** The ref entered the window: add it to the policy engine. */
  readonly admitted?: QueuedRef;
}

type Registration = 'unregistered' | 'registering' | 'registered' | 'deregistering';

interface State {
  readonly tenantId: string;
  readonly tier: PriorityTier;
  registration: Registration;
  /** The registry item's token as this scheduler wrote or read it (deregistration is conditional on it). */
  token: string | undefined;
  /** Waiting refs the engine holds, by taskId. */
  readonly window: Map<string, QueuedRef>;
  /** Refs the engine picked whose dispatch is in flight. */
  readonly taken: Map<string, QueuedRef>;
  /** The index may hold due work of this tenant-tier beyond the window. */
  hasMore: boolean;
  /**
   * Announced refs left to the index reads (the window was full, more was known in the index, or
   * not due yet), by taskId, up to ASIDE_CAP: a read that comes back complete admits the due ones
   * it did not list (the index lags), since nothing older waits beyond the window then.
   */
  readonly aside: Map<string, QueuedRef>;
  /** The last read (or announcement) showed more due work than the window holds: worth a promise. */
  backlogged: boolean;
  /**
   * The largest promise this scheduler knows the registry item may carry (read, written, or
   * attempted: a write whose answer was lost may have landed). 0: none.
   */
  scanUntilMs: number;
  promiseInFlight: boolean;
  /** Earliest due time of work known to be queued but not yet due. */
  nextDueMs: number;
  lastAnnouncedMs: number;
  lastQueryMs: number;
  queryInFlight: boolean;
  /** Set when a read found nothing due and the window is empty: probe for deregistration. */
  probeAtMs: number | undefined;
  /** Throttled: no reads, and nothing offered to the engine, before then. */
  backoffUntilMs: number;
  /** Throttles in a row (reset by a dispatch or a read that succeeded). */
  throttles: number;
  /** Restored after a restart and not read from the index since: its due work may not be held yet. */
  unreadSinceRestore: boolean;
}

const DEFAULT_MIN_QUERY_GAP_MS = 250;
/**
 * Announcements set aside remembered per tenant-tier. Past it they are left to the index reads
 * alone (a flood's tenant-tier soon has a promise, and its submits stop announcing).
 */
const ASIDE_CAP = 1_000;
const DEFAULT_BACKOFF_MS = 500;
const DEFAULT_MAX_BACKOFF_MS = 8_000;
const DEFAULT_PROMISE_REREAD_MS = 1_000;
const NEVER = Number.POSITIVE_INFINITY;

const keyOf = (tenantId: string, tier: PriorityTier) => `${tier}\u0000${tenantId}`;
const dispatchKey = (taskId: string, fence: number) => `${fence}\u0000${taskId}`;

export class IntakeWindows {
  readonly #options: IntakeOptions;
  readonly #states = new Map<string, State>();
  /** taskId + fence of QUEUED items dispatched in the last `indexLagMs` → when to forget. */
  readonly #recent = new Map<string, number>();
  /** Per tenant-tier key, how many of `#recent` are its (to read past lagging entries). */
  readonly #recentPerKey = new Map<string, number>();
  readonly #recentOwner = new Map<string, string>();

  constructor(options: IntakeOptions) {
    this.#options = options;
  }

  /** Tenant-tiers in memory (registered or on the way in or out). */
  get activeCount(): number {
    return this.#states.size;
  }

  /** Refs held in windows or being dispatched. */
  get heldCount(): number {
    let count = 0;
    for (const state of this.#states.values()) count += state.window.size + state.taken.size;
    return count;
  }

  /** Whether the task is in its tenant-tier's window or being dispatched. */
  holds(taskId: string, tenantId: string, tier: PriorityTier): boolean {
    const state = this.#states.get(keyOf(tenantId, tier));
    return state !== undefined && this.#held(state, taskId);
  }

  isRegistered(tenantId: string, tier: PriorityTier): boolean {
    return this.#states.get(keyOf(tenantId, tier))?.registration === 'registered';
  }

  /** Every tenant-tier the registry holds for this scheduler (registered or being registered). */
  registered(): TenantTier[] {
    return [...this.#states.values()]
      .filter((state) => state.registration === 'registered')
      .map(({ tenantId, tier }) => ({ tenantId, tier }));
  }

  /**
   * The refs that take room in a window: those held, less the ones the engine parked (a paused
   * type, a full concurrency key), up to PARKED_WINDOW_CAP, so parked work does not keep the
   * tenant's other work out of the window (head-of-line blocking at the intake).
   */
  #occupied(state: State): number {
    const parked = Math.min(PARKED_WINDOW_CAP, this.#options.parked?.(state.tenantId, state.tier) ?? 0);
    return Math.max(0, state.window.size + state.taken.size - parked);
  }

  /** The window size of a tenant now: its own, capped so all windows share the buffer. */
  windowOf(tenantId: string): number {
    const share = Math.floor(this.#options.bufferSize / Math.max(1, this.#states.size));
    return Math.max(1, Math.min(this.#options.windowSize(tenantId), share));
  }

  /** After a restart: the registry's tenant-tiers, each read from the index at once. */
  restore(
    tenantTiers: readonly (TenantTier & { readonly token: string; readonly scanUntilMs?: number | undefined })[],
    nowMs: number,
  ): void {
    for (const { tenantId, tier, token, scanUntilMs } of tenantTiers) {
      const state = this.#state(tenantId, tier, nowMs);
      state.registration = 'registered';
      state.token = token;
      state.hasMore = true;
      state.unreadSinceRestore = true;
      state.scanUntilMs = Math.max(state.scanUntilMs, scanUntilMs ?? 0);
    }
  }

  /**
   * Tenant-tiers restored after a restart that no index read has returned for yet: until none is
   * left, the engine may not hold every task that is due (the wait bound's count of tenants ahead
   * would be short).
   */
  unreadSinceRestore(): number {
    let unread = 0;
    for (const state of this.#states.values()) if (state.unreadSinceRestore) unread++;
    return unread;
  }

  /** The promise known for a tenant-tier (0: none). */
  scanUntilOf(tenantId: string, tier: PriorityTier): number {
    return this.#states.get(keyOf(tenantId, tier))?.scanUntilMs ?? 0;
  }

  /**
   * Until when this scheduler must keep running to honour its promises: the latest
   * `scanUntilMs + G` among them (a submit that skipped its announcement relies on it).
   */
  readsPromisedUntilMs(): number {
    let until = 0;
    for (const state of this.#states.values()) {
      if (state.scanUntilMs > 0) until = Math.max(until, state.scanUntilMs + this.#graceMs);
    }
    return until;
  }

  /**
   * A tier message arrived. Its ref (when the message carries one) goes straight into the
   * window when the tenant-tier has no due work beyond it: the index may not show the task yet,
   * the message does. Otherwise the index read brings it in, in due order.
   */
  announced(announcement: TenantTier & { readonly ref?: QueuedRef }, nowMs: number): AnnouncementDecision {
    this.#prune(nowMs);
    const state = this.#state(announcement.tenantId, announcement.tier, nowMs);
    state.lastAnnouncedMs = Math.max(state.lastAnnouncedMs, nowMs);
    state.probeAtMs = undefined;
    const register = state.registration !== 'registered' && state.registration !== 'registering';
    if (register) state.registration = 'registering';
    const { ref } = announcement;
    if (!ref) {
      // An announcement without a ref (an older message): read the index for it.
      state.hasMore = true;
      return { register };
    }
    if (ref.runAtMs > nowMs) {
      state.nextDueMs = Math.min(state.nextDueMs, ref.runAtMs);
      this.#setAside(state, ref);
      this.#probeWhenEmpty(state, nowMs);
      return { register };
    }
    if (this.#held(state, ref.taskId) || this.#recent.has(dispatchKey(ref.taskId, ref.fence))) {
      // A duplicate (SQS delivers at least once) of work held or just dispatched.
      this.#probeWhenEmpty(state, nowMs);
      return { register };
    }
    if (state.hasMore || this.#occupied(state) >= this.windowOf(state.tenantId)) {
      // Older due work may wait in the index: admitting this one would let it jump the queue.
      if (this.#occupied(state) >= this.windowOf(state.tenantId)) state.backlogged = true;
      state.hasMore = true;
      this.#setAside(state, ref);
      return { register };
    }
    state.window.set(ref.taskId, ref);
    return { register, admitted: ref };
  }

  /**
   * The registry write for an announced tenant-tier landed with `token` (undefined: it failed,
   * and the messages waiting on it come back to be announced again).
   */
  registration(tenantId: string, tier: PriorityTier, token: string | undefined, scanUntilMs = 0): void {
    const state = this.#states.get(keyOf(tenantId, tier));
    if (state?.registration !== 'registering') return;
    state.registration = token === undefined ? 'unregistered' : 'registered';
    state.token = token;
    state.scanUntilMs = Math.max(state.scanUntilMs, scanUntilMs);
  }

  /**
   * Registered, backlogged tenant-tiers whose promise should be made or renewed (less than H/2
   * left): each is a registry write of `scanUntilMs` = now + H, conditional on the token and on
   * not lowering what the item holds. Report the outcome to `promised()`.
   */
  promisesDue(nowMs: number, max = NEVER): PromiseDue[] {
    const promiseMs = this.#options.promiseMs;
    if (promiseMs === undefined) return [];
    const due: PromiseDue[] = [];
    for (const state of this.#states.values()) {
      if (due.length >= max) break;
      if (state.registration !== 'registered' || state.token === undefined || state.promiseInFlight) continue;
      if (!state.backlogged || state.scanUntilMs - nowMs >= promiseMs / 2) continue;
      state.promiseInFlight = true;
      // Assume it landed until told otherwise: a write whose answer is lost may have.
      const scanUntilMs = Math.max(state.scanUntilMs, nowMs + promiseMs);
      state.scanUntilMs = scanUntilMs;
      due.push({ tenantId: state.tenantId, tier: state.tier, token: state.token, scanUntilMs });
    }
    return due;
  }

  /**
   * The promise write ended: `stored` is what the registry item now carries (its token and
   * promise, when the write was refused because the item moved on), or undefined when the
   * outcome is unknown. The promise kept in memory never shrinks.
   */
  promised(
    tenantId: string,
    tier: PriorityTier,
    stored: { readonly token: string; readonly scanUntilMs: number } | undefined,
  ): void {
    const state = this.#states.get(keyOf(tenantId, tier));
    if (!state) return;
    state.promiseInFlight = false;
    if (!stored) return;
    if (state.registration === 'registered') state.token = stored.token;
    state.scanUntilMs = Math.max(state.scanUntilMs, stored.scanUntilMs);
  }

  /** Tenant-tiers whose window should be refilled from the index now, with the page size to ask. */
  refillsDue(nowMs: number, max = NEVER): (TenantTier & { readonly limit: number })[] {
    const due: (TenantTier & { readonly limit: number })[] = [];
    for (const [key, state] of this.#states) {
      if (due.length >= max) break;
      if (state.queryInFlight || state.registration === 'deregistering') continue;
      if (nowMs < state.backoffUntilMs) continue;
      if (nowMs - state.lastQueryMs < (this.#options.minQueryGapMs ?? DEFAULT_MIN_QUERY_GAP_MS)) continue;
      const window = this.windowOf(state.tenantId);
      const held = this.#occupied(state);
      // Under a promise, tasks may come without an announcement: look for them every reread.
      const promised =
        state.scanUntilMs > 0 &&
        nowMs < state.scanUntilMs + this.#graceMs &&
        nowMs - state.lastQueryMs >= (this.#options.promiseRereadMs ?? DEFAULT_PROMISE_REREAD_MS);
      const wants = ((state.hasMore || promised) && held <= window / 2) || state.nextDueMs <= nowMs;
      if (!wants) continue;
      // Read past entries the index may still list for work just dispatched.
      const lagging = this.#recentPerKey.get(key) ?? 0;
      // And past the parked refs it holds (they stay in the index, oldest first).
      const parked = state.window.size + state.taken.size - held;
      due.push({ tenantId: state.tenantId, tier: state.tier, limit: window - held + lagging + parked });
    }
    return due;
  }

  /**
   * The earliest time `refillsDue` (and, with `probes`, `probesDue`) will name a tenant-tier:
   * `nowMs` or earlier when one is due now, undefined when none is waiting for a time. The tick
   * waits no longer than this, so a read held back only by the gap between two reads of one
   * partition (or a backoff, or a delay) is made when it comes due, not after a long poll.
   */
  nextReadAtMs(nowMs: number, probes: boolean): number | undefined {
    let next: number | undefined;
    const at = (ms: number) => {
      next = next === undefined ? ms : Math.min(next, ms);
    };
    const gapMs = this.#options.minQueryGapMs ?? DEFAULT_MIN_QUERY_GAP_MS;
    const rereadMs = this.#options.promiseRereadMs ?? DEFAULT_PROMISE_REREAD_MS;
    for (const state of this.#states.values()) {
      if (state.queryInFlight || state.registration === 'deregistering') continue;
      const earliest = Math.max(state.lastQueryMs + gapMs, state.backoffUntilMs);
      const roomy = this.#occupied(state) <= this.windowOf(state.tenantId) / 2;
      if (state.hasMore && roomy) at(earliest);
      if (roomy && state.scanUntilMs > 0) {
        const rereadAt = Math.max(earliest, state.lastQueryMs + rereadMs);
        if (rereadAt < state.scanUntilMs + this.#graceMs) at(rereadAt);
      }
      if (state.nextDueMs !== NEVER) at(Math.max(earliest, state.nextDueMs));
      if (probes && state.registration === 'registered' && state.probeAtMs !== undefined) {
        at(Math.max(state.probeAtMs, state.backoffUntilMs));
      }
    }
    return next === undefined ? undefined : Math.max(next, nowMs - 1);
  }

  /** Tenant-tiers whose partition should be probed for deregistration or for future work. */
  probesDue(nowMs: number, max = NEVER): TenantTier[] {
    const due: TenantTier[] = [];
    for (const state of this.#states.values()) {
      if (due.length >= max) break;
      if (state.queryInFlight || state.registration !== 'registered') continue;
      if (state.probeAtMs === undefined || state.probeAtMs > nowMs || nowMs < state.backoffUntilMs) continue;
      due.push({ tenantId: state.tenantId, tier: state.tier });
    }
    return due;
  }

  /** An index read of the tenant-tier was issued (a refill or a probe). */
  querying(tenantId: string, tier: PriorityTier, nowMs: number): void {
    const state = this.#states.get(keyOf(tenantId, tier));
    if (!state) return;
    state.queryInFlight = true;
    state.lastQueryMs = nowMs;
  }

  /** An index read failed: try again later. */
  queryFailed(tenantId: string, tier: PriorityTier): void {
    const state = this.#states.get(keyOf(tenantId, tier));
    if (state) state.queryInFlight = false;
  }

  /**
   * A refill read returned (`issuedAtMs`: when it was sent). Returns the refs that entered the
   * window (to add to the engine): new to this scheduler, not just dispatched, while there is room.
   */
  listed(
    tenantTier: TenantTier,
    page: { readonly refs: readonly QueuedRef[]; readonly hasMore: boolean },
    issuedAtMs: number,
  ): QueuedRef[] {
    this.#prune(issuedAtMs);
    const state = this.#states.get(keyOf(tenantTier.tenantId, tenantTier.tier));
    if (!state) return [];
    state.queryInFlight = false;
    if (state.backoffUntilMs > issuedAtMs) {
      // Sent before a throttle that came back first: read again once the back-off ends.
      state.hasMore = true;
      return [];
    }
    state.throttles = 0;
    state.unreadSinceRestore = false;
    // Passed: the next due time is the earliest work set aside that is not due yet (one announced
    // early). NEVER here lost a later due time the passed one had hidden under its minimum: that
    // work was read by no one until the next scheduler (chaos seed 9).
    if (state.nextDueMs <= issuedAtMs) state.nextDueMs = this.#nextDueAside(state, issuedAtMs);
    const window = this.windowOf(state.tenantId);
    const admitted: QueuedRef[] = [];
    let overflow = false;
    for (const ref of page.refs) {
      // Listed: the reads find it from now on.
      state.aside.delete(ref.taskId);
      if (this.#held(state, ref.taskId) || this.#recent.has(dispatchKey(ref.taskId, ref.fence))) continue;
      if (this.#occupied(state) >= window) {
        overflow = true;
        break;
      }
      state.window.set(ref.taskId, ref);
      admitted.push(ref);
    }
    state.hasMore = page.hasMore || overflow;
    if (!state.hasMore) {
      // Nothing older waits beyond the window: due announced work the index does not list yet goes in.
      for (const [taskId, aside] of state.aside) {
        if (this.#held(state, taskId) || this.#recent.has(dispatchKey(taskId, aside.fence))) {
          state.aside.delete(taskId);
          continue;
        }
        if (aside.runAtMs > issuedAtMs) continue;
        if (this.#occupied(state) >= window) {
          state.hasMore = true;
          break;
        }
        state.window.set(taskId, aside);
        admitted.push(aside);
        state.aside.delete(taskId);
      }
    }
    state.backlogged = state.hasMore;
    if (!state.hasMore && state.window.size + state.taken.size === 0 && state.registration === 'registered') {
      // Nothing due shows: look at the whole partition once the index has caught up with the
      // last announcement and with every task a submit left unannounced under the promise.
      state.probeAtMs = this.#quietFromMs(state, issuedAtMs);
    }
    return admitted;
  }

  /**
   * A probe returned the partition's first entry, due or not (`issuedAtMs`: when it was sent).
   * Returns the registry token to deregister on (conditionally) when the tenant-tier is done.
   */
  probed(tenantTier: TenantTier, first: QueuedRef | undefined, issuedAtMs: number): string | undefined {
    const state = this.#states.get(keyOf(tenantTier.tenantId, tenantTier.tier));
    if (!state) return undefined;
    state.queryInFlight = false;
    state.probeAtMs = undefined;
    if (state.registration !== 'registered' || state.token === undefined) return undefined;
    if (first && this.#recent.has(dispatchKey(first.taskId, first.fence))) {
      // The index still lists work just dispatched: look again shortly.
      state.probeAtMs = issuedAtMs + (this.#options.minQueryGapMs ?? DEFAULT_MIN_QUERY_GAP_MS);
      return undefined;
    }
    if (first) {
      // Work remains: read it when due (if it already is, at once).
      state.nextDueMs = Math.min(state.nextDueMs, first.runAtMs);
      return undefined;
    }
    const quietFromMs = this.#quietFromMs(state, issuedAtMs);
    const quiet = issuedAtMs >= quietFromMs;
    const idle = state.window.size + state.taken.size === 0 && !state.hasMore && state.nextDueMs === NEVER;
    if (!quiet || !idle) {
      if (idle) state.probeAtMs = quietFromMs;
      return undefined;
    }
    state.registration = 'deregistering';
    return state.token;
  }

  /** The conditional deregistration finished: forget the tenant-tier unless it came back meanwhile. */
  deregistered(tenantId: string, tier: PriorityTier, deleted: boolean, nowMs: number): void {
    const key = keyOf(tenantId, tier);
    const state = this.#states.get(key);
    if (state?.registration !== 'deregistering') return;
    if (deleted && state.window.size + state.taken.size === 0) {
      this.#states.delete(key);
      return;
    }
    // Refused (the registry moved) or failed: keep it registered and look again later.
    state.registration = 'registered';
    state.probeAtMs = nowMs + this.#options.indexLagMs;
  }

  /**
   * The registry holds no item for the tenant-tier, read consistently after one of this
   * scheduler's registry writes was refused: most likely its own deregistration applied and the
   * answer was lost (the SDK's retry then finds nothing to delete). It is not registered, whatever
   * this scheduler believed, and a scheduler starting afresh would not read it: with nothing held
   * or known to come it is forgotten, as after a deregistration; otherwise it goes back to
   * registering, and true says to register it now.
   */
  registrationGone(tenantId: string, tier: PriorityTier): boolean {
    const key = keyOf(tenantId, tier);
    const state = this.#states.get(key);
    if (state?.registration !== 'registered') return false;
    if (state.window.size + state.taken.size === 0 && !state.hasMore && state.nextDueMs === NEVER) {
      this.#states.delete(key);
      return false;
    }
    state.registration = 'registering';
    state.token = undefined;
    return true;
  }

  /** The engine picked the ref: its dispatch is in flight. */
  taken(taskId: string, tenantId: string, tier: PriorityTier): QueuedRef | undefined {
    const state = this.#states.get(keyOf(tenantId, tier));
    const ref = state?.window.get(taskId);
    if (!state || !ref) return undefined;
    state.window.delete(taskId);
    state.taken.set(taskId, ref);
    return ref;
  }

  /** The QUEUED item at `fromFence` was dispatched: the index may list it for a while longer. */
  dispatched(ref: QueuedRef, fromFence: number, nowMs: number): void {
    this.#prune(nowMs);
    const key = keyOf(ref.tenantId, ref.priority);
    const state = this.#states.get(key);
    if (state) {
      state.taken.delete(ref.taskId);
      state.aside.delete(ref.taskId);
      state.throttles = 0;
      // Emptied. With more known in the index (`hasMore`) the refill reads it; under a promise
      // the rereads look for unannounced work. Otherwise everything due came announced: the
      // next announcement goes straight in, and the deregistration probe looks G after the last
      // one. (Reading at every emptying made each next announcement of a lightly loaded tenant
      // wait for that read, and on AWS a read answered before the index listed the task left
      // it to the probe, G later.)
      if (state.window.size + state.taken.size === 0 && !state.hasMore && state.registration === 'registered') {
        state.probeAtMs = this.#quietFromMs(state, nowMs);
      }
    }
    const recent = dispatchKey(ref.taskId, fromFence);
    if (!this.#recent.has(recent)) {
      this.#recentPerKey.set(key, (this.#recentPerKey.get(key) ?? 0) + 1);
      this.#recentOwner.set(recent, key);
    }
    this.#recent.set(recent, nowMs + this.#options.indexLagMs);
  }

  /** A taken ref is waiting again (its dispatch was not written): back into the window. */
  returned(ref: QueuedRef, nowMs = Number.NEGATIVE_INFINITY): boolean {
    const state = this.#states.get(keyOf(ref.tenantId, ref.priority));
    if (!state) return false;
    state.taken.delete(ref.taskId);
    if (nowMs < state.backoffUntilMs) {
      // Backing off: read again from the index once the back-off ends.
      state.hasMore = true;
      return false;
    }
    state.window.set(ref.taskId, ref);
    return true;
  }

  /**
   * DynamoDB throttled a write or read of this tenant-tier (its index partitions are hot; the
   * SDK's retries did not get through). It backs off alone: no index reads and nothing offered
   * to the engine until the back-off ends (500 ms, doubling per throttle in a row, at most 8 s),
   * then its window is read again from the index. Returns the refs that left the window, for the
   * engine to forget; every other tenant-tier goes on as before.
   */
  throttled(tenantId: string, tier: PriorityTier, nowMs: number): QueuedRef[] {
    const state = this.#states.get(keyOf(tenantId, tier));
    if (!state) return [];
    state.queryInFlight = false;
    // Several of its writes refused in one round are one throttle, not several.
    if (nowMs >= state.backoffUntilMs) {
      state.throttles++;
      const base = this.#options.backoffMs ?? DEFAULT_BACKOFF_MS;
      const max = this.#options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
      state.backoffUntilMs = nowMs + Math.min(max, base * 2 ** Math.min(30, state.throttles - 1));
    }
    const left = [...state.window.values()];
    state.window.clear();
    state.hasMore = true;
    return left;
  }

  /** Until when the tenant-tier backs off (0 or in the past: it does not). */
  backoffUntilOf(tenantId: string, tier: PriorityTier): number {
    return this.#states.get(keyOf(tenantId, tier))?.backoffUntilMs ?? 0;
  }

  /** The task is no longer waiting (the item says so): out of the window. */
  dropped(taskId: string, tenantId: string, tier: PriorityTier): void {
    const state = this.#states.get(keyOf(tenantId, tier));
    if (!state) return;
    state.window.delete(taskId);
    state.taken.delete(taskId);
    // Its place may go to work the index holds beyond the window.
    state.hasMore = true;
  }

  /** Every ref held (in windows), for the snapshot and for a clean stop. */
  *refs(): Generator<QueuedRef> {
    for (const state of this.#states.values()) yield* state.window.values();
  }

  /**
   * Per tenant-tier in memory: how many refs it holds and the oldest `agingFrom` among them
   * (undefined: none held). What the backlog view adds to its counts (scheduler/backlog.ts).
   */
  heads(): { tenantId: string; tier: PriorityTier; held: number; oldestAgingFromMs: number | undefined }[] {
    return [...this.#states.values()].map((state) => {
      let oldest: number | undefined;
      for (const ref of [...state.window.values(), ...state.taken.values()]) {
        if (oldest === undefined || ref.agingFromMs < oldest) oldest = ref.agingFromMs;
      }
      return {
        tenantId: state.tenantId,
        tier: state.tier,
        held: state.window.size + state.taken.size,
        oldestAgingFromMs: oldest,
      };
    });
  }

  /** Per tier, the oldest `agingFrom` among held refs (undefined: none of that tier held). */
  oldestAgingFromMs(): Map<PriorityTier, number> {
    const oldest = new Map<PriorityTier, number>();
    for (const state of this.#states.values()) {
      for (const ref of [...state.window.values(), ...state.taken.values()]) {
        const current = oldest.get(state.tier);
        if (current === undefined || ref.agingFromMs < current) oldest.set(state.tier, ref.agingFromMs);
      }
    }
    return oldest;
  }

  get #graceMs(): number {
    return this.#options.promiseGraceMs ?? this.#options.indexLagMs;
  }

  /**
   * From when an empty index read of the tenant-tier can be believed: G after its last
   * announcement, and G after its promise ends (a task written under the promise, unannounced,
   * shows in the index by then).
   */
  /** The earliest due time after `afterMs` of the refs set aside; NEVER without one. */
  #nextDueAside(state: State, afterMs: number): number {
    let next = NEVER;
    for (const aside of state.aside.values()) if (aside.runAtMs > afterMs) next = Math.min(next, aside.runAtMs);
    return next;
  }

  /**
   * An announcement clears the probe (the index is read G after the last one); one that admits
   * nothing into an emptied tenant-tier must set it again, or nothing reads the partition for work
   * a submit left unannounced or whose announcement came early (chaos seed 9: a duplicate of a
   * dispatched task's announcement cleared it, and two tasks waited for the next scheduler).
   */
  #probeWhenEmpty(state: State, nowMs: number): void {
    if (state.window.size + state.taken.size === 0 && !state.hasMore && state.registration === 'registered') {
      state.probeAtMs = this.#quietFromMs(state, nowMs);
    }
  }

  #quietFromMs(state: State, issuedAtMs: number): number {
    const afterPromise = state.scanUntilMs > 0 ? state.scanUntilMs + this.#graceMs : 0;
    return Math.max(issuedAtMs, state.lastAnnouncedMs + this.#options.indexLagMs, afterPromise);
  }

  /** An announced ref left to the reads, remembered (the latest announcement of a task wins). */
  #setAside(state: State, ref: QueuedRef): void {
    if (state.aside.size < ASIDE_CAP || state.aside.has(ref.taskId)) state.aside.set(ref.taskId, ref);
  }

  #held(state: State, taskId: string): boolean {
    return state.window.has(taskId) || state.taken.has(taskId);
  }

  #state(tenantId: string, tier: PriorityTier, nowMs: number): State {
    const key = keyOf(tenantId, tier);
    let state = this.#states.get(key);
    if (!state) {
      state = {
        tenantId,
        tier,
        registration: 'unregistered',
        token: undefined,
        window: new Map(),
        taken: new Map(),
        hasMore: false,
        aside: new Map(),
        backlogged: false,
        scanUntilMs: 0,
        promiseInFlight: false,
        nextDueMs: NEVER,
        lastAnnouncedMs: nowMs,
        lastQueryMs: Number.NEGATIVE_INFINITY,
        queryInFlight: false,
        probeAtMs: undefined,
        backoffUntilMs: 0,
        throttles: 0,
        unreadSinceRestore: false,
      };
      this.#states.set(key, state);
    }
    return state;
  }

  /** Forget dispatches older than the index lag (Map iteration is insertion order, oldest first). */
  #prune(nowMs: number): void {
    for (const [recent, untilMs] of this.#recent) {
      if (untilMs > nowMs) break;
      this.#recent.delete(recent);
      const key = this.#recentOwner.get(recent);
      this.#recentOwner.delete(recent);
      if (key === undefined) continue;
      const left = (this.#recentPerKey.get(key) ?? 1) - 1;
      if (left > 0) this.#recentPerKey.set(key, left);
      else this.#recentPerKey.delete(key);
    }
  }
}
