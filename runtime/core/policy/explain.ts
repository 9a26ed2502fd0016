/**
 * Why a task waits, and for how long at most: ONE pure function over a small view. The live
 * engine (`SchedulingPolicy.explain`) and the API (from the snapshot the scheduler publishes,
 * `app/wait.ts`) each fill a `WaitView`; the reasons, messages and bounds users see, in the API,
 * the dashboard and the CLI, all come from `explainWait` below.
 */
import type { PolicyName, SchedulerConfig } from '../config.ts';
import { PRIORITY_TIERS, type PriorityTier, type Runtime, tierRank } from '../task.ts';
import { effectiveRank, type NoBoundReason, topTierAtMs, waitBound } from './aging.ts';
import { type HeadroomBound, headroomBound, type PaceBound, paceBound, rotationBoundSeconds } from './bound.ts';
import { capacity, describeHold, type Hold } from './constraints.ts';
import { belowFairShare } from './fair-share.ts';

/** The wait reason each constraint unit's hold reports. */
const HOLD_REASONS = {
  quota: 'tenant_quota',
  tenant_paused: 'tenant_paused',
  type_paused: 'type_paused',
  rate: 'rate_limit',
  key: 'concurrency_key',
} as const satisfies Record<Hold['constraint'], string>;

/** Why a waiting task is not being dispatched right now. */
export const WAIT_REASONS = [
  'dependencies',
  'delayed',
  'tenant_paused',
  'type_paused',
  'tenant_quota',
  'rate_limit',
  'concurrency_key',
  'capacity',
  'fair_share',
  'priority',
  'queue',
] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];

/** The task that goes first in a pool now: its tenant's best task, of the best tenant below quota. */
export interface PoolLeader {
  readonly taskId: string;
  readonly tenantId: string;
  /** Its tenant's weighted dominant share. */
  readonly weightedShare: number;
  /** 0 = critical … 3 = low, after aging. */
  readonly effectiveRank: number;
}

/** What the explanation needs to know; both the engine and a published snapshot can supply it. */
export interface WaitView {
  readonly policy: PolicyName;
  readonly agingSeconds: number;
  readonly nowMs: number;
  readonly task: {
    readonly taskId: string;
    readonly tenantId: string;
    readonly priority: PriorityTier;
    readonly runtime: Runtime;
    readonly agingFromMs: number;
    readonly runAtMs: number;
    /** Fits its pool's whole capacity. */
    readonly fitsPool: boolean;
    /** Fits what its pool has free now. */
    readonly fitsFree: boolean;
    /** Does not fit now only because of its scheduler shard's allowance of the pool (sharded). */
    readonly heldByAllowance?: boolean | undefined;
  };
  readonly tenant: { readonly active: number; readonly maxConcurrency: number; readonly weightedShare: number };
  /**
   * A constraint unit's hold besides the quota (which `tenant` shows): its tenant paused or at its
   * start rate, its type paused, its concurrency key full (constraints.ts).
   */
  readonly hold?: Hold | undefined;
  /** The dependencies it is held on (core/dependencies.ts): none started it yet, they come first. */
  readonly dependencies?: readonly string[] | undefined;
  readonly pool: {
    /** The pool is held for another task (its best, which does not fit yet). */
    readonly heldForOther: boolean;
    /**
     * Fargate: the pool is reserved for another task, which goes first whether or not it fits now
     * (bound.ts h). Defaults to `heldForOther`.
     */
    readonly reservedForOther?: boolean | undefined;
    /** Null when no tenant below quota has work ready in the pool. */
    readonly leader: PoolLeader | null;
    /** Set when nothing is known of the pool (no scheduler has published what goes first). */
    readonly unknown?: true | undefined;
  };
  /** priority, fifo: k of aging.ts's bound (tasks that can still go first once it is top tier); null if unknown. */
  readonly aheadCount: number | null;
  /** fair-share: its place in its pool's rotation (bound.ts); undefined when not known or not ready. */
  readonly rotation?: RotationView | undefined;
  readonly limits: {
    readonly lambdaConcurrency: number;
    /** τ per pool for tasks whose own hold is not known: the pool's timeout cap plus the leases. */
    readonly holdSeconds: HoldSeconds;
    /** EASY backfill on (policy.ts); off, a Fargate task has no bound. */
    readonly reservations: boolean;
  };
  /** What whoever filled the view takes for granted besides the bound's own assumptions, in words. */
  readonly assumes?: readonly string[] | undefined;
  /**
   * The scheduler's own lag, added to a fair-share bound (the API's allowance; the engine, which
   * is the scheduler, has none): so long per round of the proof to act on a freed slot, and, when
   * it hands over every minute (Lambda mode), so long per started minute of the wait.
   */
  readonly schedulerLag?: SchedulerLag | undefined;
}

