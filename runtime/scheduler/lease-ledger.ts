/**
 * A scheduler's side of the lease ledger (adapters/lease-pages.ts): before a round's dispatch
 * writes it records the round's attempts on a page, and it deletes a page once every attempt on
 * it is settled: ended (a completion, the reconciler's read), or shown by a consistent read never
 * to have landed. So a successor finds every leased task on a page (it reads them all at resume),
 * whatever moment its predecessor stopped at.
 *
 *   record (before the writes) ─▶ page put ─▶ dispatch writes ─▶ … ─▶ settle each attempt ─▶ page deleted
 *
 * It looks after the pages of its own shard, and shard 0 also after those of shards that no
 * longer run (the shard count went down): pages nobody deletes would be read forever. An attempt
 * of another shard's tenant on a page it looks after is settled from the item (the reconciler).
 */
import { randomBytes } from 'node:crypto';
import {
  keepLatestAttempt,
  type LeasePage,
  type LeasePageKey,
  type LeasePageStore,
  MAX_REFS_PER_PAGE,
  pageKeyOf,
  partitionOf,
} from '../adapters/lease-pages.ts';
import type { LeasedTaskRef } from '../adapters/task-store.ts';
import type { TaskLogger } from '../core/logger.ts';
import type { ShardScope } from '../core/shards.ts';
import type { TaskRepository } from './ports.ts';

/** A ref as the ledger lists it: when its page was written, and whether this scheduler deletes that page. */
export interface LedgerRef extends LeasedTaskRef {
  readonly recordedAtMs: number;
  /** On a page this scheduler looks after: it settles the attempt, whoever's tenant it is. */
  readonly tracked: boolean;
}

/**
 * A page recorded this recently is kept in view though a read did not show it: its put may still
 * be landing (the same window a concurrency key's holder is kept: dispatch.ts KEY_HOLDER_GRACE_MS).
 */
export const PAGE_LANDING_GRACE_MS = 60_000;

interface TrackedPage {
  readonly key: LeasePageKey;
  readonly recordedAtMs: number;
  /** Attempts (`taskId#fence`) on it not yet settled. */
  readonly live: Set<string>;
  deleting: boolean;
}

const attemptOf = (taskId: string, fence: number) => `${taskId}#${fence}`;
const pageIdOf = (key: LeasePageKey) => `${key.partition}|${key.page}`;

export class LeaseLedger {
  readonly #pages: LeasePageStore;
  readonly #shard: ShardScope;
  readonly #logger: TaskLogger | undefined;
  /** This scheduler's own mark in its page keys, so two holders of one shard never write the same key. */
  readonly #writer = randomBytes(4).toString('hex');
  #seq = 0;
  readonly #tracked = new Map<string, TrackedPage>();
  readonly #pagesOf = new Map<string, Set<string>>();
  /** Deletes under way (a scheduler that stops waits for them: a page left behind wakes a scheduler). */
  readonly #deleting = new Set<Promise<void>>();

  constructor(pages: LeasePageStore, shard: ShardScope, logger?: TaskLogger) {
    this.#pages = pages;
    this.#shard = shard;
    this.#logger = logger;
  }

  /** Pages this scheduler looks after (their attempts not all settled, or their delete pending). */
  get trackedPages(): number {
    return this.#tracked.size;
  }

