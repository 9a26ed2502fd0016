/**
 * One sharded scheduler's slice of the pools (issue 24 item 6; the maths in
 * runtime/core/capacity-slices.ts). The scheduler calls `sync` every tick (at resume, once it
 * knows its running tasks): every `everyMs` it reads the shared record, reports what it holds,
 * the weight of its busy tenants and its need, and writes its new allowance conditionally on the
 * version read (refused: computed again from the record the refusal returned); the policy then
 * starts tasks only within that allowance.
 *
 * Never more than the record says, whatever fails:
 * - a smaller allowance applies at once, before the write (nothing starts above it meanwhile);
 *   a larger one only once the write succeeded;
 * - an allowance not renewed by a successful write within `lifetimeMs` (default half the lease
 *   TTL) drops to nothing: the other shards forget this one's claim `staleAfterMs +
 *   heldAtMostMs` after its last write, by when every task it started before the drop has ended
 *   (the margin covers clocks that disagree by up to `staleAfterMs − lifetimeMs`);
 * - before its first successful write it starts nothing.
 * With one shard none of this runs: the policy keeps the whole pools and nothing is written.
 */
import { nextSlices, releasedSlices, type SliceOptions, SliceSupersededError } from '../core/capacity-slices.ts';
import type { TaskLogger } from '../core/logger.ts';
import type { SchedulingPolicy } from '../core/policy/policy.ts';
import type { ResourceVector } from '../core/policy/types.ts';
import type { CapacitySlicesStore } from './ports.ts';

/** How often a shard reports by default. */
export const SLICE_EVERY_MS = 2_000;
/** The scheduler lease's TTL (scheduler-loop.ts): a shard silent longer has stopped. */
export const SLICE_STALE_AFTER_MS = 30_000;
/** Attempts of one report when other shards' writes come first. */
const ATTEMPTS = 3;
/** A refused report tries again after this many ms times (its shard + 1): deterministic, and apart per shard. */
const RETRY_SPACING_MS = 3;

export interface CapacitySliceDeps {
  readonly control: CapacitySlicesStore;
  readonly policy: Pick<SchedulingPolicy, 'sliceReport' | 'setAllowance'>;
  /** This scheduler's shard, of `shards`. */
  readonly shard: number;
  readonly shards: number;
  /** The whole pools (`capacityOf(config.pools)`). */
  readonly capacity: ResourceVector;
  /** The longest one task holds its pool, in ms (the larger of `holdSecondsOf(config)`). */
  readonly heldAtMostMs: number;
  /** Default SLICE_EVERY_MS. */
  readonly everyMs?: number;
  /** Default SLICE_STALE_AFTER_MS. */
  readonly staleAfterMs?: number;
  /** Default half of staleAfterMs. */
  readonly lifetimeMs?: number;
  /** The record's name (one per pool set). Default 'pools'. */
  readonly poolSet?: string;
  readonly logger?: TaskLogger;
}

const NOTHING: ResourceVector = { slots: 0, milliVcpu: 0, memoryMiB: 0 };
const smaller = (a: ResourceVector, b: ResourceVector): ResourceVector => ({
  slots: Math.min(a.slots, b.slots),
  milliVcpu: Math.min(a.milliVcpu, b.milliVcpu),
  memoryMiB: Math.min(a.memoryMiB, b.memoryMiB),
});

export class CapacitySlice {
  readonly #deps: CapacitySliceDeps;
  readonly #options: SliceOptions;
  readonly #everyMs: number;
  readonly #lifetimeMs: number;
  readonly #poolSet: string;
  #allowance: ResourceVector = NOTHING;
  /** When the allowance was last written (the entry's reportedAtMs); undefined: never. */
  #writtenAtMs: number | undefined;
  #lastAttemptMs = Number.NEGATIVE_INFINITY;
  /** Released, or superseded by a newer holder of the shard's lease: it starts nothing more. */
  #stopped = false;
  /** The shard's lease token this scheduler holds (0: none, tests and tools). */
  #token = 0;