export interface SchedulerLag {
  readonly perRoundSeconds: number;
  readonly perHandoverSeconds: number;
  readonly handsOverEveryMinute: boolean;
  /**
   * When the scheduler hands over (a Lambda invocation's planned end, from its snapshot): the next
   * at `nextAtMs`, each later one at least `everyMs` after the one before. With it only the
   * handovers the wait reaches are counted; without it, one per started minute.
   */
  readonly plannedHandovers?: { readonly nextAtMs: number; readonly everyMs: number } | undefined;
}

/** Where a task stands in its pool's rotation, as the engine knows it or a snapshot bounds it. */
export interface RotationView {
  /** k: tenants (other than its own) that may go before it, each at most once. */
  readonly ahead: number;
  /** Tenants waiting in its pool (for messages). */
  readonly waiting: number;
  /** Its tenant's waiting tasks, this one included; the bound needs it to be the only one. */
  readonly tenantWaiting: number;
  /** When its tenant's running tasks have all ended at the latest (epoch ms). */
  readonly tenantFreeAtMs: number;
  /** Its pool's free steps (bound.ts `RotationBoundInput.freeBy`). */
  readonly freeBy: readonly (readonly [number, number])[];
  /**
   * The instant this describes (t₀ of the proof; default `nowMs`): an older snapshot's, or the
   * latest instant the task can join the rotation. The bound is proved from there.
   */
  readonly asOfMs?: number | undefined;
  /**
   * Lambda: the slots the pool frees a second, as measured (pace.ts), when known. With it the bound
   * is the smaller of the timeout bound and the pace bound (bound.ts `paceBound`).
   */
  readonly freedPerSecond?: number | null | undefined;
  /**
   * When its tenant's running tasks end if none runs longer than its tasks did lately (pace.ts
   * RecentRuns), when known: the pace bound's t₁ (an assumption it then states and carries).
   */
  readonly tenantFreeAtMsLately?: number | undefined;
  /**
   * Lambda: the most slots in use in any 10 s of the last minute and since (pace.ts UsedSlots),
   * when known. With room in the pool for the tenants ahead and it besides, the bound may rest on
   * the pool's headroom (bound.ts `headroomBound`).
   */
  readonly peakUsed?: number | null | undefined;
  /**
   * Its tenant's dispatched and running tasks as read with the task (a snapshot that predates it
   * may count fewer): the headroom answer needs room under its tenant's quota for it.
   */
  readonly tenantRunning?: number | undefined;
  /**
   * An instant the task was in the scheduler's engine (the snapshot names it), when known: the
   * headroom answer runs from there, since it needs the task taken in, not the turns of others.
   */
  readonly inEngineAtMs?: number | undefined;
  /**
   * Its tenant's weighted dominant share at `asOfMs` (what it runs, over every pool, divided by its
   * weight), when known: below its fair share its running tasks do not hold it up (bound.ts
   * `paceBound`, below its fair share).
   */
  readonly tenantShare?: number | undefined;
  /**
   * The most summed weight of the tenants with work in the scheduler at once lately (the engine's
   * `busyWeightPeak`), when known: the pace answer below the fair share assumes no more meanwhile.
   */
  readonly busyWeightPeak?: number | null | undefined;
}

/** τ per pool: the longest one task holds that pool's capacity (timeout cap + leases). */
export interface HoldSeconds {
  readonly lambda: number;
  readonly fargate: number;
}