  /**
   * Record the attempts a round is about to write (their dispatched fences), a page per
   * MAX_REFS_PER_PAGE. Resolves once every page is stored; throws when one may not be, and then
   * no dispatch write may go ahead (a page that did land is found by the next `load`).
   */
  async record(refs: readonly LeasedTaskRef[], nowMs: number): Promise<void> {
    const pages: LeasePage[] = [];
    for (let from = 0; from < refs.length; from += MAX_REFS_PER_PAGE) {
      const seq = this.#seq++;
      pages.push({
        partition: partitionOf(seq),
        page: pageKeyOf(this.#shard.shard, nowMs, this.#writer, seq),
        shard: this.#shard.shard,
        recordedAtMs: nowMs,
        refs: refs.slice(from, from + MAX_REFS_PER_PAGE),
      });
    }
    const outcomes = await Promise.allSettled(pages.map((page) => this.#pages.put(page)));
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    for (const page of pages) this.#track(page, page.refs);
  }

  /**
   * The attempt holds no lease any more (or never will): off its pages, and a page with nothing
   * left on it is deleted. Never throws; a failed delete is tried again by `flush`.
   */
  settle(taskId: string, fence: number): void {
    const attempt = attemptOf(taskId, fence);
    const pageIds = this.#pagesOf.get(attempt);
    if (!pageIds) return;
    this.#pagesOf.delete(attempt);
    for (const pageId of pageIds) {
      const page = this.#tracked.get(pageId);
      if (!page) continue;
      page.live.delete(attempt);
      if (page.live.size === 0) this.#startDelete(pageId, page);
    }
  }

  /** Deletes under way waited for, and those not done (one failed) tried again and waited for. */
  async flush(): Promise<void> {
    await Promise.all([
      ...this.#deleting,
      ...[...this.#tracked]
        .filter(([, page]) => page.live.size === 0 && !page.deleting)
        .map(([id, page]) => this.#delete(id, page)),
    ]);
  }

  /**
   * Every attempt on every page, read consistently, but those this scheduler settled: the
   * leased tasks as the ledger knows them (attempts that ended or never landed among them, until
   * settled; the caller reads the items). Pages of this scheduler's keeping it did not know
   * (its predecessor's; one whose put answered with an error but landed) are looked after from now.
   */
  async load(nowMs: number): Promise<LedgerRef[]> {
    const pages = await this.#pages.all();
    const seen = new Set<string>();
    const refs: LedgerRef[] = [];
    for (const page of pages) {
      const pageId = pageIdOf(page);
      seen.add(pageId);
      const tracked = this.#keeps(page.shard);
      if (tracked && !this.#tracked.has(pageId)) this.#track(page, page.refs);
      const live = this.#tracked.get(pageId)?.live;
      for (const ref of page.refs) {
        if (live && !live.has(attemptOf(ref.taskId, ref.fence))) continue;
        refs.push({ ...ref, recordedAtMs: page.recordedAtMs, tracked });
      }
    }
    // Gone from the table: deleted (by this scheduler, or by a predecessor of the same keeping).
    for (const [pageId, page] of this.#tracked) {
      if (!seen.has(pageId) && !page.deleting && nowMs - page.recordedAtMs > PAGE_LANDING_GRACE_MS) {
        this.#untrack(pageId, page);
      }
    }
    return refs;
  }

  /** Its own shard's pages, and shard 0 those of shards beyond the count. */
  #keeps(shard: number): boolean {
    return shard === this.#shard.shard || (this.#shard.shard === 0 && shard >= this.#shard.shards);
  }

  #track(key: LeasePageKey & { readonly recordedAtMs: number }, refs: readonly LeasedTaskRef[]): void {
    const pageId = pageIdOf(key);
    const live = new Set(refs.map((ref) => attemptOf(ref.taskId, ref.fence)));
    this.#tracked.set(pageId, {
      key: { partition: key.partition, page: key.page },
      recordedAtMs: key.recordedAtMs,
      live,
      deleting: false,
    });
    for (const attempt of live) {
      const pageIds = this.#pagesOf.get(attempt) ?? new Set<string>();
      pageIds.add(pageId);
      this.#pagesOf.set(attempt, pageIds);
    }
    if (live.size === 0) this.#startDelete(pageId, this.#tracked.get(pageId)!);
  }

  #startDelete(pageId: string, page: TrackedPage): void {
    const deleting = this.#delete(pageId, page).finally(() => this.#deleting.delete(deleting));
    this.#deleting.add(deleting);
  }

  #untrack(pageId: string, page: TrackedPage): void {
    this.#tracked.delete(pageId);
    for (const attempt of page.live) {
      const pageIds = this.#pagesOf.get(attempt);
      pageIds?.delete(pageId);
      if (pageIds?.size === 0) this.#pagesOf.delete(attempt);
    }
  }

  async #delete(pageId: string, page: TrackedPage): Promise<void> {
    page.deleting = true;
    try {
      await this.#pages.delete(page.key);
      this.#untrack(pageId, page);
    } catch (error) {
      page.deleting = false;
      this.#logger?.warn('could not delete a lease ledger page (tried again at the next pass)', {
        page: page.key.page,
        error: String(error),
      });
    }
  }
}

/** What lists leased tasks: the store, and the ledger when the store has one. */
export interface LeaseSources {
  readonly store: Pick<TaskRepository, 'listLeased' | 'listLegacyLeased'>;
  readonly ledger?: LeaseLedger | undefined;
}

/**
 * The leased tasks as listed now: the latest attempt of each task (by fence) from the ledger and
 * older versions' indexes, and every attempt on the ledger (to settle those that are over). A
 * store without a ledger (in-memory fakes) lists them itself.
 */
export async function listedLeases(
  sources: LeaseSources,
  nowMs: number,
): Promise<{ latest: Map<string, LeasedTaskRef>; onLedger: LedgerRef[] }> {
  const latest = new Map<string, LeasedTaskRef>();
  const take = (ref: LeasedTaskRef) => keepLatestAttempt(latest, ref);
  const { store, ledger } = sources;
  if (!ledger) {
    for await (const ref of store.listLeased()) take(ref);
    return { latest, onLedger: [] };
  }
  const onLedger = await ledger.load(nowMs);
  for (const ref of onLedger) take(ref);
  if (store.listLegacyLeased) for await (const ref of store.listLegacyLeased()) take(ref);
  return { latest, onLedger };
}
