/**
 * What the scheduler publishes every few seconds (control table) for the API's wait
 * explanations: pools, tier windows, tenants' shares. The scheduler produces it, the API reads
 * it (runtime/app/wait.ts); both take the shape from here.
 */
import type { PolicyName } from './config.ts';
import type { PoolLeader } from './policy/index.ts';
import type { PriorityTier } from './task.ts';

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

/** Per pool, what goes first there now and whether a task holds it (reservation). */
export interface PoolQueueView {
  readonly leader: PoolLeader | null;
  readonly heldForTaskId: string | null;
}

/**
 * One tenant-tier's real backlog (issue 27): its QUEUED tasks as last counted from the index
 * (`byTenantQueue`, at most `BACKLOG_COUNT_CAP`), less what was dispatched since, and never less
 * than what the scheduler holds of it. Not what the scheduler holds: that is `tiers[].waiting`.
 */
export interface TenantTierBacklog {
  readonly queued: number;
  /** True when the count reached the cap: there are at least `queued`. */
  readonly capped?: true;
  /** Seconds since the oldest task the scheduler holds of it became eligible (0: none held). */
  readonly oldestWaitSeconds: number;
  /** When the index was last counted (absent: not counted yet; `queued` is what is held). */
  readonly countedAt?: string;
}

/** Tasks of a tenant that finished lately, as the scheduler saw their completions. */
export interface RecentlyFinished {
  readonly succeeded: number;
  readonly failed: number;
  readonly cancelled: number;
  readonly lastFinishedAt: string;
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
  /** Absent in snapshots published before it existed. */
  readonly queue?: { readonly lambda: PoolQueueView; readonly fargate: PoolQueueView };
  /**
   * The real backlog per tenant and tier (scheduler/backlog.ts), the busiest tenant-tiers first;
   * absent in snapshots published before it existed.
   */
  readonly backlog?: Readonly<Record<string, Readonly<Partial<Record<PriorityTier, TenantTierBacklog>>>>>;
  /** Tenants whose tasks finished in the last `windowSeconds`, so they stay in view once idle. */
  readonly recentlyFinished?: {
    readonly windowSeconds: number;
    readonly tenants: Readonly<Record<string, RecentlyFinished>>;
  };
}