export interface WaitExplanation {
  readonly reason: WaitReason;
  readonly message: string;
  readonly baseTier: PriorityTier;
  /** The tier it competes at now, after aging. */
  readonly effectiveTier: PriorityTier;
  /** When it reaches the top tier (epoch ms), after which only older work goes first. */
  readonly topTierAtMs: number;
  /** Upper bound on the remaining wait in seconds from `nowMs`, or null (see `noBound`). */
  readonly waitBoundSeconds: number | null;
  /** Why there is no bound, when there is none. */
  readonly noBound?: { readonly code: NoBoundReason; readonly message: string } | undefined;
  /** What the bound takes for granted, in words (absent when there is no bound). */
  readonly assumes?: string | undefined;
  /**
   * The bound on timeouts alone (fair-share), when the bound given rests on the pool's pace and
   * is smaller: what holds however slowly the pool frees slots.
   */
  readonly worstCaseSeconds?: number | undefined;
  /**
   * When the bound rests on the pool's pace: at least `slots` freed between `fromMs` and `byMs`
   * (epoch ms), and, when it took its tenant's running tasks to end as its tasks did lately, that
   * they have all ended by `tenantFreeByMs`.
   */
  readonly assumedFreed?: (PaceBound['freed'] & { readonly tenantFreeByMs?: number | undefined }) | undefined;
  /**
   * When the bound rests on the Lambda pool's headroom: fewer than `slots` tasks hold the pool at
   * every instant from `fromMs` to `byMs` (epoch ms), as it kept lately (at most `peakUsed`).
   */
  readonly assumedHeadroom?: (HeadroomBound['below'] & { readonly peakUsed: number }) | undefined;
  /**
   * When the bound on the pool's pace took its tenant to stay below its fair share instead of
   * waiting for its running tasks: the summed weight of the tenants with work in the scheduler is
   * at most `atMost` at every instant from `fromMs` to `byMs` (epoch ms).
   */
  readonly assumedBusyWeight?: { readonly atMost: number; readonly fromMs: number; readonly byMs: number } | undefined;
}

const NO_BOUND_MESSAGES: Record<NoBoundReason, string> = {
  never_fits: 'it is bigger than its whole pool and can never start',
  quota_zero: 'its tenant may run no task (maxConcurrency 0)',
  not_aging_yet: 'it has not started aging yet; work submitted before it may still go first',
  not_due: 'it is not due yet; tenants that start waiting before it is due join the rotation ahead of it',
  tenant_backlog:
    'its tenant has other work waiting: each of its turns comes after one task of every tenant in the rotation, and tenants that start waiting meanwhile join the rotation',
  ahead_unknown:
    'what is ahead of it is not known (under priority and fifo every older task of its pool counts, and the scheduler holds only a window of the queues; or no scheduler has reported its pool yet, or one has just taken over and not yet taken in all the waiting work)',
  no_reservation: 'reservations are off, so smaller tasks may pass a large one without end',
  paused: 'it is paused (its tenant or its task type) and starts only after it is resumed',
  dependencies: 'it starts only after its dependencies succeed, and nothing bounds when they do',
  sharded:
    "schedulers are sharded (scheduler.shards): its shard's allowance of the pool follows the other shards' demand, and nothing here bounds how soon slots come to it",
};

/** The answer when no bound can be given for `why` (its code and its message). */
export const noBoundOf = (why: NoBoundReason) => ({ code: why, message: NO_BOUND_MESSAGES[why] });

/**
 * τ per pool from the configuration: the pool's timeout cap (enforced at submit), plus the
 * dispatch lease (a dispatched task not started by then is taken back) and the run lease (a
 * worker that stops heartbeating loses the task within it).
 */
/** The longest one task holds its pool: its own timeout plus the dispatch and run leases. */
export function taskHoldSeconds(config: SchedulerConfig, timeoutSeconds: number): number {
  return timeoutSeconds + config.scheduler.dispatchLeaseSeconds + config.scheduler.runLeaseSeconds;
}

export function holdSecondsOf(config: SchedulerConfig): HoldSeconds {
  const leases = config.scheduler.dispatchLeaseSeconds + config.scheduler.runLeaseSeconds;
  return {
    lambda: config.pools.lambda.maxTimeoutSeconds + leases,
    fargate: config.pools.fargate.maxTimeoutSeconds + leases,
  };
}

