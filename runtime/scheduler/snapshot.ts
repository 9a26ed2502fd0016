/**
 * The scheduler's published view: what the API uses to explain waits and the dashboard to draw
 * tiers, pools and tenants. Built from the policy engine and the intake's windows; bounded so
 * the item stays below DynamoDB's 400 KB (at most 500 tenants listed, and SNAPSHOT_MAX_BYTES).
 */

import type { SchedulerConfig } from '../core/config.ts';
import type { IntakeWindows } from '../core/intake/index.ts';
import { coarsenSteps, type PoolSnapshot, type SchedulingPolicy } from '../core/policy/index.ts';
import type { PoolRotation, SchedulerSnapshot } from '../core/scheduler-snapshot.ts';
import { PRIORITY_TIERS, type PriorityTier } from '../core/task.ts';

/** Tenants listed at most: the busiest. */
const SNAPSHOT_TENANTS = 500;
/**
 * The snapshot's JSON at most, in bytes: it is one control item (each of its copies holds all of
 * it), and DynamoDB refuses an item over 400 KB, which failed the scheduler's every upkeep.
 */
export const SNAPSHOT_MAX_BYTES = 350_000;

export interface SnapshotSources {
  readonly policy: SchedulingPolicy;
  readonly windows: IntakeWindows;
  readonly pools: SchedulerConfig['pools'];
  /** Dispatches in the last minute. */
  readonly dispatchesLastMinute: number;
  /** The real backlog per tenant-tier and the recently finished tenants (scheduler/backlog.ts). */
  readonly backlog?: SchedulerSnapshot['backlog'];
  readonly recentlyFinished?: SchedulerSnapshot['recentlyFinished'];
  /** Per paused task type, its parked tasks (SchedulingPolicy.parkedByType). */
  readonly parkedByType?: ReadonlyMap<string, number>;
  /** When this scheduler hands over and how long each invocation runs (a Lambda's time limit). */
  readonly handover?: PlannedHandover | undefined;
  /** When this scheduler, having taken over from a predecessor, finished its resume. */
  readonly resumedAtMs?: number | undefined;
}

/** A scheduler Lambda invocation's planned end, and the length of one invocation's run. */
export interface PlannedHandover {
  readonly atMs: number;
  readonly everyMs: number;
}

/**
 * `tiers[tier].waiting` counts the refs the intake holds (its windows, not every queued task);
 * `oldestWaitSeconds` is the age of the oldest of them by `agingFrom` — every tenant-tier's
 * oldest due task is in its window, so this is the tier's oldest waiting task (a retry beyond its
 * window aside). It feeds the `OldestWaitingSeconds` metric.
 */
export function buildSnapshot(sources: SnapshotSources, nowMs: number): SchedulerSnapshot {
  // 500 tenants of 128-character ids, each in `tenants` and twice in `rotation`, with the backlog,
  // the recently finished and paused types' lists, came to 411,916 bytes: list fewer, the least
  // busy left out first (`complete` then says so), until it fits.
  let listed = SNAPSHOT_TENANTS;
  for (;;) {
    const snapshot = snapshotListing(sources, nowMs, listed);
    const bytes = Buffer.byteLength(JSON.stringify(snapshot), 'utf8');
    if (bytes <= SNAPSHOT_MAX_BYTES || listed === 0) return snapshot;
    listed = Math.min(listed - 1, Math.floor((listed * SNAPSHOT_MAX_BYTES) / bytes));
  }
}

