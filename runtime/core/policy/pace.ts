/**
 * How fast a pool frees slots: the pace the wait bound may rest on (bound.ts `paceBoundSeconds`).
 *
 * The engine counts, per pool, the slots freed (a task released: ended, or its dispatch failed) in
 * 10 s buckets. The pace it reports is the fewest freed in any of the six whole buckets before
 * now, per second: what the pool kept up through its slowest 10 s of the last minute. It reports
 * none until it has watched a whole minute (or taken a predecessor's count over, `restore`), so a
 * scheduler that starts afresh, or a pool idle for a while, gives the timeout bound only.
 *
 * A successor adds its own count to its predecessor's (`restore` at its start). Releases the
 * predecessor saw after its last save are lost with it (the count errs low); a completion both
 * saw at a hand-over counts twice (a few slots, at most once a hand-over). Either way the bound
 * says what it assumed (`assumedFreed`), so whoever checks it counts what the pool really freed.
 */

export const PACE_BUCKET_MS = 10_000;
export const PACE_WINDOW_MS = 60_000;
const BUCKETS = PACE_WINDOW_MS / PACE_BUCKET_MS;

/** What a pool's count carries across a restart (kept in the rotation's memory). */
export interface FreedSlotsState {
  /** Since when slots were counted (epoch ms): the pace needs a whole window of it. */
  readonly sinceMs: number;
  /** `[bucket start (epoch ms), slots freed in it]`, the last minute's and the current one. */
  readonly buckets: readonly (readonly [number, number])[];
}

export class FreedSlots {
  #sinceMs: number | undefined;
  readonly #buckets = new Map<number, number>();