export function explainWait(view: WaitView): WaitExplanation {
  const { task, policy, nowMs } = view;
  const baseRank = tierRank(task.priority);
  const agingMs = view.agingSeconds * 1000;
  const rank = policy === 'fifo' ? baseRank : effectiveRank(baseRank, task.agingFromMs, nowMs, agingMs);
  const topAtMs = policy === 'fifo' ? task.agingFromMs : topTierAtMs(baseRank, task.agingFromMs, agingMs);
  const { reason, message } = reasonFor(view, rank);
  const bound = withRateWait(view, boundOf(view, baseRank));
  const onPace = bound.seconds !== null ? bound.pace : undefined;
  const onHeadroom = bound.seconds !== null ? bound.headroom : undefined;
  return {
    reason,
    message,
    baseTier: task.priority,
    effectiveTier: PRIORITY_TIERS[rank] as PriorityTier,
    topTierAtMs: topAtMs,
    waitBoundSeconds: bound.seconds,
    noBound: bound.seconds === null ? { code: bound.why, message: NO_BOUND_MESSAGES[bound.why] } : undefined,
    assumes: bound.seconds === null ? undefined : assumptionsOf(view, onPace, onHeadroom),
    ...(onHeadroom
      ? {
          worstCaseSeconds: onHeadroom.worstCaseSeconds,
          assumedHeadroom: { ...onHeadroom.below, peakUsed: onHeadroom.peakUsed },
        }
      : {}),
    ...(onPace
      ? {
          worstCaseSeconds: onPace.worstCaseSeconds,
          assumedFreed: {
            ...onPace.freed,
            ...(onPace.tenantFreeByMs !== undefined ? { tenantFreeByMs: onPace.tenantFreeByMs } : {}),
          },
          ...(onPace.belowFairShare
            ? {
                assumedBusyWeight: {
                  atMost: onPace.belowFairShare.busyWeightAtMost,
                  fromMs: onPace.freed.fromMs,
                  byMs: onPace.freed.byMs,
                },
              }
            : {}),
        }
      : {}),
  };
}

/** A bound, and when it rests on the pool's pace, what that assumes and the timeout bound it beat. */
type Bound =
  | {
      readonly seconds: number;
      readonly pace?: PaceAnswer | undefined;
      readonly headroom?: HeadroomAnswer | undefined;
    }
  | { readonly seconds: null; readonly why: NoBoundReason };

interface HeadroomAnswer {
  readonly below: HeadroomBound['below'];
  /** The most slots in use lately, as the engine measured them. */
  readonly peakUsed: number;
  /** The bound without this assumption (on the pace or on timeouts). */
  readonly worstCaseSeconds: number;
}

interface PaceAnswer {
  readonly freed: PaceBound['freed'];
  readonly perSecond: number;
  readonly worstCaseSeconds: number;
  /** Its tenant runs tasks at t₀, so their timeouts still count (t₁). */
  readonly tenantBusy: boolean;
  /** Its tenant's running tasks taken to end by then, as its tasks did lately (instead of their timeouts). */
  readonly tenantFreeByMs?: number | undefined;
  /** Its tenant taken to stay below its fair share, so its running tasks do not hold it up (bound.ts). */
  readonly belowFairShare?: BelowFairShare | undefined;
}

interface BelowFairShare {
  /** Its tenant's weighted dominant share at t₀. */
  readonly share: number;
  /** The summed weight of the tenants with work it takes the scheduler to have at most meanwhile. */
  readonly busyWeightAtMost: number;
}

/**
 * Its tenant is below its fair share at t₀, and stays below it while the summed weight of the
 * tenants with work stays at most what it was lately (its share only falls: it submits nothing
 * more, A1). Then tenants that start waiting later do not go before it, whatever its tenant runs
 * (bound.ts `paceBound`). Not when its tenant is at its quota (it waits for its own tasks then)
 * or flow control holds it (its turn is where it is let go).
 */
