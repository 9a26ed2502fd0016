/**
 * Types of the scheduling-policy engine. Pure data: the scheduler feeds candidates in and asks
 * which one to dispatch next; the API asks why a task waits.
 */
import type { PolicyName } from '../config.ts';
import type { PriorityTier, Runtime, TaskResources, TenantSettings } from '../task.ts';
import type { HoldSeconds, PoolLeader } from './explain.ts';

/** A waiting task as the policy sees it. Times are epoch milliseconds. */
export interface Candidate {
  readonly taskId: string;
  readonly tenantId: string;
  readonly priority: PriorityTier;
  readonly runtime: Runtime;
  readonly resources: TaskResources;
  /** Origin of aging: when the task first became eligible. Retries keep it. */
  readonly agingFromMs: number;
  /** Not dispatched before this instant (delay, runAt, retry backoff). */
  readonly runAtMs: number;
  /** Arrival order, the last tie-breaker (any increasing number, e.g. a submit counter). */
  readonly seq: number;
}

/** A task that already holds capacity (dispatched or running). */
export type ActiveCandidate = Pick<Candidate, 'taskId' | 'tenantId' | 'runtime' | 'resources'>;

/** Pool capacities (the configuration's `pools`, or any object with these fields). */
export interface Pools {
  readonly lambda: { readonly concurrency: number };
  readonly fargate: { readonly vcpu: number; readonly memoryMiB: number };
}

export interface PolicyOptions {
  readonly policy: PolicyName;
  readonly agingSeconds: number;
  readonly pools: Pools;
  readonly tenantDefaults: TenantSettings;
  readonly tenants?: Readonly<Record<string, TenantSettings>>;
  /**
   * τ: the longest one dispatched task holds its pool's capacity, per pool or one for both (the
   * pool's timeout cap plus the leases; `holdSecondsOf(config)`). Only the wait bound uses it;
   * the bound is as sound as this number. Default 300.
   */
  readonly maxHoldSeconds?: number | HoldSeconds;
  /**
   * The best-ranked task of a pool that does not fit may be passed by smaller tasks at most this
   * many times; then it holds the pool (nothing else starts there until it fits). Default 8.
   * `Infinity` disables reservations (pure backfill: large tasks may starve).
   */
  readonly reservationAfterSkips?: number;
  /**
   * How many tenants' best tasks one decision inspects at most looking for one that fits a
   * partly-full Fargate pool, and how many tasks behind those best tasks (beyond, the pool waits
   * for capacity). Bounds the cost of a decision. Default 64.
   */
  readonly fitScanLimit?: number;
  /** Of those, how many tasks behind one tenant's best task at most. Default 8. */
  readonly fitScanPerTenant?: number;
}

/** Usage of the three pool resources. Fargate vCPU is kept in milli-vCPU (integers, exact sums). */
export interface ResourceVector {
  slots: number;
  milliVcpu: number;
  memoryMiB: number;
}

export interface PoolSnapshot {
  readonly runtime: 'lambda' | 'fargate';
  readonly capacity: { readonly slots?: number; readonly vcpu?: number; readonly memoryMiB?: number };
  readonly used: { readonly slots?: number; readonly vcpu?: number; readonly memoryMiB?: number };
  readonly waiting: number;
  /** The pool's best task, holding the pool because it does not fit (Fargate only), or null. */
  readonly reservedForTaskId: string | null;
  /** The task that goes first in the pool now (what `explainWait` compares against), or null. */
  readonly leader: PoolLeader | null;
}

export interface TenantSnapshot {
  readonly tenantId: string;
  readonly weight: number;
  readonly maxConcurrency: number;
  /** Dispatched or running. */
  readonly active: number;
  /** Waiting, including delayed. */
  readonly queued: number;
  readonly usage: { readonly lambdaSlots: number; readonly vcpu: number; readonly memoryMiB: number };
  /** max over resources of used / capacity, divided by weight. */
  readonly weightedDominantShare: number;
  /** weight / sum of weights of tenants that are backlogged or active: the share it is owed. */
  readonly entitlement: number;
}

export interface PolicySnapshot {
  readonly nowMs: number;
  readonly policy: PolicyName;
  readonly waiting: number;
  readonly active: number;
  /** Waiting tasks that can never fit their pool (bigger than its whole capacity). */
  readonly unschedulable: number;
  readonly pools: readonly PoolSnapshot[];
  readonly tenants: readonly TenantSnapshot[];
}
