/**
 * The submit side of the intake promise (docs/intake.md §4(a), "Suppressing the flood's
 * announcements"). While a backlogged tenant-tier's registry item promises that the scheduler
 * reads its index until `scanUntilMs` (and G beyond), a submit of due work may skip its tier
 * message: the scheduler finds the task in the index, in due order, as it finds the backlog.
 *
 *   submit: write the task ─▶ promise in force (cached, or one eventually consistent read)?
 *             yes ─▶ no announcement          no ─▶ announce (and wake) as before
 *
 * Safe because a read can only be old: promises only grow while the item exists, and an item is
 * deleted only G after its promise ended, so an old or cached read shows an earlier promise
 * (announce needlessly), never a later one (skip wrongly). The decision is taken after the task's
 * write returned, so the write lands before `scanUntilMs − MARGIN`, by this host's clock.
 */
import type { ControlStore } from '../adapters/control-store.ts';
import type { PriorityTier } from '../core/task.ts';

/**
 * Skip only while `now < scanUntilMs − PROMISE_MARGIN_MS`. The margin covers the skew between
 * this host's clock and the scheduler's (both sync to NTP / Amazon Time Sync, far under a second)
 * with room to spare; the write itself is already done when the decision is taken.
 */
export const PROMISE_MARGIN_MS = 5_000;
/**
 * How long a read that found no promise in force is trusted. It can only cause announcements,
 * so this trades reads against suppression starting late: a quiet tenant's submits cost at most
 * one read (0.5 RRU) per tenant-tier per this long per API container; a flood's first promise is
 * noticed at most this late by each container.
 */
export const NO_PROMISE_CACHE_MS = 5_000;
/** Tenant-tiers remembered per container; beyond it the cache starts over (it is only a cache). */
const MAX_CACHED = 10_000;

export type PromiseReader = Pick<ControlStore, 'intakePromise'>;

export class IntakePromises {
  readonly #control: PromiseReader;
  readonly #cache = new Map<string, { scanUntilMs: number; readAtMs: number }>();
  /** Reads in flight by tenant-tier: concurrent submits of one tenant-tier share one read. */
  readonly #reading = new Map<string, Promise<number>>();

  constructor(control: PromiseReader) {
    this.#control = control;
  }

  /**
   * Whether a promise covers a task of this tenant-tier written before `nowMs` and due by then. A
   * failed read answers no (announce).
   */
  async covers(tenantId: string, tier: PriorityTier, nowMs: number): Promise<boolean> {
    const key = `${tier}#${tenantId}`;
    const cached = this.#cache.get(key);
    if (cached && nowMs < cached.scanUntilMs - PROMISE_MARGIN_MS) return true;
    if (cached && nowMs - cached.readAtMs < NO_PROMISE_CACHE_MS) return false;
    let reading = this.#reading.get(key);
    if (!reading) {
      reading = this.#control.intakePromise(tenantId, tier).then((scanUntilMs) => {
        if (this.#cache.size >= MAX_CACHED) this.#cache.clear();
        // Every promise read was in force when stored, so the later of two is still right.
        const known = Math.max(scanUntilMs, this.#cache.get(key)?.scanUntilMs ?? 0);
        this.#cache.set(key, { scanUntilMs: known, readAtMs: nowMs });
        return known;
      });
      this.#reading.set(key, reading);
      const forget = () => this.#reading.delete(key);
      reading.then(forget, forget);
    }
    try {
      return nowMs < (await reading) - PROMISE_MARGIN_MS;
    } catch {
      return false; // Unknown: announce.
    }
  }
}