function belowFairShareOf(view: WaitView, rotation: RotationView, asOfMs: number): BelowFairShare | undefined {
  const { tenantShare: share, busyWeightPeak: peak } = rotation;
  if (share === undefined || peak == null || !(peak > 0) || view.hold) return undefined;
  if (rotation.tenantFreeAtMs <= asOfMs) return undefined;
  if (Math.max(view.tenant.active, rotation.tenantRunning ?? 0) >= view.tenant.maxConcurrency) return undefined;
  return belowFairShare(share, peak) ? { share, busyWeightAtMost: peak } : undefined;
}

function boundOf(view: WaitView, baseRank: number): Bound {
  const { task, policy, nowMs } = view;
  const hold = view.limits.holdSeconds;
  if ((view.dependencies?.length ?? 0) > 0) return { seconds: null, why: 'dependencies' };
  if (!task.fitsPool) return { seconds: null, why: 'never_fits' };
  if (view.tenant.maxConcurrency < 1) return { seconds: null, why: 'quota_zero' };
  const held = view.hold?.constraint;
  if (held === 'tenant_paused' || held === 'type_paused') return { seconds: null, why: 'paused' };
  if (policy !== 'fair-share') {
    return waitBound({
      policy,
      runtime: task.runtime,
      baseRank,
      agingFromMs: task.agingFromMs,
      runAtMs: task.runAtMs,
      nowMs,
      agingSeconds: view.agingSeconds,
      aheadCount: view.aheadCount,
      lambdaConcurrency: view.limits.lambdaConcurrency,
      maxConcurrency: view.tenant.maxConcurrency,
      poolHoldSeconds: hold[task.runtime],
      tenantHoldSeconds: Math.max(hold.lambda, hold.fargate),
      reservations: view.limits.reservations,
      fitsPool: task.fitsPool,
    });
  }
  if (task.runAtMs > nowMs || task.agingFromMs > nowMs) return { seconds: null, why: 'not_due' };
  if (task.runtime === 'fargate' && !view.limits.reservations) return { seconds: null, why: 'no_reservation' };
  const rotation = view.rotation;
  if (!rotation) return { seconds: null, why: 'ahead_unknown' };
  if (rotation.tenantWaiting > 1) return { seconds: null, why: 'tenant_backlog' };
  const asOfMs = rotation.asOfMs ?? nowMs;
  const fromAsOf = rotationBoundSeconds({
    runtime: task.runtime,
    nowMs: asOfMs,
    ahead: rotation.ahead,
    tenantFreeAtMs: rotation.tenantFreeAtMs,
    freeBy: rotation.freeBy,
    slots: view.limits.lambdaConcurrency,
    holdSeconds: hold[task.runtime],
    reservedForOther: view.pool.reservedForOther ?? view.pool.heldForOther,
  });
  const core = (asOfMs - nowMs) / 1000 + fromAsOf;
  const rounds =
    task.runtime === 'lambda' ? Math.floor(rotation.ahead / view.limits.lambdaConcurrency) + 1 : rotation.ahead + 2;
  const seconds = Math.max(0, core + lagSeconds(view.schedulerLag, core, rounds, nowMs));
  // Its tenant's running tasks as they ran lately, when known (and sooner than their timeouts say).
  const lately =
    rotation.tenantFreeAtMs > asOfMs &&
    rotation.tenantFreeAtMsLately !== undefined &&
    rotation.tenantFreeAtMsLately < rotation.tenantFreeAtMs
      ? Math.max(asOfMs, rotation.tenantFreeAtMsLately)
      : undefined;
  const belowFairShare = task.runtime === 'lambda' ? belowFairShareOf(view, rotation, asOfMs) : undefined;
  const pace =
    task.runtime === 'lambda' && rotation.freedPerSecond
      ? paceBound({
          nowMs,
          ahead: rotation.ahead,
          fromMs: asOfMs,
          tenantFreeAtMs: belowFairShare ? asOfMs : (lately ?? rotation.tenantFreeAtMs),
          freedPerSecond: rotation.freedPerSecond,
        })
      : null;
  // On the pool's pace only the last freed slot's round counts: each earlier one overlaps the count.
  const onPace = pace ? Math.max(0, pace.seconds + lagSeconds(view.schedulerLag, pace.seconds, 1, nowMs)) : null;
  const answer: Bound =
    pace === null || onPace === null || onPace >= seconds
      ? { seconds }
      : {
          seconds: onPace,
          pace: {
            freed: pace.freed,
            perSecond: rotation.freedPerSecond as number,
            worstCaseSeconds: seconds,
            tenantBusy: rotation.tenantFreeAtMs > asOfMs && !belowFairShare,
            ...(belowFairShare ? { belowFairShare } : lately !== undefined ? { tenantFreeByMs: lately } : {}),
          },
        };
  return onHeadroomOf(view, rotation, asOfMs, answer) ?? answer;
}

