/**
 * Explaining a wait. The API Lambda does not share memory with the scheduler, so the scheduler
 * publishes a small snapshot (control table) every few seconds, and the reason a task waits is
 * derived from the task, its tenant's settings and that snapshot.
 */
import type { PolicyName, SchedulerConfig } from '../core/config.ts';
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
  const promotions = Math.floor(Math.max(0, waitedSeconds) / agingSeconds);
  return PRIORITY_TIERS[Math.max(0, tierRank(priority) - promotions)] ?? 'critical';
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
  const secondsToTopTier =
    config.policy === 'fifo' ? 0 : Math.max(0, tierRank(task.priority) * config.agingSeconds - waitedSeconds);
  const base = { effectiveTier: tier, waitedSeconds: round(waitedSeconds), secondsToTopTier: round(secondsToTopTier) };
  const asOf = snapshot ? { asOf: snapshot.at } : {};

  if (runAtMs > nowMs) {
    const delay = (runAtMs - nowMs) / 1000;
    return {
      reason: 'delayed',
      message: `Not eligible before ${task.runAt}${task.attempts > 0 ? ' (retry backoff)' : ''}`,
      ...base,
      maxWaitSeconds: boundFrom(snapshot, delay + secondsToTopTier, task),
      ...asOf,
    };
  }
  const share = snapshot?.tenants[task.tenantId];
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
      maxWaitSeconds: boundFrom(snapshot, secondsToTopTier, task),
      ...asOf,
    };
  }
  if (config.policy === 'fair-share' && share && share.entitlement > 0 && share.dominantShare > share.entitlement) {
    return {
      reason: 'fair_share',
      message: `Tenant ${task.tenantId} holds ${pct(share.dominantShare)} of its dominant resource, above its ${pct(share.entitlement)} entitlement; other tenants go first`,
      ...base,
      maxWaitSeconds: boundFrom(snapshot, secondsToTopTier, task),
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
    maxWaitSeconds: boundFrom(snapshot, secondsToTopTier, task),
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
 * After `secondsToTopTier` the task can only be overtaken by work that was already ahead of it
 * (older top-tier work). That work is at most what the scheduler holds in the top tier now plus
 * the tiers that will age into it, so at the recent dispatch rate it drains within
 * waitingAhead / rate seconds. Null when there is no rate to extrapolate from.
 */
function boundFrom(snapshot: SchedulerSnapshot | undefined, secondsToTopTier: number, task: Task): number | null {
  if (!snapshot || snapshot.dispatchRate <= 0) return null;
  const rank = tierRank(task.priority);
  let ahead = 0;
  for (const tier of PRIORITY_TIERS.slice(0, rank + 1)) ahead += snapshot.tiers[tier]?.waiting ?? 0;
  return round(secondsToTopTier + ahead / snapshot.dispatchRate);
}

const round = (seconds: number) => Math.round(seconds * 10) / 10;
const pct = (fraction: number) => `${Math.round(fraction * 100)}%`;
