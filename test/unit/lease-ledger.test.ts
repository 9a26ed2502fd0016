/**
 * The scheduler's side of the lease ledger (runtime/scheduler/lease-ledger.ts) over an in-memory
 * page store: what it writes, when it deletes, what a successor finds.
 */
import { describe, expect, it } from 'vitest';
import type { LeasePage, LeasePageKey, LeasePageStore } from '../../runtime/adapters/lease-pages.ts';
import type { LeasedTaskRef } from '../../runtime/adapters/task-store.ts';
import { LeaseLedger, PAGE_LANDING_GRACE_MS } from '../../runtime/scheduler/lease-ledger.ts';

class MemoryPages implements LeasePageStore {
  readonly pages = new Map<string, LeasePage>();
  failPuts = 0;
  failDeletes = 0;
  readonly calls: string[] = [];
  async put(page: LeasePage): Promise<void> {
    this.calls.push('put');
    if (this.failPuts > 0) {
      this.failPuts--;
      throw new Error('put failed');
    }
    this.pages.set(`${page.partition}|${page.page}`, page);
  }
  async delete(key: LeasePageKey): Promise<void> {
    this.calls.push('delete');
    if (this.failDeletes > 0) {
      this.failDeletes--;
      throw new Error('delete failed');
    }
    this.pages.delete(`${key.partition}|${key.page}`);
  }
  async all(): Promise<LeasePage[]> {
    return [...this.pages.values()];
  }
}

const ref = (taskId: string, fence = 1, tenantId = 'acme'): LeasedTaskRef => ({
  taskId,
  tenantId,
  priority: 'normal',
  runtime: 'lambda',
  resources: { vcpu: 0.25, memoryMiB: 512 },
  fence,
  runAt: '2026-12-03T10:00:00.000Z',
  agingFrom: '2026-12-03T10:00:00.000Z',
  submittedAt: '2026-12-03T10:00:00.000Z',
  leasedAt: '2026-12-03T10:00:01.000Z',
});

const settled = async () => new Promise((resolve) => setImmediate(resolve));
const ONE_SHARD = { shard: 0, shards: 1 };

