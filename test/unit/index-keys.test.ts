import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inParallel } from '../../runtime/adapters/in-parallel.ts';
import {
  heldKey,
  heldKeys,
  LEGACY_KEY,
  leasedShardOf,
  mergePages,
  perShardLimit,
  queuedListingOf,
  queueKey,
  queueKeys,
  type ShardPage,
  tenantKeyShardOf,
  tenantStateKey,
  tenantStateKeys,
} from '../../runtime/adapters/index-keys.ts';
import { ACTIVE_SHARDS, LEGACY_ACTIVE_SHARDS, TENANT_KEY_SHARDS } from '../../runtime/infra/resources.ts';

/** Ids shaped as task-service.ts makes them (`tsk_` + 32 hex digits), deterministic. */
const ids = (n: number) =>
  Array.from({ length: n }, (_, i) => `tsk_${createHash('sha256').update(`${i}`).digest('hex').slice(0, 32)}`);

describe('Index key shards', () => {
  it('derive a task’s shard from its id alone: the same id always has the same key', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 64 }), (taskId) => {
        expect(tenantStateKey('acme', 'QUEUED', taskId)).toBe(tenantStateKey('acme', 'QUEUED', `${taskId}`));
        expect(queueKey('acme', 'high', taskId)).toBe(`acme#high#${tenantKeyShardOf(taskId)}`);
        expect(tenantKeyShardOf(taskId)).toBeGreaterThanOrEqual(0);
        expect(tenantKeyShardOf(taskId)).toBeLessThan(TENANT_KEY_SHARDS);
        expect(leasedShardOf(taskId)).toBeLessThan(ACTIVE_SHARDS);
      }),
    );
  });

  it('spread 80,000 task ids within 10 % of an even share on every shard (binomial noise: 2 % a standard deviation at 2,500 a shard)', () => {
    const tenant = new Array<number>(TENANT_KEY_SHARDS).fill(0);
    const leased = new Array<number>(ACTIVE_SHARDS).fill(0);
    for (const id of ids(80_000)) {
      tenant[tenantKeyShardOf(id)]!++;
      leased[leasedShardOf(id)]!++;
    }
    for (const count of tenant) expect(Math.abs(count / (80_000 / TENANT_KEY_SHARDS) - 1)).toBeLessThan(0.1);
    for (const count of leased) expect(Math.abs(count / (80_000 / ACTIVE_SHARDS) - 1)).toBeLessThan(0.1);
  });

  it('list a QUEUED task from byTenantQueue alone when due at submit, else from byTenantState too (held: its own key)', () => {
    const at = '2026-01-01T00:00:00.000Z';
    const later = '2026-01-01T00:05:00.000Z';
    expect(queuedListingOf({ submittedAt: at, runAt: at })).toBe('queue');
    expect(queuedListingOf({ submittedAt: at, runAt: at, waitingOn: [] })).toBe('queue');
    expect(queuedListingOf({ submittedAt: at, runAt: later })).toBe('late');
    expect(queuedListingOf({ submittedAt: at, runAt: at, waitingOn: ['tsk_a'] })).toBe('held');
    const [id] = ids(1);
    expect(heldKey('acme', id!)).toBe(`acme#HELD#${tenantKeyShardOf(id!)}`);
    expect(heldKeys('acme')).toHaveLength(TENANT_KEY_SHARDS);
    expect(heldKeys('acme')).toContain(heldKey('acme', id!));
    // No state's key: a held task is counted apart from the queue's entries.
    expect(tenantStateKeys('acme', 'QUEUED')).not.toContain(heldKey('acme', id!));
  });

  it('are read back from every shard and, for one release, the unsharded key the previous version wrote', () => {
    const keys = queueKeys('acme', 'normal');
    expect(keys).toHaveLength(TENANT_KEY_SHARDS + 1);
    expect(keys[LEGACY_KEY]).toBe('acme#normal');
    for (const id of ids(100)) expect(keys).toContain(queueKey('acme', 'normal', id));
    const states = tenantStateKeys('acme', 'SUCCEEDED');
    expect(states[LEGACY_KEY]).toBe('acme#SUCCEEDED');
    for (const id of ids(100)) expect(states).toContain(tenantStateKey('acme', 'SUCCEEDED', id));
  });

  it('keep the byLeased entries an older version wrote (4 shards) among the shards read', () => {
    expect(ACTIVE_SHARDS % LEGACY_ACTIVE_SHARDS).toBe(0);
    expect(ACTIVE_SHARDS).toBeGreaterThan(LEGACY_ACTIVE_SHARDS);
  });

  it('never collide between tenants, states and the unsharded form', () => {
    const all = [
      ...tenantStateKeys('a', 'QUEUED'),
      ...tenantStateKeys('a#QUEUED', 'QUEUED'),
      ...tenantStateKeys('a#1', 'QUEUED'),
      ...queueKeys('a', 'high'),
      ...queueKeys('a#high', 'low'),
    ];
    expect(new Set(all).size).toBe(all.length);
  });
});

