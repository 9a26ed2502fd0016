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

const bucketOf = (ms: number) => Math.floor(ms / PACE_BUCKET_MS) * PACE_BUCKET_MS;