/**
 * The bound on the Lambda pool's headroom (bound.ts `headroomBound`), when the pool has lately
 * kept room for the tenants ahead and this task besides and that answer is the smaller: the
 * answer it beats becomes its worst case. Not for work held by flow control (its key, its start
 * rate) or by its tenant's quota: that waits for something the headroom does not free.
 */
function onHeadroomOf(view: WaitView, rotation: RotationView, asOfMs: number, other: Bound): Bound | undefined {
  const { task, nowMs } = view;
  const peakUsed = rotation.peakUsed;
  const slots = view.limits.lambdaConcurrency;
  if (other.seconds === null || task.runtime !== 'lambda' || view.hold || peakUsed == null) return undefined;
  // At its quota it waits for its tenant's own tasks, which the headroom does not end.
  if (Math.max(view.tenant.active, rotation.tenantRunning ?? 0) >= view.tenant.maxConcurrency) return undefined;
  if (peakUsed + rotation.ahead + 1 > slots) return undefined;
  const fromMs = Math.min(asOfMs, rotation.inEngineAtMs ?? asOfMs);
  const core = headroomBound({ nowMs, fromMs, byMs: nowMs, slots });
  const seconds = Math.max(0, core.seconds + lagSeconds(view.schedulerLag, core.seconds, 1, nowMs));
  if (seconds >= other.seconds) return undefined;
  return {
    seconds,
    headroom: {
      below: { ...core.below, byMs: nowMs + Math.ceil(seconds * 1000) },
      peakUsed,
      worstCaseSeconds: other.pace?.worstCaseSeconds ?? other.seconds,
    },
  };
}

/** The scheduler's lag over a bound of `coreSeconds` with `rounds` rounds (the handovers' own time included). */
export function lagSeconds(lag: SchedulerLag | undefined, coreSeconds: number, rounds: number, nowMs: number): number {
  if (!lag) return 0;
  const acting = lag.perRoundSeconds * rounds;
  if (!lag.handsOverEveryMinute) return acting;
  const waitSeconds = Math.max(0, coreSeconds + acting);
  const planned = lag.plannedHandovers;
  if (!planned || !(planned.everyMs > 0)) {
    return acting + lag.perHandoverSeconds * Math.ceil(waitSeconds / (60 - lag.perHandoverSeconds));
  }
  return acting + lag.perHandoverSeconds * plannedHandoversWithin(planned, nowMs, waitSeconds, lag.perHandoverSeconds);
}

/**
 * The planned handovers a wait of `waitSeconds` from `nowMs` reaches, each lengthening it by
 * `perHandoverSeconds`. The times counted are never later than the real ones: the next one at
 * `nextAtMs` (at once if that is past: one may be under way), and each successor, invoked no
 * sooner than its predecessor's end and running its whole time limit, ends at least `everyMs`
 * after it; a handover counted too early only makes the bound longer.
 */
export function plannedHandoversWithin(
  planned: { readonly nextAtMs: number; readonly everyMs: number },
  nowMs: number,
  waitSeconds: number,
  perHandoverSeconds: number,
): number {
  let endMs = nowMs + waitSeconds * 1000;
  let count = 0;
  const firstMs = Math.max(nowMs, planned.nextAtMs);
  if (firstMs > endMs) return 0;
  count++;
  endMs += perHandoverSeconds * 1000;
  // The successors' ends, nextAtMs + i·everyMs, after the first counted.
  const skipped = Math.max(0, Math.floor((firstMs - planned.nextAtMs) / planned.everyMs));
  for (let atMs = planned.nextAtMs + (skipped + 1) * planned.everyMs; atMs <= endMs; atMs += planned.everyMs) {
    count++;
    endMs += perHandoverSeconds * 1000;
  }
  return count;
}