describe('Function: mergePages', () => {
  type Entry = { sort: string; id: string };
  const bySort = (a: Entry, b: Entry) => (a.sort < b.sort ? -1 : a.sort > b.sort ? 1 : 0);
  const merge = (pages: ShardPage<Entry>[], limit: number) => mergePages(pages, limit, bySort, (e) => e.id);
  const entry = (sort: string) => ({ sort, id: sort });

  it('merges partitions oldest first and stops where a partition with more could come first', () => {
    const result = merge(
      [
        { items: [entry('01'), entry('05'), entry('09')], hasMore: false },
        { items: [entry('02'), entry('03')], hasMore: true },
        { items: [entry('04')], hasMore: false },
      ],
      10,
    );
    // The second partition's next entry may be 03.5: nothing after 03 is known to be next.
    expect(result.items.map((e) => e.sort)).toEqual(['01', '02', '03']);
    expect(result.hasMore).toBe(true);
  });

  it('returns at most limit, and says when more remain', () => {
    const pages = [
      { items: [entry('1'), entry('3')], hasMore: false },
      { items: [entry('2'), entry('4')], hasMore: false },
    ];
    expect(merge(pages, 3)).toEqual({ items: [entry('1'), entry('2'), entry('3')], hasMore: true });
    expect(merge(pages, 4)).toEqual({ items: [entry('1'), entry('2'), entry('3'), entry('4')], hasMore: false });
  });

  it('shows an item whose key moved (in two partitions while the index lags) once', () => {
    const result = merge(
      [
        { items: [{ sort: '1', id: 'x' }], hasMore: false },
        { items: [{ sort: '1', id: 'x' }, entry('2')], hasMore: false },
      ],
      10,
    );
    expect(result.items.map((e) => e.id)).toEqual(['x', '2']);
  });

  it('is the exact prefix of the union in order, for any partitions and page sizes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uniqueArray(fc.integer({ min: 0, max: 999 }), { maxLength: 30 }), { minLength: 1, maxLength: 9 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 40 }),
        (partitions, pageSize, limit) => {
          const sorted = partitions.map((p) =>
            [...new Set(p)].sort((a, b) => a - b).map((n) => ({ sort: n.toString().padStart(3, '0'), id: `${n}` })),
          );
          const pages = sorted.map((p) => ({ items: p.slice(0, pageSize), hasMore: p.length > pageSize }));
          const union = [...new Map(sorted.flat().map((e) => [e.id, e])).values()].sort(bySort);
          const result = merge(pages, limit);
          // What it returns is the union's start, in order, with nothing skipped.
          expect(result.items).toEqual(union.slice(0, result.items.length));
          expect(result.items.length).toBeLessThanOrEqual(limit);
          if (!result.hasMore) expect(result.items.length).toBe(Math.min(limit, union.length));
          if (result.items.length < Math.min(limit, union.length)) expect(result.hasMore).toBe(true);
        },
      ),
    );
  });

  it('asks each shard for twice an even share of the page, at least one, at most the page', () => {
    expect(perShardLimit(200)).toBe(Math.ceil(400 / TENANT_KEY_SHARDS));
    expect(perShardLimit(1)).toBe(1);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), (limit) => {
        const perShard = perShardLimit(limit);
        return perShard >= 1 && perShard <= limit && perShard * TENANT_KEY_SHARDS >= Math.min(limit, 2 * limit);
      }),
    );
  });
});

describe('Function: inParallel', () => {
  it('runs at most `concurrency` at once and keeps the input order', async () => {
    let running = 0;
    let peak = 0;
    const results = await inParallel([5, 1, 4, 2, 3], 2, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      return n * 10;
    });
    expect(results).toEqual([50, 10, 40, 20, 30]);
    expect(peak).toBe(2);
  });
});