  constructor(deps: CapacitySliceDeps) {
    this.#deps = deps;
    const staleAfterMs = deps.staleAfterMs ?? SLICE_STALE_AFTER_MS;
    this.#options = { shards: deps.shards, staleAfterMs, heldAtMostMs: deps.heldAtMostMs };
    this.#everyMs = deps.everyMs ?? SLICE_EVERY_MS;
    this.#lifetimeMs = deps.lifetimeMs ?? staleAfterMs / 2;
    this.#poolSet = deps.poolSet ?? 'pools';
    // Nothing starts before the first allowance is written.
    deps.policy.setAllowance(NOTHING);
  }

  /** The scheduler took or renewed the shard's lease: its entry is written under this token. */
  holdLease(token: number): void {
    this.#token = token;
  }

  /** What the policy may fill now. */
  get allowance(): ResourceVector {
    return { ...this.#allowance };
  }

  /** Report when one is due; in any case drop an allowance too old to use. */
  async sync(nowMs: number): Promise<void> {
    if (!this.#stopped && nowMs - this.#lastAttemptMs >= this.#everyMs) await this.update(nowMs);
    this.#expire(nowMs);
  }

  /** Read, compute, write: true when this shard's new allowance was written. */
  async update(nowMs: number): Promise<boolean> {
    if (this.#stopped) return false;
    this.#lastAttemptMs = nowMs;
    try {
      let state = await this.#deps.control.getCapacitySlices(this.#poolSet);
      // Every shard may report at the same moment (they start together): enough attempts for
      // each to get through, spaced by shard so that they stop colliding.
      const attempts = Math.max(ATTEMPTS, this.#deps.shards + 2);
      for (let attempt = 0; attempt < attempts; attempt++) {
        if (attempt > 0) await sleep(RETRY_SPACING_MS * (this.#deps.shard + 1));
        // One synchronous step from the report to the shrink: nothing starts in between.
        const report = { shard: this.#deps.shard, token: this.#token, ...this.#deps.policy.sliceReport(nowMs) };
        const decision = nextSlices(state, report, this.#deps.capacity, nowMs, this.#options);
        this.#apply(smaller(this.#allowance, decision.allowance));
        const write = await this.#deps.control.putCapacitySlices(decision.next, state?.version ?? 0, this.#poolSet);
        if (write.written) {
          this.#writtenAtMs = nowMs;
          this.#apply(decision.allowance);
          return true;
        }
        state = write.current;
      }
      this.#deps.logger?.debug?.('capacity slices kept moving: the allowance waits for the next report', {
        shard: this.#deps.shard,
      });
    } catch (error) {
      if (error instanceof SliceSupersededError) {
        this.#stopped = true;
        this.#deps.logger?.warn('capacity slice superseded: a newer scheduler holds this shard', {
          ...(error.details as object),
        });
        return false;
      }
      this.#deps.logger?.warn('could not report capacity slices: the allowance does not grow', {
        shard: this.#deps.shard,
        error: String(error),
      });
    } finally {
      this.#expire(nowMs);
    }
    return false;
  }

  /**
   * The scheduler stops cleanly: it starts nothing more, and its entry claims only what its tasks
   * still hold, so the other shards need not wait for it to be forgotten. Best effort.
   */
  async release(nowMs: number): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#apply(NOTHING);
    try {
      let state = await this.#deps.control.getCapacitySlices(this.#poolSet);
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const { held } = this.#deps.policy.sliceReport(nowMs);
        const next = releasedSlices(state, this.#deps.shard, held, nowMs, this.#options, this.#token);
        const write = await this.#deps.control.putCapacitySlices(next, state?.version ?? 0, this.#poolSet);
        if (write.written) return;
        state = write.current;
      }
    } catch (error) {
      this.#deps.logger?.warn('could not release capacity slices', { shard: this.#deps.shard, error: String(error) });
    }
  }

  #expire(nowMs: number): void {
    const fresh = this.#writtenAtMs !== undefined && nowMs - this.#writtenAtMs <= this.#lifetimeMs;
    if (!fresh || this.#stopped) this.#apply(NOTHING);
  }

  #apply(allowance: ResourceVector): void {
    this.#allowance = { ...allowance };
    this.#deps.policy.setAllowance(this.#allowance);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