function snapshotListing(sources: SnapshotSources, nowMs: number, listed: number): SchedulerSnapshot {
  const { policy: engine, windows, pools } = sources;
  const policy = engine.snapshot(nowMs);
  const tiers = Object.fromEntries(
    PRIORITY_TIERS.map((tier) => [tier, { waiting: 0, oldestWaitSeconds: 0 }]),
  ) as Record<PriorityTier, { waiting: number; oldestWaitSeconds: number }>;
  for (const ref of windows.refs()) tiers[ref.priority].waiting++;
  for (const [tier, agingFromMs] of windows.oldestAgingFromMs()) {
    tiers[tier].oldestWaitSeconds = Math.max(0, (nowMs - agingFromMs) / 1000);
  }
  const lambda = policy.pools.find((p) => p.runtime === 'lambda');
  const fargate = policy.pools.find((p) => p.runtime === 'fargate');
  const busiest = [...policy.tenants].sort((a, b) => b.active + b.queued - (a.active + a.queued)).slice(0, listed);
  // fromEntries defines own keys, so a tenant named `__proto__` is a key, not the prototype.
  const tenants: Record<string, SchedulerSnapshot['tenants'][string]> = Object.fromEntries(
    busiest.map((tenant) => [
      tenant.tenantId,
      {
        running: tenant.active,
        queued: tenant.queued,
        weight: tenant.weight,
        maxConcurrency: tenant.maxConcurrency,
        dominantShare: round3(tenant.weightedDominantShare * tenant.weight),
        entitlement: round3(tenant.entitlement),
        ...(tenant.hold && tenant.hold.constraint !== 'type_paused' && tenant.hold.constraint !== 'key'
          ? { hold: tenant.hold.constraint }
          : {}),
        ...(tenant.parked > 0 ? { parked: tenant.parked } : {}),
        ...(tenant.longestRunMs !== undefined ? { longestRunSeconds: Math.ceil(tenant.longestRunMs / 100) / 10 } : {}),
        ...(tenant.waitingTaskId !== undefined ? { waitingTaskId: tenant.waitingTaskId } : {}),
        ...(tenant.waitingTurnMs !== undefined && Number.isFinite(tenant.waitingTurnMs)
          ? { waitingTurnAt: new Date(tenant.waitingTurnMs).toISOString() }
          : {}),
      },
    ]),
  );
  const busyFor: Record<string, number> = Object.fromEntries(
    busiest.filter((tenant) => tenant.active > 0).map((tenant) => [tenant.tenantId, secondsAfter(tenant.busyUntilMs)]),
  );
  const busyForLately: Record<string, number> = Object.fromEntries(
    busiest
      .filter((tenant) => tenant.active > 0 && tenant.busyUntilLatelyMs !== undefined)
      .map((tenant) => [tenant.tenantId, secondsAfter(tenant.busyUntilLatelyMs as number)]),
  );
  function secondsAfter(ms: number): number {
    return Math.max(0, Math.ceil((ms - nowMs) / 1000));
  }
  const unread = windows.unreadSinceRestore();
  const rotationOf = (pool: PoolSnapshot | undefined, slots: number): PoolRotation => {
    const steps = pool?.freeBy ?? [];
    const coarse = pool?.runtime === 'lambda' ? coarsenSteps(steps, slots) : steps.slice(-1);
    return {
      waiting: pool?.rotation ?? 0,
      joinedLastMinute: pool?.joinedLastMinute ?? 0,
      freeBy: coarse.map(([n, atMs]) => [n, secondsAfter(atMs)] as const),
      reservedFor: pool?.reservedFor ?? null,
      freedPerSecond: pool?.freedPerSecond ?? null,
      ...(pool?.runtime === 'lambda' ? { peakUsed: pool.peakUsed ?? null } : {}),
    };
  };
  return {
    at: new Date(nowMs).toISOString(),
    policy: policy.policy,
    pools: {
      lambda: {
        used: lambda?.used.slots ?? 0,
        capacity: pools.lambda.concurrency,
        ...(lambda?.allowance?.slots !== undefined ? { allowance: lambda.allowance.slots } : {}),
      },
      fargate: {
        vcpuUsed: fargate?.used.vcpu ?? 0,
        vcpu: pools.fargate.vcpu,
        memoryMiBUsed: fargate?.used.memoryMiB ?? 0,
        memoryMiB: pools.fargate.memoryMiB,
        ...(fargate?.allowance?.vcpu !== undefined
          ? { allowanceVcpu: fargate.allowance.vcpu, allowanceMemoryMiB: fargate.allowance.memoryMiB ?? 0 }
          : {}),
      },
    },
    tiers,
    tenants,
    dispatchRate: round3(sources.dispatchesLastMinute / 60),
    queue: {
      lambda: { leader: lambda?.leader ?? null, heldForTaskId: null },
      fargate: { leader: fargate?.leader ?? null, heldForTaskId: fargate?.reservedForTaskId ?? null },
    },
    ...(sources.backlog ? { backlog: sources.backlog } : {}),
    ...(sources.parkedByType && sources.parkedByType.size > 0
      ? { parkedByType: Object.fromEntries(sources.parkedByType) }
      : {}),
    ...(sources.recentlyFinished ? { recentlyFinished: sources.recentlyFinished } : {}),
    rotation: {
      lambda: rotationOf(lambda, pools.lambda.concurrency),
      fargate: rotationOf(fargate, 1),
      busyFor,
      busyForLately,
      complete: busiest.length === policy.tenants.length,
      busyWeightPeak: policy.busyWeightPeak === null ? null : Math.ceil(policy.busyWeightPeak * 1000 - 1e-6) / 1000,
      ...(sources.resumedAtMs !== undefined ? { resumedAt: new Date(sources.resumedAtMs).toISOString() } : {}),
      ...(unread > 0 ? { unread } : {}),
      ...(sources.handover
        ? {
            handover: {
              inSeconds: Math.max(0, Math.floor((sources.handover.atMs - nowMs) / 1000)),
              everySeconds: Math.floor(sources.handover.everyMs / 1000),
            },
          }
        : {}),
    },
  };
}

const round3 = (value: number) => Math.round(value * 1000) / 1000;
