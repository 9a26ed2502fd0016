/**
 * The task table's index partition keys and how readers gather them back (pure: no I/O).
 *
 * DynamoDB serves 1,000 write units a second per partition key value, GSIs included, and a GSI
 * that cannot take its write refuses the table write. A tenant's QUEUED entry is written twice
 * per task (added at submit, removed at dispatch) in `byTenantQueue` (and in `byTenantState` for
 * a task due later than submitted: `queuedListingOf`), so one unsharded key caps a tenant at
 * about 500 submits a second. Each of those keys is split
 * into `TENANT_KEY_SHARDS` values by a suffix derived from the task id:
 *
 *   tenantState = `${tenantId}#${state}#${shard}`     queueKey = `${tenantId}#${tier}#${shard}`
 *
 * The shard is a hash of the task id alone, so an item's entry never moves between shards: only
 * a write that changes its state (or tier) moves it, as before. Readers query every shard (a
 * bounded set of parallel Queries) and merge the pages in the order they need.
 *
 * Upgrade: items written by the previous version carry the unsharded key (`${tenantId}#${state}`,
 * `${tenantId}#${tier}`) until their next write. For one release every reader also queries that
 * key (`LEGACY_KEY`, the last of `tenantStateKeys` / `queueKeys`); delete it in the next.
 * The keys cannot collide: a sharded key ends in `#<digits>`, an unsharded one in a state or a tier.
 */
import { ValidationError } from '../core/errors.ts';
import type { PriorityTier, TaskState } from '../core/task.ts';
import { ACTIVE_SHARDS, TENANT_KEY_SHARDS } from '../infra/resources.ts';

