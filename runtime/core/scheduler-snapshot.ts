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
}
