/**
 * Scheduler shards (`scheduler.shards`, docs/scaling.md): tenants are spread over N schedulers,
 * each with its own lease, fence, tier queues, completions queue, snapshot and rotation, so a
 * tenant's quota and fair share are decided by exactly one scheduler. A tenant's shard is a
 * stable hash of its id: every process with the same configuration routes it the same way.
 * Shard 0 keeps the names a single scheduler had, so one shard is the system as it was.
 */

/** The most schedulers a deployment may run side by side. */
export const MAX_SCHEDULER_SHARDS = 16;

/** The shard that owns `tenantId` among `shards` (0 … shards - 1): 32-bit FNV-1a of its UTF-16 units. */
export function shardOfTenant(tenantId: string, shards: number): number {
  if (shards <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < tenantId.length; i++) {
    hash ^= tenantId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}

/** 0 … shards - 1. */
export const shardIndexes = (shards: number): readonly number[] =>
  Array.from({ length: Math.max(1, shards) }, (_, shard) => shard);

/** The name a per-shard resource carries: shard 0 keeps the unsharded name. */
export const shardSuffix = (shard: number): string => (shard === 0 ? '' : `-s${shard}`);

/** The scheduler lease of a shard (shard 0: `scheduler`, the lease a single scheduler always held). */
export const schedulerLeaseName = (shard: number): string => (shard === 0 ? 'scheduler' : `scheduler-s${shard}`);

/** Which scheduler a scheduler process is: its shard among how many. */
export interface ShardScope {
  readonly shard: number;
  readonly shards: number;
}

export const SINGLE_SHARD: ShardScope = { shard: 0, shards: 1 };

/** Whether `scope`'s scheduler owns `tenantId`. */
export const ownsTenant = (scope: ShardScope, tenantId: string): boolean =>
  shardOfTenant(tenantId, scope.shards) === scope.shard;