/** FNV-1a of the task id: cheap, stable, spreads ids evenly. */
export function taskIdHash(taskId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < taskId.length; i++) {
    hash ^= taskId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The `byLeased` shard of a task (0 … ACTIVE_SHARDS - 1). */
export const leasedShardOf = (taskId: string): number => taskIdHash(taskId) % ACTIVE_SHARDS;

/**
 * The shard of a task's per-tenant keys (0 … TENANT_KEY_SHARDS - 1). A different bit range of
 * the hash than `leasedShardOf`, so the two splits are independent.
 */
export const tenantKeyShardOf = (taskId: string): number => (taskIdHash(taskId) >>> 16) % TENANT_KEY_SHARDS;

const SHARDS = Array.from({ length: TENANT_KEY_SHARDS }, (_, shard) => shard);

/** `byTenantState` key of a task: its tenant, state and shard. */
export const tenantStateKey = (tenantId: string, state: TaskState, taskId: string): string =>
  `${tenantId}#${state}#${tenantKeyShardOf(taskId)}`;

/** Every `byTenantState` key that may hold a tenant's tasks in one state: the shards, then the unsharded key. */
export const tenantStateKeys = (tenantId: string, state: TaskState): string[] => [
  ...SHARDS.map((shard) => `${tenantId}#${state}#${shard}`),
  `${tenantId}#${state}`,
];

/**
 * `byTenantState` key of a QUEUED task held for its dependencies (core/dependencies.ts), which
 * `byTenantQueue` leaves out: `${tenantId}#HELD#${shard}` ("HELD" is no task state, so no state's
 * key is shared). Apart from the other QUEUED entries so that a tenant's QUEUED count is
 * `byTenantQueue`'s plus these, with nothing counted twice.
 */
export const heldKey = (tenantId: string, taskId: string): string => `${tenantId}#HELD#${tenantKeyShardOf(taskId)}`;

/** Every `byTenantState` key of a tenant's held tasks (a key new in this version: no unsharded form). */
export const heldKeys = (tenantId: string): string[] => SHARDS.map((shard) => `${tenantId}#HELD#${shard}`);

/**
 * Where a QUEUED task is listed newest first (by `listKey` = `${submittedAt}#${taskId}`):
 * - `held`: held for dependencies: only in `byTenantState`, under `heldKey`;
 * - `late`: due later than submitted (a delay, a retry's backoff, a dependency's release): in
 *   `byTenantQueue` under `${runAt}#…`, the wrong place for a newest-first listing, so also in
 *   `byTenantState` under the QUEUED key;
 * - `queue`: due when submitted (most tasks): `byTenantQueue` alone, whose `queueSort`
 *   (`${runAt}#${taskId}`) is then its `listKey`. Its submit and dispatch write no
 *   `byTenantState` entry (2 write units a task less).
 */
export type QueuedListing = 'held' | 'late' | 'queue';

export function queuedListingOf(task: {
  readonly runAt: string;
  readonly submittedAt: string;
  readonly waitingOn?: readonly string[] | undefined;
}): QueuedListing {
  if ((task.waitingOn?.length ?? 0) > 0) return 'held';
  return task.runAt === task.submittedAt ? 'queue' : 'late';
}

/** `byTenantQueue` key of a QUEUED task: its tenant, tier and shard. */
export const queueKey = (tenantId: string, tier: PriorityTier, taskId: string): string =>
  `${tenantId}#${tier}#${tenantKeyShardOf(taskId)}`;

/** Every `byTenantQueue` key that may hold a tenant-tier's queued tasks: the shards, then the unsharded key. */
export const queueKeys = (tenantId: string, tier: PriorityTier): string[] => [
  ...SHARDS.map((shard) => `${tenantId}#${tier}#${shard}`),
  `${tenantId}#${tier}`,
];

/** The unsharded key's position in `tenantStateKeys` / `queueKeys` (read for one release). */
export const LEGACY_KEY = TENANT_KEY_SHARDS;

/**
 * How many entries to ask of each shard for a merged page of `limit`: twice an even share (ids
 * hash evenly, so the merged prefix is rarely cut short), never more than `limit`. The unsharded
 * key, which may hold a whole backlog written before the upgrade, is asked the full `limit`.
 */
export const perShardLimit = (limit: number): number =>
  Math.min(limit, Math.max(1, Math.ceil((2 * limit) / TENANT_KEY_SHARDS)));

/** One Query's page of one partition, in the partition's sort order. */
export interface ShardPage<T> {
  readonly items: readonly T[];
  /** The partition holds more entries past the page. */
  readonly hasMore: boolean;
}

/**
 * Merge pages of several partitions into one page in sort order (`compare`), at most `limit`.
 * Only the part every partition has answered for is exact: past the last entry of a partition
 * that has more, that partition's next entries could come first. So the merge stops at the
 * earliest such entry (in `compare` order) and says there is more. Duplicates (an item whose key
 * moved shows in both partitions while the index lags) keep their first occurrence.
 */
export function mergePages<T>(
  pages: readonly ShardPage<T>[],
  limit: number,
  compare: (a: T, b: T) => number,
  idOf: (item: T) => string,
): { items: T[]; hasMore: boolean } {
  let cut: T | undefined;
  for (const page of pages) {
    // More to come and nothing shown (a filtered page): no entry is known to be first.
    if (page.hasMore && page.items.length === 0) return { items: [], hasMore: true };
    const last = page.items.at(-1);
    if (page.hasMore && last !== undefined && (cut === undefined || compare(last, cut) < 0)) cut = last;
  }
  const cutShort = pages.some((page) => page.hasMore);
  const merged = pages
    .flatMap((page) => page.items)
    .filter((item) => cut === undefined || compare(item, cut) <= 0)
    .sort(compare);
  const seen = new Set<string>();
  const items: T[] = [];
  for (const item of merged) {
    const id = idOf(item);
    if (seen.has(id)) continue;
    seen.add(id);
    items.push(item);
  }
  return { items: items.slice(0, limit), hasMore: cutShort || items.length > limit };
}

/** A listing cursor: the index key of the last entry shown, base64url JSON (opaque to callers). */
export function encodeCursor(key: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/**
 * A cursor back into its key, checked: exactly the `expected` attributes, each a short string,
 * and `belongs` (this query's tenant and partition). Anything else is a 400, never a 500.
 */
export function decodeKeyCursor(
  cursor: string,
  expected: readonly string[],
  belongs: (key: Record<string, unknown>) => boolean,
): Record<string, unknown> {
  const invalid = () => new ValidationError('invalid_cursor', 'The cursor is malformed or belongs to another query');
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (typeof key !== 'object' || key === null || Array.isArray(key)) throw invalid();
  const record = key as Record<string, unknown>;
  const actual = Object.keys(record).sort();
  const wanted = [...expected].sort();
  if (actual.length !== wanted.length || actual.some((k, i) => k !== wanted[i])) throw invalid();
  if (!Object.values(record).every((v) => typeof v === 'string' && v.length > 0 && v.length < 1024)) throw invalid();
  if (!belongs(record)) throw invalid();
  return record;
}