  /** Counting runs from the first instant the engine sees, unless a predecessor's count goes back further. */
  observe(nowMs: number): void {
    if (this.#sinceMs === undefined || nowMs < this.#sinceMs) this.#sinceMs = nowMs;
  }

  /** One slot freed at `nowMs`. */
  record(nowMs: number): void {
    this.observe(nowMs);
    const bucket = bucketOf(nowMs);
    this.#buckets.set(bucket, (this.#buckets.get(bucket) ?? 0) + 1);
    this.#forget(nowMs);
  }

  /** The fewest slots freed in any whole 10 s of the minute before `nowMs`, per second; null before a minute was watched. */
  perSecond(nowMs: number): number | null {
    const current = bucketOf(nowMs);
    const first = current - BUCKETS * PACE_BUCKET_MS;
    if (this.#sinceMs === undefined || this.#sinceMs > first) return null;
    let fewest = Number.POSITIVE_INFINITY;
    for (let bucket = first; bucket < current; bucket += PACE_BUCKET_MS) {
      fewest = Math.min(fewest, this.#buckets.get(bucket) ?? 0);
    }
    return fewest / (PACE_BUCKET_MS / 1000);
  }

  state(nowMs: number): FreedSlotsState {
    this.#forget(nowMs);
    return {
      sinceMs: this.#sinceMs ?? nowMs,
      buckets: [...this.#buckets].sort((a, b) => a[0] - b[0]),
    };
  }

  /** Take a predecessor's count over: the earlier start, and per bucket the larger count. */
  restore(state: FreedSlotsState): void {
    if (!Number.isFinite(state.sinceMs)) return;
    this.observe(state.sinceMs);
    for (const [bucket, count] of state.buckets ?? []) {
      if (!Number.isFinite(bucket) || !Number.isFinite(count) || bucket % PACE_BUCKET_MS !== 0) continue;
      this.#buckets.set(bucket, Math.max(this.#buckets.get(bucket) ?? 0, count));
    }
  }

  #forget(nowMs: number): void {
    const oldest = bucketOf(nowMs) - BUCKETS * PACE_BUCKET_MS;
    for (const bucket of this.#buckets.keys()) if (bucket < oldest) this.#buckets.delete(bucket);
  }
}

/** What a pool's record of its use carries across a restart (kept in the rotation's memory). */
export interface UsedSlotsState {
  readonly sinceMs: number;
  /** `[bucket start (epoch ms), most slots in use in it, slots in use at its end]`. */
  readonly buckets: readonly (readonly [number, number, number])[];
  /** Slots in use at the start of the oldest bucket kept. */
  readonly before: number;
}

/**
 * How full a pool has been: the most slots in use in any 10 s of the last minute, the headroom
 * answer's evidence (explain.ts). A level holds until it changes, so a bucket in which nothing
 * changed was as full as the level it began with. None before a whole minute was watched.
 */
export class UsedSlots {
  #sinceMs: number | undefined;
  /** Per bucket: the most in use in it, and the level at its end. */
  readonly #buckets = new Map<number, { peak: number; last: number }>();
  /** The level before the oldest bucket kept. */
  #before = 0;
  #level = 0;

  observe(nowMs: number): void {
    if (this.#sinceMs === undefined || nowMs < this.#sinceMs) this.#sinceMs = nowMs;
  }

  /** The pool has `used` slots in use from `nowMs` on. */
  record(nowMs: number, used: number): void {
    this.observe(nowMs);
    const bucket = bucketOf(nowMs);
    let entry = this.#buckets.get(bucket);
    if (!entry) {
      // A new 10 s began: the only time an old one can have left the window (on every dispatch
      // and release, nothing else is done).
      entry = { peak: this.#level, last: this.#level };
      this.#buckets.set(bucket, entry);
      this.#forget(nowMs);
    }
    entry.peak = Math.max(entry.peak, used);
    entry.last = used;
    this.#level = used;
  }

  /** The most slots in use in any 10 s of the minute before `nowMs`, and since; null before a minute was watched. */
  peak(nowMs: number): number | null {
    const current = bucketOf(nowMs);
    const first = current - BUCKETS * PACE_BUCKET_MS;
    if (this.#sinceMs === undefined || this.#sinceMs > first) return null;
    this.#forget(nowMs);
    let level = this.#before;
    let most = 0;
    const ordered = [...this.#buckets].sort((a, b) => a[0] - b[0]);
    let next = 0;
    for (let bucket = first; bucket <= current; bucket += PACE_BUCKET_MS) {
      while (next < ordered.length && (ordered[next] as [number, unknown])[0] < bucket) {
        level = (ordered[next] as [number, { last: number }])[1].last;
        next++;
      }
      const entry =
        next < ordered.length && (ordered[next] as [number, unknown])[0] === bucket ? ordered[next] : undefined;
      most = Math.max(most, level, entry ? entry[1].peak : 0);
    }
    return Math.max(most, this.#level);
  }

  state(nowMs: number): UsedSlotsState {
    this.#forget(nowMs);
    return {
      sinceMs: this.#sinceMs ?? nowMs,
      buckets: [...this.#buckets].sort((a, b) => a[0] - b[0]).map(([bucket, { peak, last }]) => [bucket, peak, last]),
      before: this.#before,
    };
  }

  /** Take a predecessor's record over: the earlier start, and per bucket the fuller (a restart errs full). */
  restore(state: UsedSlotsState): void {
    if (!Number.isFinite(state.sinceMs)) return;
    this.observe(state.sinceMs);
    if (Number.isFinite(state.before)) this.#before = Math.max(this.#before, state.before);
    for (const [bucket, peak, last] of state.buckets ?? []) {
      if (![bucket, peak, last].every(Number.isFinite) || bucket % PACE_BUCKET_MS !== 0) continue;
      const mine = this.#buckets.get(bucket);
      this.#buckets.set(bucket, { peak: Math.max(mine?.peak ?? 0, peak), last: Math.max(mine?.last ?? 0, last) });
    }
  }

  #forget(nowMs: number): void {
    const oldest = bucketOf(nowMs) - BUCKETS * PACE_BUCKET_MS;
    for (const [bucket, entry] of [...this.#buckets].sort((a, b) => a[0] - b[0])) {
      if (bucket >= oldest) break;
      this.#before = entry.last;
      this.#buckets.delete(bucket);
    }
  }
}

const bucketOf = (ms: number) => Math.floor(ms / PACE_BUCKET_MS) * PACE_BUCKET_MS;

/** Runs that must have ended in the last minute before a tenant's longest is trusted. */
export const RECENT_RUNS_NEEDED = 3;

/**
 * How long each tenant's tasks ran lately (dispatch to release), for the pace bound's t₁: a
 * tenant's running tasks are taken to end within the longest any of its tasks ran in the last
 * minute, once at least `RECENT_RUNS_NEEDED` ended in it. An estimate, said so where it is used,
 * and checked like the pace; not kept across restarts (a fresh scheduler falls back to timeouts).
 */
export class RecentRuns {
  readonly #byTenant = new Map<string, Map<number, { longestMs: number; count: number }>>();

  record(tenantId: string, endMs: number, runMs: number): void {
    let buckets = this.#byTenant.get(tenantId);
    if (!buckets) {
      buckets = new Map();
      this.#byTenant.set(tenantId, buckets);
    }
    const bucket = bucketOf(endMs);
    const entry = buckets.get(bucket) ?? { longestMs: 0, count: 0 };
    entry.longestMs = Math.max(entry.longestMs, Math.max(0, runMs));
    entry.count++;
    buckets.set(bucket, entry);
  }

  /** The longest run of the tenant's tasks that ended in the last minute (ms), or null with too few. */
  longestMs(tenantId: string, nowMs: number): number | null {
    const buckets = this.#byTenant.get(tenantId);
    if (!buckets) return null;
    const oldest = bucketOf(nowMs) - PACE_WINDOW_MS;
    let longest = 0;
    let count = 0;
    for (const [bucket, entry] of buckets) {
      if (bucket < oldest) continue;
      longest = Math.max(longest, entry.longestMs);
      count += entry.count;
    }
    return count >= RECENT_RUNS_NEEDED ? longest : null;
  }

  /** Drop what is older than a minute. */
  forget(nowMs: number): void {
    const oldest = bucketOf(nowMs) - PACE_WINDOW_MS;
    for (const [tenantId, buckets] of this.#byTenant) {
      for (const bucket of buckets.keys()) if (bucket < oldest) buckets.delete(bucket);
      if (buckets.size === 0) this.#byTenant.delete(tenantId);
    }
  }
}
