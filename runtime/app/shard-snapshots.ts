/**
 * The scheduler snapshots of every shard (`scheduler.shards`), read side by side and seen as one:
 * what the status page and the task-type counts show. A task's own wait is explained from its
 * tenant's shard's snapshot alone (task-service.ts `describe`).
 */
import type { ControlStore } from '../adapters/control-store.ts';
import type { SchedulerSnapshot, TenantShare } from '../core/scheduler-snapshot.ts';
import { shardIndexes } from '../core/shards.ts';

/** Shard 0's snapshot with one shard; with more, every shard's merged (undefined: none published yet). */
export async function readSnapshots(control: ControlStore, shards: number): Promise<SchedulerSnapshot | undefined> {
  if (shards <= 1) return control.getSnapshot<SchedulerSnapshot>();
  const snapshots = await Promise.all(
    shardIndexes(shards).map((shard) => control.forShard(shard).getSnapshot<SchedulerSnapshot>()),
  );
  return mergeSnapshots(snapshots.filter((snapshot) => snapshot !== undefined));
}

/**
 * Tenants live in one shard each, so their entries are disjoint and are unioned (each entitled
 * among all of them, not among its shard's); counts add up;
 * pool use adds up against the whole pool; the oldest wait is the oldest of any shard. What only
 * describes one scheduler (its pool queues' leaders, its rotation) is left out.
 */
export function mergeSnapshots(snapshots: readonly SchedulerSnapshot[]): SchedulerSnapshot | undefined {
  const [first, ...rest] = snapshots;
  if (!first) return undefined;
  if (rest.length === 0) return first;
  const latest = snapshots.reduce((a, b) => (Date.parse(b.at) > Date.parse(a.at) ? b : a));
  const tiers = { ...first.tiers };
  for (const snapshot of rest) {
    for (const [tier, row] of Object.entries(snapshot.tiers) as [
      keyof typeof tiers,
      (typeof tiers)[keyof typeof tiers],
    ][]) {
      const mine = tiers[tier];
      tiers[tier] = mine
        ? {
            waiting: mine.waiting + row.waiting,
            oldestWaitSeconds: Math.max(mine.oldestWaitSeconds, row.oldestWaitSeconds),
          }
        : row;
    }
  }
  const parkedByType: Record<string, number> = {};
  for (const snapshot of snapshots) {
    for (const [type, count] of Object.entries(snapshot.parkedByType ?? {}))
      parkedByType[type] = (parkedByType[type] ?? 0) + count;
  }
  const sum = (pick: (snapshot: SchedulerSnapshot) => number) => snapshots.reduce((total, s) => total + pick(s), 0);
  return {
    at: latest.at,
    policy: first.policy,
    pools: {
      lambda: { used: sum((s) => s.pools.lambda.used), capacity: first.pools.lambda.capacity },
      fargate: {
        vcpuUsed: sum((s) => s.pools.fargate.vcpuUsed),
        vcpu: first.pools.fargate.vcpu,
        memoryMiBUsed: sum((s) => s.pools.fargate.memoryMiBUsed),
        memoryMiB: first.pools.fargate.memoryMiB,
      },
    },
    tiers,
    tenants: entitledAmongAll(unionOf(snapshots.map((s) => s.tenants))),
    dispatchRate: sum((s) => s.dispatchRate),
    backlog: unionOf(snapshots.map((s) => s.backlog ?? {})),
    ...(snapshots.some((s) => s.recentlyFinished)
      ? {
          recentlyFinished: {
            windowSeconds: Math.max(...snapshots.map((s) => s.recentlyFinished?.windowSeconds ?? 0)),
            tenants: unionOf(snapshots.map((s) => s.recentlyFinished?.tenants ?? {})),
          },
        }
      : {}),
    ...(Object.keys(parkedByType).length > 0 ? { parkedByType } : {}),
  };
}

/**
 * Each shard reports its tenants' entitlement among its own tenants (weight / the weights of its
 * tenants with work): seen as one, it is among every shard's (a tenant alone in its shard is not
 * entitled to the whole pool).
 */
function entitledAmongAll(tenants: Record<string, TenantShare>): Record<string, TenantShare> {
  let weights = 0;
  for (const share of Object.values(tenants)) if (share.running + share.queued > 0) weights += share.weight;
  const entitled: Record<string, TenantShare> = Object.create(null);
  for (const [tenantId, share] of Object.entries(tenants)) {
    const busy = share.running + share.queued > 0;
    entitled[tenantId] = { ...share, entitlement: busy && weights > 0 ? round3(share.weight / weights) : 0 };
  }
  return entitled;
}

const round3 = (value: number) => Math.round(value * 1000) / 1000;

/** The entries of records keyed by tenant id (disjoint across shards), on a prototype-free object: an id may be "__proto__". */
function unionOf<T>(records: readonly Readonly<Record<string, T>>[]): Record<string, T> {
  const union: Record<string, T> = Object.create(null);
  for (const record of records) for (const [key, value] of Object.entries(record)) union[key] = value;
  return union;
}