/**
 * A tenant at its start rate waits for its next token besides: its only waiting task (the bound's
 * case) takes no other task's token, so the wait for one is at most until the bucket's next start.
 */
function withRateWait(view: WaitView, bound: Bound): Bound {
  if (bound.seconds === null || view.hold?.constraint !== 'rate') return bound;
  // On the pace, the wait for a token comes before its turn: the pace bound is no longer the smaller one to trust.
  return {
    seconds: (bound.pace?.worstCaseSeconds ?? bound.seconds) + Math.max(0, (view.hold.nextStartMs - view.nowMs) / 1000),
  };
}

/** What the bound takes for granted of the constraint units (constraints.ts). */
function constraintAssumptions(view: WaitView): string[] {
  const hold = view.hold;
  const parts = ['neither its tenant nor its task type is paused meanwhile'];
  if (hold?.constraint === 'rate') {
    parts.push(
      `its tenant's start rate (${hold.rate.perSecond}/s, burst ${hold.rate.burst}) lets it start by ${new Date(hold.nextStartMs).toISOString()}, and it is not lowered meanwhile`,
    );
  }
  if (hold?.constraint === 'key') {
    parts.push(`the tasks holding its concurrency key ${hold.key} are its tenant's running tasks`);
  }
  return parts;
}

/** On the pace, what it takes of its tenant's running tasks, in words (none when it runs nothing). */
function ownTasksAssumption(pace: PaceAnswer): string[] {
  if (pace.belowFairShare) {
    const { share, busyWeightAtMost } = pace.belowFairShare;
    return [
      `its tenant stays below its fair share while it waits, so its running tasks do not hold it up and no tenant that starts waiting later goes before it: its weighted dominant share (${round3(share)}) is under 1 / the summed weight of the tenants with work in the scheduler, taken to be at most ${round3(busyWeightAtMost)} until it starts, the most it was in any 10 s of the last minute`,
    ];
  }
  if (pace.tenantFreeByMs !== undefined) {
    return [
      `its tenant's running tasks have all ended by ${new Date(pace.tenantFreeByMs).toISOString()}, none running longer than the longest of its tasks did in the last minute`,
    ];
  }
  return pace.tenantBusy
    ? ["its tenant's running tasks hold the pool at most their timeout plus the dispatch and run leases"]
    : [];
}

/** The bound's assumptions in words (bound.ts A1–A3, aging.ts), then the view's own. */
function assumptionsOf(view: WaitView, pace?: PaceAnswer, headroom?: HeadroomAnswer): string {
  const hold = view.limits.holdSeconds;
  const onPace = headroom
    ? [
        `the ${view.task.runtime} pool keeps a free slot from ${new Date(headroom.below.fromMs).toISOString()} until it starts: fewer than ${headroom.below.slots} tasks dispatched or running at every instant (each counted until the scheduler has learned that it ended), as lately (at most ${headroom.peakUsed} in use in any 10 s of the last minute); then the scheduler's first round after it joins starts it (however full the pool gets, it starts within ${Math.ceil(headroom.worstCaseSeconds * 10) / 10} s)`,
      ]
    : pace
      ? [
          `the ${view.task.runtime} pool keeps freeing slots at least at ${round2(pace.perSecond)} a second, the fewest it freed in any 10 s of the last minute: ${pace.freed.slots} between ${new Date(pace.freed.fromMs).toISOString()} and ${new Date(pace.freed.byMs).toISOString()} (however slowly it frees them, it starts within ${Math.ceil(pace.worstCaseSeconds * 10) / 10} s)`,
          ...ownTasksAssumption(pace),
        ]
      : [
          `every task holds its pool at most its timeout plus the dispatch and run leases (for tasks not yet known, the pool's cap: lambda ${hold.lambda} s, fargate ${hold.fargate} s)`,
        ];
  const parts =
    view.policy === 'fair-share'
      ? [
          'its tenant submits nothing more (and none of its delayed work falls due) until it starts',
          ...onPace,
          'a scheduler is running',
        ]
      : [
          'its tenant submits nothing more until it starts',
          `every task holds its pool at most the pool's timeout cap plus the leases (lambda ${hold.lambda} s, fargate ${hold.fargate} s)`,
          'no task older than it is retried meanwhile',
          'a scheduler is running',
        ];
  return [...parts, ...constraintAssumptions(view), ...(view.assumes ?? [])].join('; ');
}

