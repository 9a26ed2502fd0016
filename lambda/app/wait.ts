/**
 * Explaining a wait. The API Lambda does not share memory with the scheduler, so the scheduler
 * publishes a small snapshot (control table) every few seconds, and the reason a task waits is
 * derived from the task, its tenant's settings and that snapshot.
 */
import type { PolicyName, SchedulerConfig } from '../core/config.ts';
import { effectiveRank, topTierAtMs, waitBoundSeconds } from '../core/policy/index.ts';
import { ownEntry } from '../core/records.ts';
import { PRIORITY_TIERS, type PriorityTier, type Task, type TenantSettings, tierRank } from '../core/task.ts';

export const WAIT_REASONS = ['delayed', 'tenant_quota', 'capacity', 'fair_share', 'priority'] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];

export interface TenantShare {
  readonly running: number;
  readonly queued: number;
  readonly weight: number;
  readonly maxConcurrency: number;
  /** max over pool resources of used / capacity. */
  readonly dominantShare: number;
  /** weight / sum of weights of tenants with work (the share the tenant is entitled to). */
  readonly entitlement: number;
}

export interface SchedulerSnapshot {
  readonly at: string;
  readonly policy: PolicyName;
  readonly pools: {
    readonly lambda: { readonly used: number; readonly capacity: number };
    readonly fargate: {
      readonly vcpuUsed: number;
      readonly vcpu: number;
      readonly memoryMiBUsed: number;
      readonly memoryMiB: number;
    };
  };
  /** Candidates the scheduler holds per tier, and the age of the oldest. */
  readonly tiers: Readonly<Record<PriorityTier, { readonly waiting: number; readonly oldestWaitSeconds: number }>>;
  readonly tenants: Readonly<Record<string, TenantShare>>;
  /** Dispatches per second over the last minute. */
  readonly dispatchRate: number;
}

export interface WaitInfo {
  readonly reason: WaitReason;
  readonly message: string;
  /** The tier the task competes in now, after aging. */
  readonly effectiveTier: PriorityTier;
  readonly waitedSeconds: number;
  /** Seconds until the task reaches the top tier (aging), after which only older work goes first. */
  readonly secondsToTopTier: number;
  /**
   * Upper bound on the remaining wait in seconds, or null when none can be given (the tenant's
   * quota is full, or nothing is being dispatched so there is no rate to extrapolate from).
   */
  readonly maxWaitSeconds: number | null;
  /** Time the snapshot the explanation rests on was taken. */
  readonly asOf?: string;
}

/** The tier a task competes in after waiting: one tier up per `agingSeconds` waited. */
export function effectiveTier(priority: PriorityTier, waitedSeconds: number, agingSeconds: number): PriorityTier {
  const rank = effectiveRank(tierRank(priority), 0, Math.max(0, waitedSeconds) * 1000, agingSeconds * 1000);
  return PRIORITY_TIERS[rank] ?? 'critical';
}

