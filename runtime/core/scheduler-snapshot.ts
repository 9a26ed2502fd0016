/**
 * What the scheduler publishes every few seconds (control table) for the API's wait
 * explanations: pools, tier windows, tenants' shares. The scheduler produces it, the API reads
 * it (runtime/app/wait.ts); both take the shape from here.
 */
import type { PolicyName } from './config.ts';
import type { PoolLeader } from './policy/index.ts';
import type { PriorityTier } from './task.ts';

export { INTAKE_ALLOWANCE_MS } from './intake-allowance.ts';

export interface TenantShare {
  readonly running: number;
  readonly queued: number;
  readonly weight: number;
  readonly maxConcurrency: number;
  /** max over pool resources of used / capacity. */
  readonly dominantShare: number;
  /** weight / sum of weights of tenants with work (the share the tenant is entitled to). */
  readonly entitlement: number;
  /** What holds all of its work now (constraints.ts): paused, at quota, at its start rate. */
  readonly hold?: 'tenant_paused' | 'quota' | 'rate';
  /** Its tasks the scheduler holds parked (a paused type, a full concurrency key). */
  readonly parked?: number;
  /** The longest its tasks ran in the last minute, seconds, when at least 3 ended (policy/pace.ts RecentRuns). */
  readonly longestRunSeconds?: number;
  /**
   * Its one waiting task, when it has exactly one and that one is in its pool's rotation (due, not
   * parked): the API's bound then knows the task asked about was in the rotation at `at`.
   */
  readonly waitingTaskId?: string;
  /**
   * With `waitingTaskId`: its tenant's turn in that pool's rotation (ISO 8601, to the millisecond),
   * the later of when its work there became due and when the tenant was last served there. A task
   * of another tenant due before this turn but taken in after `at` goes before it; the API counts
   * on every such task being in the snapshot only when the turn is INTAKE_ALLOWANCE_MS before `at`.
   */
  readonly waitingTurnAt?: string;
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
    /** Sharded, `used` is this shard's and `allowance` what it may fill now (capacity-slices.ts). */
    readonly lambda: { readonly used: number; readonly capacity: number; readonly allowance?: number };
    readonly fargate: {
      readonly vcpuUsed: number;
      readonly vcpu: number;
      readonly memoryMiBUsed: number;
      readonly memoryMiB: number;
      readonly allowanceVcpu?: number;
      readonly allowanceMemoryMiB?: number;
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
  /** Per paused task type, its tasks the scheduler holds parked (absent: none). */
  readonly parkedByType?: Readonly<Record<string, number>>;
  /** What the API's wait bound needs (runtime/core/policy/bound.ts); absent before issue 22. */
  readonly rotation?: RotationSnapshot;
}

/**
 * The fair-share rotation as the wait bound needs it: a few numbers per pool, and per tenant that
 * runs something one number, so the item grows little with the tenants listed.
 */
export interface RotationSnapshot {
  readonly lambda: PoolRotation;
  readonly fargate: PoolRotation;
  /** Per listed tenant that runs something: its running tasks have all ended by then, seconds after `at`. */
  readonly busyFor: Readonly<Record<string, number>>;
  /**
   * The same if none of them runs longer than its tenant's tasks did in the last minute
   * (`longestRunSeconds`); only for tenants where that is known. Absent before it existed.
   */
  readonly busyForLately?: Readonly<Record<string, number>>;
  /** `tenants` lists every tenant with work waiting or running (none left out for the cap). */
  readonly complete: boolean;
  /**
   * When the scheduler that published this hands over (its Lambda invocation's planned end),
   * seconds after `at`, and how long each invocation runs (a successor hands over no sooner than
   * that after it); both rounded down. Absent for a scheduler without a time limit (the long-lived
   * service, the local runtime) and before it existed.
   */
  readonly handover?: { readonly inSeconds: number; readonly everySeconds: number };
  /**
   * When the publishing scheduler finished taking over from a predecessor (absent: it had none),
   * and how many of the tenant-tiers it restored it has not read from the index yet (absent: none):
   * until it has read them all and has received the announcements its predecessor handed back,
   * its engine may lack tasks due before others (so with earlier turns), and the API gives no
   * bound from its snapshot. Absent before they existed.
   */
  readonly resumedAt?: string;
  readonly unread?: number;
  /**
   * The most summed weight of the tenants with work in the scheduler (waiting, due later or
   * running) at once in any whole 10 s of the minute before `at`, and since, rounded up: a tenant's
   * fair share is its weight over that sum, and fair-share serves tenants below theirs first
   * (policy.ts). Null or absent when not known (a scheduler watching for less than a minute, a
   * snapshot from before it existed).
   */
  readonly busyWeightPeak?: number | null;
}

export interface PoolRotation {
  /** Tenants with work ready in the pool: its rotation. */
  readonly waiting: number;
  /** Tenants (each counted once) that joined the pool's rotation in the minute before `at`. */
  readonly joinedLastMinute: number;
  /**
   * When the pool's running tasks end at the latest, as steps `[n, seconds after at]`: by then at
   * least n slots are free (Lambda, at 1, 2, 4, … slots and the pool's size), or every running
   * task has ended (Fargate, one step).
   */
  readonly freeBy: readonly (readonly [number, number])[];
  /** The task the pool is reserved for (it goes first whether or not it fits yet), if any. */
  readonly reservedFor: string | null;
  /**
   * Slots the pool freed a second, the fewest in any whole 10 s of the minute before `at`
   * (runtime/core/policy/pace.ts); null or absent when not known (a scheduler watching for less
   * than a minute, a snapshot from before it existed).
   */
  readonly freedPerSecond?: number | null;
  /**
   * Lambda: the most slots in use in any whole 10 s of the minute before `at`, and since
   * (pace.ts UsedSlots); null or absent when not known.
   */
  readonly peakUsed?: number | null;
}