function reasonFor(view: WaitView, rank: number): { reason: WaitReason; message: string } {
  const { task, tenant, pool } = view;
  const dependencies = view.dependencies ?? [];
  if (dependencies.length > 0) {
    const named = `${dependencies.slice(0, 5).join(', ')}${dependencies.length > 5 ? ` and ${dependencies.length - 5} more` : ''}`;
    return {
      reason: 'dependencies',
      message: `Held until ${dependencies.length === 1 ? 'its dependency' : `its ${dependencies.length} dependencies`} ${named} succeed${dependencies.length === 1 ? 's' : ''}`,
    };
  }
  if (task.runAtMs > view.nowMs) {
    return { reason: 'delayed', message: `Not eligible before ${new Date(task.runAtMs).toISOString()}` };
  }
  if (!task.fitsPool)
    return {
      reason: 'capacity',
      message: capacity.describe({ constraint: 'capacity', runtime: task.runtime, never: true }),
    };
  if (view.hold) return { reason: HOLD_REASONS[view.hold.constraint], message: describeHold(view.hold, task.tenantId) };
  if (pool.unknown) {
    return { reason: 'queue', message: 'The scheduler has not reported what is ahead of it yet' };
  }
  if (tenant.active >= tenant.maxConcurrency) {
    return {
      reason: 'tenant_quota',
      message: `Tenant ${task.tenantId} has ${tenant.active} of ${tenant.maxConcurrency} tasks dispatched or running (its maxConcurrency)`,
    };
  }
  if (pool.heldForOther) {
    return {
      reason: 'capacity',
      message: `The ${task.runtime} pool is held for a larger task that goes first; it drains until that one fits`,
    };
  }
  if (!task.fitsFree)
    return {
      reason: 'capacity',
      message: capacity.describe({
        constraint: 'capacity',
        runtime: task.runtime,
        never: false,
        ...(task.heldByAllowance ? { byAllowance: true as const } : {}),
      }),
    };
  const leader = pool.leader;
  if (!leader || leader.taskId === task.taskId) {
    return { reason: 'queue', message: "Nothing ranks ahead of it; it starts on the scheduler's next round" };
  }
  if (view.policy === 'fair-share' && leader.tenantId !== task.tenantId) {
    if (leader.weightedShare < tenant.weightedShare) {
      return {
        reason: 'fair_share',
        message: `Tenant ${task.tenantId} holds a larger weighted share (${pct(tenant.weightedShare)}) than tenants with work ahead (${pct(leader.weightedShare)}); they go first`,
      };
    }
    const ahead = view.rotation?.ahead;
    return {
      reason: 'fair_share',
      message:
        ahead === undefined
          ? `Tenants ahead of ${task.tenantId} in the ${task.runtime} pool's rotation go first, one task each`
          : `${ahead} tenant${ahead === 1 ? '' : 's'} ahead of ${task.tenantId} in the ${task.runtime} pool's rotation go first, one task each`,
    };
  }
  if (view.policy !== 'fifo' && leader.effectiveRank < rank) {
    const tier = PRIORITY_TIERS[leader.effectiveRank] as PriorityTier;
    return { reason: 'priority', message: `Work of a higher tier (${tier}) is ahead of it` };
  }
  return { reason: 'queue', message: 'Older work of its tier is ahead of it' };
}

const pct = (fraction: number) => `${Math.round(fraction * 100)}%`;
const round2 = (value: number) => Math.floor(value * 100) / 100;
const round3 = (value: number) => Math.round(value * 1000) / 1000;