export function explainWait(
  task: Task,
  input: { config: SchedulerConfig; tenant: TenantSettings; snapshot: SchedulerSnapshot | undefined; now: Date },
): WaitInfo {
  const { config, tenant, snapshot, now } = input;
  const nowMs = now.getTime();
  const runAtMs = Date.parse(task.runAt);
  const agingFromMs = Date.parse(task.agingFrom);
  const waitedSeconds = Math.max(0, (nowMs - agingFromMs) / 1000);
  const tier = effectiveTier(task.priority, waitedSeconds, config.agingSeconds);
  const topAtMs = topTierAtMs(tierRank(task.priority), agingFromMs, config.agingSeconds * 1000);
  const secondsToTopTier = config.policy === 'fifo' ? 0 : Math.max(0, (topAtMs - nowMs) / 1000);
  const base = { effectiveTier: tier, waitedSeconds: round(waitedSeconds), secondsToTopTier: round(secondsToTopTier) };
  const asOf = snapshot ? { asOf: snapshot.at } : {};

  if (runAtMs > nowMs) {
    return {
      reason: 'delayed',
      message: `Not eligible before ${task.runAt}${task.attempts > 0 ? ' (retry backoff)' : ''}`,
      ...base,
      maxWaitSeconds: bound(task, input),
      ...asOf,
    };
  }
  const share = ownEntry(snapshot?.tenants, task.tenantId);
  const running = share?.running ?? 0;
  if (config.policy === 'fair-share' && running >= tenant.maxConcurrency) {
    return {
      reason: 'tenant_quota',
      message: `Tenant ${task.tenantId} has ${running} of ${tenant.maxConcurrency} tasks running (its maxConcurrency)`,
      ...base,
      maxWaitSeconds: null,
      ...asOf,
    };
  }
  if (snapshot && poolFull(snapshot, task)) {
    return {
      reason: 'capacity',
      message: `The ${task.runtime} pool is full`,
      ...base,
      maxWaitSeconds: bound(task, input),
      ...asOf,
    };
  }
  if (config.policy === 'fair-share' && share && share.entitlement > 0 && share.dominantShare > share.entitlement) {
    return {
      reason: 'fair_share',
      message: `Tenant ${task.tenantId} holds ${pct(share.dominantShare)} of its dominant resource, above its ${pct(share.entitlement)} entitlement; other tenants go first`,
      ...base,
      maxWaitSeconds: bound(task, input),
      ...asOf,
    };
  }
  return {
    reason: 'priority',
    message:
      tier === 'critical'
        ? 'Older work of the top tier is ahead of it'
        : `Work of higher tiers is ahead; it reaches the top tier in ${Math.ceil(secondsToTopTier)} s`,
    ...base,
    maxWaitSeconds: bound(task, input),
    ...asOf,
  };
}

function poolFull(snapshot: SchedulerSnapshot, task: Task): boolean {
  if (task.runtime === 'lambda') return snapshot.pools.lambda.used >= snapshot.pools.lambda.capacity;
  const pool = snapshot.pools.fargate;
  return (
    pool.vcpuUsed + task.resources.vcpu > pool.vcpu || pool.memoryMiBUsed + task.resources.memoryMiB > pool.memoryMiB
  );
}

/**
 * The bound of lambda/core/policy/aging.ts (proved there): time to reach the top tier, then at
 * most ⌈(k + 1) / p⌉ windows of 2τ, where k is the work that can still rank ahead of it. From
 * the snapshot, k is over-approximated by every candidate the scheduler holds (older work of
 * any tier, and its tenant's other-pool work, is among them), and τ by the task's timeout plus
 * the dispatch lease. Null without a snapshot (no scheduler has run yet) or when no bound holds.
 */
function bound(
  task: Task,
  input: { config: SchedulerConfig; tenant: TenantSettings; snapshot: SchedulerSnapshot | undefined; now: Date },
): number | null {
  const { config, tenant, snapshot, now } = input;
  if (!snapshot) return null;
  const rank = tierRank(task.priority);
  // Every candidate held, whatever its tier: an older task of a lower base tier may have aged
  // past it, and its tenant's work in the other pool shares its quota.
  let ahead = 0;
  for (const tier of PRIORITY_TIERS) ahead += snapshot.tiers[tier]?.waiting ?? 0;
  const pool = config.pools.fargate;
  const seconds = waitBoundSeconds({
    policy: config.policy,
    runtime: task.runtime,
    baseRank: rank,
    agingFromMs: Date.parse(task.agingFrom),
    runAtMs: Date.parse(task.runAt),
    nowMs: now.getTime(),
    agingSeconds: config.agingSeconds,
    aheadCount: ahead,
    lambdaConcurrency: config.pools.lambda.concurrency,
    maxConcurrency: tenant.maxConcurrency,
    maxHoldSeconds: task.timeoutSeconds + config.scheduler.dispatchLeaseSeconds,
    fitsPool:
      task.runtime === 'lambda' || (task.resources.vcpu <= pool.vcpu && task.resources.memoryMiB <= pool.memoryMiB),
  });
  return seconds === null ? null : round(seconds);
}

const round = (seconds: number) => Math.round(seconds * 10) / 10;
const pct = (fraction: number) => `${Math.round(fraction * 100)}%`;
