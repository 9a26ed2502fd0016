/**
 * Types of the scheduling-policy engine. Pure data: the scheduler feeds candidates in and asks
 * which one to dispatch next; the API asks why a task waits.
 */

import type { PolicyName } from '../config.ts';
import type { PriorityTier, Runtime, TaskResources, TenantSettings } from '../task.ts';
import type { Hold } from './constraints.ts';
import type { HoldSeconds, PoolLeader } from './explain.ts';
import type { FreedSlotsState, UsedSlotsState } from './pace.ts';

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
  /**
   * The longest it holds its pool once dispatched (its timeout plus the leases), in seconds, when
   * known; else the pool's `maxHoldSeconds`. Backfill beside a reservation and the wait bound use it.
   */
  readonly holdSeconds?: number | undefined;
  /**
   * Its task type and concurrency key, when known (the queue index does not carry them; the
   * dispatcher learns them from the item and hands the task back with them): the task units of
   * constraints.ts hold on them.
   */
  readonly type?: string | undefined;
  readonly concurrencyKey?: string | undefined;
  readonly concurrencyLimit?: number | undefined;
}

/** A task that already holds capacity (dispatched or running). */
export interface ActiveCandidate
  extends Pick<Candidate, 'taskId' | 'tenantId' | 'runtime' | 'resources' | 'concurrencyKey'> {
  /** When it was dispatched (epoch ms); default: the engine's clock. */
  readonly sinceMs?: number | undefined;
  /** As `Candidate.holdSeconds`: it holds its pool until `sinceMs + holdSeconds` at the latest. */
  readonly holdSeconds?: number | undefined;
}

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
   * pool's timeout cap plus the leases; `holdSecondsOf(config)`), for tasks whose own
   * `holdSeconds` is not known. The wait bound and backfill rest on it. Default 300.
   */
  readonly maxHoldSeconds?: number | HoldSeconds;
  /**
   * EASY backfill (default true): a Fargate pool's best task that does not fit reserves the pool
   * at once, and only tasks that end before it would fit anyway start beside it. False: pure
   * backfill (anything that fits starts; large tasks may starve, and get no wait bound).
   */
  readonly reservations?: boolean;
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
  /** Sharded: what this scheduler may fill of the pool now (its slice's allowance), when not all of it. */
  readonly allowance?: { readonly slots?: number; readonly vcpu?: number; readonly memoryMiB?: number };
  readonly waiting: number;
  /** The pool's best task, holding the pool because it does not fit (Fargate only), or null. */
  readonly reservedForTaskId: string | null;
  /** The task that goes first in the pool now (what `explainWait` compares against), or null. */
  readonly leader: PoolLeader | null;
  /** Tenants with work ready in the pool (its rotation), at quota or not. */
  readonly rotation: number;
  /** Tenants (each counted once) that joined the rotation in the minute before `nowMs`. */
  readonly joinedLastMinute: number;
  /** The task the pool is reserved for, whether or not it fits yet (Fargate), or null. */
  readonly reservedFor: string | null;
  /**
   * When the pool's capacity frees at the latest, from the running tasks' own holds: ascending
   * steps `[n, atMs]`, "by atMs at least n slots are free" (Lambda; n up to the pool's slots), or
   * one step `[1, atMs]`, "every running task has ended by atMs" (Fargate).
   */
  readonly freeBy: readonly (readonly [number, number])[];
  /** Slots freed a second: the fewest in any whole 10 s of the last minute (pace.ts); null before a minute was watched. */
  readonly freedPerSecond: number | null;
  /** Lambda: the most slots in use in any 10 s of the last minute and since (pace.ts UsedSlots); null before a minute was watched. */
  readonly peakUsed?: number | null;
}

export interface TenantSnapshot {
  readonly tenantId: string;
  readonly weight: number;
  readonly maxConcurrency: number;
  /** What holds all of its work now (pause, quota, start rate), if anything. */
  readonly hold: Hold | null;
  /** Its tasks parked by a task unit (a paused type, a full concurrency key). */
  readonly parked: number;
  /** Dispatched or running. */
  readonly active: number;
  /** Waiting, including delayed. */
  readonly queued: number;
  readonly usage: { readonly lambdaSlots: number; readonly vcpu: number; readonly memoryMiB: number };
  /** max over resources of used / capacity, divided by weight. */
  readonly weightedDominantShare: number;
  /** weight / sum of weights of tenants that are backlogged or active: the share it is owed. */
  readonly entitlement: number;
  /** When its running tasks have all ended at the latest (epoch ms; `nowMs` when none runs). */
  readonly busyUntilMs: number;
  /** The longest its tasks ran in the last minute (dispatch to release), when enough ended (pace.ts RecentRuns). */
  readonly longestRunMs?: number;
  /** When its running tasks end if none runs longer than `longestRunMs` (never after `busyUntilMs`). */
  readonly busyUntilLatelyMs?: number;
  /** Its one waiting task, when it has exactly one and that one is in its pool's rotation. */
  readonly waitingTaskId?: string;
  /** Its turn in that pool's rotation (epoch ms), with `waitingTaskId`: a tenant served since the task was due has it later. */
  readonly waitingTurnMs?: number;
}

export interface PolicySnapshot {
  readonly nowMs: number;
  readonly policy: PolicyName;
  /**
   * The summed weight of the tenants with work in the engine (waiting, due later or running): a
   * tenant's fair share is its weight over it (fair-share orders tenants below theirs first).
   */
  readonly busyWeight: number;
  /** The most `busyWeight` was in any 10 s of the last minute and since (pace.ts UsedSlots); null before a minute was watched. */
  readonly busyWeightPeak: number | null;
  readonly waiting: number;
  readonly active: number;
  /** Waiting tasks that can never fit their pool (bigger than its whole capacity). */
  readonly unschedulable: number;
  readonly pools: readonly PoolSnapshot[];
  readonly tenants: readonly TenantSnapshot[];
}

/**
 * The rotation's memory (SchedulingPolicy.rotationState): per pool, when each tenant was last
 * served there (epoch ms). A scheduler that starts afresh restores it, so a tenant served just
 * before a restart does not go first again; everything else of the rotation is derived from the
 * waiting tasks themselves.
 */
export interface RotationState {
  readonly lambda: Readonly<Record<string, number>>;
  readonly fargate: Readonly<Record<string, number>>;
  /** Per pool, the turns of the tenants waiting there (epoch ms); absent in older memories. */
  readonly turns?: {
    readonly lambda?: Readonly<Record<string, number>>;
    readonly fargate?: Readonly<Record<string, number>>;
  };
  /** The Lambda pool's count of freed slots (pace.ts); absent in memories saved before it existed. */
  readonly freed?: { readonly lambda?: FreedSlotsState | undefined } | undefined;
  /** The Lambda pool's record of how full it was (pace.ts UsedSlots); absent in older memories. */
  readonly occupancy?: { readonly lambda?: UsedSlotsState | undefined } | undefined;
  /** How the summed weight of the tenants with work moved (pace.ts UsedSlots); absent in older memories. */
  readonly busyWeight?: UsedSlotsState | undefined;
}