describe('Class: LeaseLedger', () => {
  it('writes one page for a round, and deletes it once every attempt on it is settled', async () => {
    const pages = new MemoryPages();
    const ledger = new LeaseLedger(pages, ONE_SHARD);

    await ledger.record([ref('a'), ref('b'), ref('c')], 1_000);
    expect(pages.pages.size).toBe(1);
    ledger.settle('a', 1);
    ledger.settle('b', 1);
    // Another attempt of c (a later fence) is not this one.
    ledger.settle('c', 2);
    await settled();
    expect(pages.pages.size).toBe(1);
    ledger.settle('c', 1);
    await settled();

    expect(pages.pages.size).toBe(0);
    expect(pages.calls).toEqual(['put', 'delete']);
    expect(ledger.trackedPages).toBe(0);
  });

  it('throws when a page cannot be stored, and forgets it (the round writes nothing)', async () => {
    const pages = new MemoryPages();
    pages.failPuts = 1;
    const ledger = new LeaseLedger(pages, ONE_SHARD);

    await expect(ledger.record([ref('a')], 1_000)).rejects.toThrow('put failed');

    expect(ledger.trackedPages).toBe(0);
  });

  it('splits a large round into pages of MAX_REFS_PER_PAGE', async () => {
    const pages = new MemoryPages();
    const ledger = new LeaseLedger(pages, ONE_SHARD);
    const refs = Array.from({ length: 2_500 }, (_, i) => ref(`t${i}`));

    await ledger.record(refs, 1_000);

    expect([...pages.pages.values()].map((page) => page.refs.length)).toEqual([1_000, 1_000, 500]);
    expect(new Set([...pages.pages.values()].map((page) => page.partition)).size).toBe(3);
  });

  it("a successor finds its predecessor's attempts, looks after their pages, and leaves out what it settled", async () => {
    const pages = new MemoryPages();
    await new LeaseLedger(pages, ONE_SHARD).record([ref('a'), ref('b')], 1_000);
    const successor = new LeaseLedger(pages, ONE_SHARD);

    const found = await successor.load(2_000);
    successor.settle('a', 1);
    const again = await successor.load(3_000);
    successor.settle('b', 1);
    await settled();

    expect(found.map((listed) => [listed.taskId, listed.tracked, listed.recordedAtMs])).toEqual([
      ['a', true, 1_000],
      ['b', true, 1_000],
    ]);
    expect(again.map((listed) => listed.taskId)).toEqual(['b']);
    expect(pages.pages.size).toBe(0);
  });

  it("lists another shard's pages without looking after them; shard 0 looks after those of shards no longer run", async () => {
    const pages = new MemoryPages();
    await new LeaseLedger(pages, { shard: 1, shards: 4 }).record([ref('one')], 1_000);
    await new LeaseLedger(pages, { shard: 3, shards: 4 }).record([ref('three')], 1_000);
    // The shard count went down to 2: shard 3 runs no more.
    const shard0 = new LeaseLedger(pages, { shard: 0, shards: 2 });
    const shard1 = new LeaseLedger(pages, { shard: 1, shards: 2 });

    const seenBy0 = await shard0.load(2_000);
    const seenBy1 = await shard1.load(2_000);
    shard0.settle('one', 1);
    shard0.settle('three', 1);
    await settled();

    const tracked = (listed: { taskId: string; tracked: boolean }[]) =>
      Object.fromEntries(listed.map((entry) => [entry.taskId, entry.tracked]));
    expect(tracked(seenBy0)).toEqual({ one: false, three: true });
    expect(tracked(seenBy1)).toEqual({ one: true, three: false });
    // Shard 0 deleted shard 3's page, not shard 1's.
    expect([...pages.pages.values()].map((page) => page.refs[0]!.taskId)).toEqual(['one']);
  });

  it('tries a failed delete again at the next flush', async () => {
    const pages = new MemoryPages();
    pages.failDeletes = 1;
    const ledger = new LeaseLedger(pages, ONE_SHARD);
    await ledger.record([ref('a')], 1_000);

    ledger.settle('a', 1);
    await settled();
    expect(pages.pages.size).toBe(1);
    await ledger.flush();

    expect(pages.pages.size).toBe(0);
    expect(ledger.trackedPages).toBe(0);
  });

  it('flush waits for a delete under way (a scheduler that stops leaves no page behind)', async () => {
    const pages = new MemoryPages();
    const ledger = new LeaseLedger(pages, ONE_SHARD);
    await ledger.record([ref('a')], 1_000);
    let land: () => void = () => {};
    const landed = new Promise<void>((resolve) => {
      land = resolve;
    });
    const slowDelete = pages.delete.bind(pages);
    pages.delete = async (key) => {
      await landed;
      await slowDelete(key);
    };

    ledger.settle('a', 1);
    let flushed = false;
    const flushing = ledger.flush().then(() => {
      flushed = true;
    });
    await settled();
    const beforeLanding = flushed;
    land();
    await flushing;

    expect(beforeLanding).toBe(false);
    expect(pages.pages.size).toBe(0);
  });

  it('keeps in view a page a read did not show while its put may still land, and lets it go after', async () => {
    const pages = new MemoryPages();
    const ledger = new LeaseLedger(pages, ONE_SHARD);
    await ledger.record([ref('a')], 1_000);
    pages.pages.clear();

    await ledger.load(1_000 + PAGE_LANDING_GRACE_MS - 1);
    const kept = ledger.trackedPages;
    await ledger.load(1_000 + PAGE_LANDING_GRACE_MS + 1);

    expect(kept).toBe(1);
    expect(ledger.trackedPages).toBe(0);
  });
});
