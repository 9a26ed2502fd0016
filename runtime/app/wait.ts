/**
 * Explaining a wait in the API. The API Lambda does not share memory with the scheduler, so the
 * scheduler publishes a small snapshot (control table) every 2 s; this module fills the core's
 * `WaitView` from the task, its tenant's settings, that snapshot and two facts the describe reads
 * (how many tasks its tenant has waiting; its tenant's running tasks, when needed), and the
 * core's `explainWait` (runtime/core/policy/explain.ts) decides the reason, the message and the
 * bound, exactly as it does for the engine.
 *
 * The bound (fair-share; runtime/core/policy/bound.ts) is proved from an instant t₀ at which the
 * task is in its pool's rotation:
 *
 * - the snapshot's instant, when the task was in the rotation then: the snapshot names it as its
 *   tenant's one waiting task (`waitingTaskId`), and it was due, and its tenant's turn came
 *   (`waitingTurnAt`), INTAKE_ALLOWANCE_MS before the snapshot (so every task due before that
 *   turn is in the snapshot too). The snapshot gives k
 *   (the tenants waiting in the pool, less its own), when the slots free (the running tasks'
 *   holds) and when its tenant's running tasks end;
 * - else the latest instant it joins (now, or its due time + INTAKE_ALLOWANCE_MS). Then k also
 *   counts the tenants that may have joined since the snapshot (as many as joined in the minute
 *   before it: an assumption, said so), every slot frees by then + τ, and its tenant's running
 *   tasks are read from the store.
 *
 * The snapshot's ends of the running tasks are not used for a task the snapshot predates: any slot
 * may be refilled, with a task running to the pool's cap, before the task joins (docs/policy.md,
 * "How tight it can be at submit").
 *
 * The core adds the scheduler's lag it is given (`WaitView.schedulerLag`): SCHEDULER_PACE_SECONDS
 * per round of the proof and HANDOVER_SECONDS per handover the wait reaches: the scheduler Lambda
 * publishes when its invocation ends and how long one runs (`rotation.handover`), so only those are
 * counted; without that, one per started minute. A long-lived scheduler (`scheduler.mode`
 * "service") hands over only when replaced: none counted. Under `priority`
 * and `fifo` it gives none: every older task of the pool counts there, and no process counts them.
 */
import type { SchedulerConfig } from '../core/config.ts';
import type { Hold } from '../core/policy/constraints.ts';
import {
  addInto,
  capacityOf,
  demandOf,
  dominantShare,
  explainWait as explainInCore,
  holdSecondsOf,
  type NoBoundReason,
  noBoundOf,
  type RotationView,
  taskHoldSeconds,
  WAIT_REASONS,
  type WaitReason,
  zeroVector,
} from '../core/policy/index.ts';
import { ownEntry } from '../core/records.ts';
import { INTAKE_ALLOWANCE_MS, type SchedulerSnapshot } from '../core/scheduler-snapshot.ts';
import type { PriorityTier, Task, TenantSettings } from '../core/task.ts';

export { INTAKE_ALLOWANCE_MS, WAIT_REASONS, type WaitReason };
/** How long the scheduler may take to act on a freed slot (a completion's trip, a tick). */
export const SCHEDULER_PACE_SECONDS = 2;
/**
 * What one handover costs (settle after the predecessor's lease, rebuild): for each one the
 * snapshot's scheduler planned within the wait, or one per started minute when it gave no plan.
 */
export const HANDOVER_SECONDS = 5;
/** A snapshot's planned handovers are used while it is this fresh (it is published every 2 s). */
const PLANNED_HANDOVERS_FRESH_MS = 10_000;

export interface WaitInfo {
  readonly reason: WaitReason;
  readonly message: string;
  /** The tier the task competes in now, after aging. */
  readonly effectiveTier: PriorityTier;
  readonly waitedSeconds: number;
  /** Seconds until the task reaches the top tier (aging), after which only older work goes first. */
  readonly secondsToTopTier: number;
  /** Upper bound on the remaining wait in seconds, or null when none can be given (see noBound). */
  readonly maxWaitSeconds: number | null;
  /** What the bound takes for granted, in words (with a bound). */
  readonly assumes?: string | undefined;
  /**
   * When the bound rests on the pool's pace (fair-share, Lambda): the bound on timeouts alone,
   * which holds however slowly the pool frees slots.
   */
  readonly worstCaseSeconds?: number | undefined;
  /**
   * When the bound rests on the pool's pace: it assumes at least `slots` freed between `from` and
   * `by`, and (`tenantFreeBy`, when its tenant runs tasks) that they have all ended by then.
   */
  readonly assumedFreed?:
    | { readonly slots: number; readonly from: string; readonly by: string; readonly tenantFreeBy?: string }
    | undefined;
  /**
   * When the bound counts the tenants that may join its pool's rotation after the snapshot (a task
   * the snapshot predates): at most `atMost` other tenants start waiting there between `from` and `by`.
   */
  readonly assumedJoins?: { readonly atMost: number; readonly from: string; readonly by: string } | undefined;
  /**
   * When the bound on the pool's pace took its tenant to stay below its fair share (so its running
   * tasks do not hold it up): the summed weight of the tenants with work in the scheduler stays at
   * most `atMost` at every instant between `from` and `by`.
   */
  readonly assumedBusyWeight?: { readonly atMost: number; readonly from: string; readonly by: string } | undefined;
  /**
   * When the bound rests on the Lambda pool's headroom (light load): it assumes fewer than `slots`
   * tasks dispatched or running at every instant between `from` and `by`, as lately (at most
   * `peakUsed` in use): then the scheduler's first round after the task joins starts it.
   */
  readonly assumedHeadroom?:
    | { readonly slots: number; readonly from: string; readonly by: string; readonly peakUsed: number }
    | undefined;
  /** Why there is no bound, when there is none. */
  readonly noBound?: { readonly code: NoBoundReason; readonly message: string } | undefined;
  /** Time the snapshot the explanation rests on was taken. */
  readonly asOf?: string | undefined;
}

/** What the describe read besides the task and the snapshot. */
export interface TenantFacts {
  /** Its tenant's QUEUED tasks, counted up to 2 (1: the task is its only waiting one). */
  readonly waiting: number;
  /** Its tenant's dispatched and running tasks, when read (`needsRunningTasks`). */
  readonly running?:
    | readonly Pick<Task, 'dispatchedAt' | 'runAt' | 'timeoutSeconds' | 'runtime' | 'resources'>[]
    | undefined;
}

/** Whether the bound needs the tenant's running tasks read from the store (the snapshot cannot say). */
export function needsRunningTasks(
  task: Task,
  snapshot: SchedulerSnapshot | undefined,
  config: SchedulerConfig,
): boolean {
  return config.policy === 'fair-share' && snapshot?.rotation !== undefined && !inRotationAt(task, snapshot);
}

export function explainWait(
  task: Task,
  input: {
    config: SchedulerConfig;
    tenant: TenantSettings;
    snapshot: SchedulerSnapshot | undefined;
    now: Date;
    facts?: TenantFacts | undefined;
    /** What flow control holds it on (a pause, its key, its tenant's start rate), from the durable records. */
    hold?: Hold | undefined;
  },
): WaitInfo {
  const { config, tenant, snapshot, now } = input;
  const nowMs = now.getTime();
  const agingFromMs = Date.parse(task.agingFrom);
  const share = ownEntry(snapshot?.tenants, task.tenantId);
  const pools = config.pools;
  const fitsPool =
    task.runtime === 'lambda' ||
    (task.resources.vcpu <= pools.fargate.vcpu && task.resources.memoryMiB <= pools.fargate.memoryMiB);
  const queue = snapshot?.queue?.[task.runtime];
  const heldFor = queue?.heldForTaskId ?? null;
  const plannedHandovers = plannedHandoversOf(snapshot, config, nowMs);
  const rotation =
    snapshot && input.facts
      ? rotationOf(task, snapshot, config, tenant, input.facts, nowMs, handoverAssumption(config, plannedHandovers))
      : undefined;
  const sharded = input.config.scheduler.shards > 1;
  const explanation = explainInCore({
    policy: config.policy,
    agingSeconds: config.agingSeconds,
    nowMs,
    task: {
      taskId: task.taskId,
      tenantId: task.tenantId,
      priority: task.priority,
      runtime: task.runtime,
      agingFromMs,
      runAtMs: Date.parse(task.runAt),
      fitsPool,
      fitsFree: snapshot ? fitsFree(snapshot, task) : true,
      heldByAllowance: snapshot ? heldByAllowance(snapshot, task) : false,
    },
    tenant: {
      active: share?.running ?? 0,
      maxConcurrency: tenant.maxConcurrency,
      weightedShare: share ? share.dominantShare / share.weight : 0,
    },
    pool: {
      heldForOther: heldFor !== null && heldFor !== task.taskId,
      reservedForOther: rotation?.reservedForOther,
      leader: queue?.leader ?? null,
      unknown: queue ? undefined : true,
    },
    aheadCount: null,
    rotation: rotation?.view,
    limits: {
      lambdaConcurrency: pools.lambda.concurrency,
      holdSeconds: holdSecondsOf(config),
      reservations: true,
    },
    hold: input.hold,
    dependencies: task.state === 'QUEUED' ? task.waitingOn : undefined,
    assumes: rotation?.assumes,
    schedulerLag: {
      perRoundSeconds: SCHEDULER_PACE_SECONDS,
      perHandoverSeconds: HANDOVER_SECONDS,
      // A long-lived scheduler (scheduler.mode "service") hands over only when it is replaced.
      handsOverEveryMinute: config.scheduler.mode !== 'service',
      plannedHandovers,
    },
  });
  const freed = explanation.assumedFreed;
  return {
    reason: explanation.reason,
    message: explanation.message,
    effectiveTier: explanation.effectiveTier,
    waitedSeconds: round(Math.max(0, (nowMs - agingFromMs) / 1000)),
    secondsToTopTier: round(Math.max(0, (explanation.topTierAtMs - nowMs) / 1000)),
    // Sharded, the shard's allowance of the pool can shrink under the other shards' demand: the
    // bound's premise (slots free as the running tasks end) does not hold (docs/scaling.md).
    ...(sharded && explanation.waitBoundSeconds !== null
      ? { maxWaitSeconds: null, assumes: undefined, noBound: noBoundOf('sharded') }
      : {
          maxWaitSeconds: explanation.waitBoundSeconds === null ? null : roundUp(explanation.waitBoundSeconds),
          assumes: explanation.assumes,
          noBound: explanation.noBound,
          ...(freed && explanation.worstCaseSeconds !== undefined
            ? {
                worstCaseSeconds: roundUp(explanation.worstCaseSeconds),
                assumedFreed: {
                  slots: freed.slots,
                  from: new Date(freed.fromMs).toISOString(),
                  by: new Date(freed.byMs).toISOString(),
                  ...(freed.tenantFreeByMs !== undefined
                    ? { tenantFreeBy: new Date(freed.tenantFreeByMs).toISOString() }
                    : {}),
                },
              }
            : {}),
          ...(explanation.assumedHeadroom && explanation.worstCaseSeconds !== undefined
            ? {
                worstCaseSeconds: roundUp(explanation.worstCaseSeconds),
                assumedHeadroom: {
                  slots: explanation.assumedHeadroom.slots,
                  from: new Date(explanation.assumedHeadroom.fromMs).toISOString(),
                  by: new Date(explanation.assumedHeadroom.byMs).toISOString(),
                  peakUsed: explanation.assumedHeadroom.peakUsed,
                },
              }
            : {}),
          ...(explanation.assumedBusyWeight
            ? {
                assumedBusyWeight: {
                  atMost: explanation.assumedBusyWeight.atMost,
                  from: new Date(explanation.assumedBusyWeight.fromMs).toISOString(),
                  by: new Date(explanation.assumedBusyWeight.byMs).toISOString(),
                },
              }
            : {}),
          ...(explanation.waitBoundSeconds !== null && rotation?.joins
            ? {
                assumedJoins: {
                  atMost: rotation.joins.atMost,
                  from: new Date(rotation.joins.fromMs).toISOString(),
                  by: new Date(rotation.joins.byMs).toISOString(),
                },
              }
            : {}),
        }),
    asOf: snapshot?.at,
  };
}

/**
 * The handovers its snapshot's scheduler planned (a Lambda invocation's end, and each successor's
 * at least a run later), when the snapshot is fresh: an older one may be from a scheduler that has
 * stopped for want of work, whose successor (a wake) has a plan of its own.
 */
function plannedHandoversOf(
  snapshot: SchedulerSnapshot | undefined,
  config: SchedulerConfig,
  nowMs: number,
): { nextAtMs: number; everyMs: number } | undefined {
  const handover = snapshot?.rotation?.handover;
  if (!snapshot || !handover || config.scheduler.mode === 'service') return undefined;
  const atMs = Date.parse(snapshot.at);
  if (!(nowMs - atMs <= PLANNED_HANDOVERS_FRESH_MS) || !(handover.everySeconds >= 1)) return undefined;
  return { nextAtMs: atMs + handover.inSeconds * 1000, everyMs: handover.everySeconds * 1000 };
}

/**
 * The task was in its pool's rotation at the snapshot's instant, with every tenant whose turn is
 * before its own: the snapshot names it as its tenant's one waiting task there (a count of one is
 * not enough: that one may be another task of the tenant, one taken in before this was or a
 * Fargate one, while this is not in the engine yet), and it was due INTAKE_ALLOWANCE_MS before the
 * snapshot. A tenant's turn is when its work became due, not when the scheduler took it in, so a
 * task due a moment before this one but taken in after the snapshot goes before it uncounted; the
 * allowance puts every such task in the snapshot (chaos `bounds` seed 6 broke an answer without it).
 * Its own tenant's turn is later than its due time when the tenant was served since (another of its
 * tasks started): then the allowance runs from that turn (`waitingTurnAt`), or a task of another
 * tenant due between the two and taken in after the snapshot would go before it uncounted.
 */
function inRotationAt(task: Task, snapshot: SchedulerSnapshot): boolean {
  const dueMs = Math.max(Date.parse(task.runAt), Date.parse(task.agingFrom));
  // Its tenant's turn, when published: later than its due time when the tenant was served since.
  const turnAt = ownEntry(snapshot.tenants, task.tenantId)?.waitingTurnAt;
  const turnMs = turnAt === undefined ? dueMs : Math.max(dueMs, Date.parse(turnAt));
  return namedAt(task, snapshot) && turnMs + INTAKE_ALLOWANCE_MS <= Date.parse(snapshot.at);
}

/** The snapshot names the task as its tenant's one waiting task: it was in the engine at the snapshot. */
function namedAt(task: Task, snapshot: SchedulerSnapshot): boolean {
  const own = ownEntry(snapshot.tenants, task.tenantId);
  return own?.queued === 1 && own.waitingTaskId === task.taskId;
}

function rotationOf(
  task: Task,
  snapshot: SchedulerSnapshot,
  config: SchedulerConfig,
  tenant: TenantSettings,
  facts: TenantFacts,
  nowMs: number,
  /** What it assumes of the scheduler's lag, in words (`handoverAssumption`). */
  handover: string,
):
  | {
      view: RotationView;
      reservedForOther: boolean;
      assumes: string[];
      joins?: { atMost: number; fromMs: number; byMs: number };
    }
  | undefined {
  const published = snapshot.rotation;
  if (!published) return undefined;
  const atMs = Date.parse(snapshot.at);
  if (!intakeSettled(published, atMs)) return undefined;
  const pool = published[task.runtime];
  const holdMs = holdSecondsOf(config)[task.runtime] * 1000;
  const slots = task.runtime === 'lambda' ? config.pools.lambda.concurrency : 1;
  const at = snapshot.at.slice(11, 19);
  let view: RotationView;
  let reservedForOther: boolean;
  let joins: { atMost: number; fromMs: number; byMs: number } | undefined;
  const assumes: string[] = [];
  if (inRotationAt(task, snapshot)) {
    // t₀ = the snapshot's instant: its tenant is one of the `waiting`, and nothing that joined later is ahead.
    const busyFor = ownEntry(published.busyFor, task.tenantId);
    const busyForLately = ownEntry(published.busyForLately, task.tenantId);
    const own = ownEntry(snapshot.tenants, task.tenantId);
    view = {
      ahead: Math.max(0, pool.waiting - 1),
      waiting: pool.waiting,
      tenantWaiting: facts.waiting,
      tenantFreeAtMs: atMs + (busyFor ?? 0) * 1000,
      freeBy: pool.freeBy.map(([n, seconds]) => [n, atMs + seconds * 1000] as const),
      asOfMs: atMs,
      freedPerSecond: pool.freedPerSecond ?? null,
      peakUsed: pool.peakUsed ?? null,
      ...(busyForLately !== undefined ? { tenantFreeAtMsLately: atMs + busyForLately * 1000 } : {}),
      // The snapshot rounds the share to the thousandth: taken at the top of that rounding.
      ...(own && own.weight > 0 ? { tenantShare: (own.dominantShare + 0.0005) / own.weight } : {}),
      busyWeightPeak: published.busyWeightPeak ?? null,
    };
    reservedForOther = pool.reservedFor !== null && pool.reservedFor !== task.taskId;
    assumes.push(
      `it counts the ${pool.waiting - 1} other tenant${pool.waiting === 2 ? '' : 's'} waiting in the ${task.runtime} pool at the scheduler's snapshot of ${at} UTC, and its tenant's running tasks then (its tenant submits nothing after it)`,
    );
  } else {
    // t₀ = the latest instant it joins; tenants may have joined since the snapshot, slots been refilled.
    if (facts.running === undefined) return undefined;
    const dueMs = Math.max(Date.parse(task.runAt), Date.parse(task.agingFrom));
    const joinsMs = Math.max(nowMs, dueMs + INTAKE_ALLOWANCE_MS);
    const tenantFreeAtMs = Math.max(
      joinsMs,
      ...(facts.running ?? []).map(
        (running) =>
          Date.parse(running.dispatchedAt ?? running.runAt) + taskHoldSeconds(config, running.timeoutSeconds) * 1000,
      ),
    );
    view = {
      ahead: pool.waiting + pool.joinedLastMinute,
      waiting: pool.waiting,
      tenantWaiting: facts.waiting,
      tenantFreeAtMs,
      freeBy: [[slots, joinsMs + holdMs]],
      asOfMs: joinsMs,
      freedPerSecond: pool.freedPerSecond ?? null,
      peakUsed: pool.peakUsed ?? null,
      tenantRunning: facts.running.length,
      // Named by the snapshot, it was in the engine then (due too recently to count the others from there).
      ...(namedAt(task, snapshot) ? { inEngineAtMs: atMs } : {}),
      ...lately(facts.running, ownEntry(snapshot.tenants, task.tenantId)?.longestRunSeconds, nowMs),
      ...(tenant.weight > 0 ? { tenantShare: dominantShareOf(facts.running, config) / tenant.weight } : {}),
      busyWeightPeak: published.busyWeightPeak ?? null,
    };
    reservedForOther = true;
    joins = { atMost: pool.joinedLastMinute, fromMs: atMs, byMs: joinsMs };
    assumes.push(
      `the scheduler takes it in within ${INTAKE_ALLOWANCE_MS / 1000} s of its being due`,
      `no more tenants start waiting in the ${task.runtime} pool between the scheduler's snapshot of ${at} UTC and then than the ${pool.joinedLastMinute} that did in the minute before it (it counts ${view.ahead} tenants ahead)`,
    );
  }
  assumes.push(
    "its tenant's waiting (and, when read, running) tasks are as its indexes show them (they lag about a second)",
    handover,
  );
  return { view, reservedForOther, assumes, ...(joins ? { joins } : {}) };
}

/**
 * The snapshot's scheduler had taken in what was due when it published: it had read every
 * tenant-tier it restored when it took over, and had run for the intake allowance since (the
 * announcements its predecessor handed back take a receive or two). A scheduler that has just
 * taken over takes the waiting work in again; a task due before another but taken in after the
 * snapshot has the earlier turn and is not counted (chaos `bounds` seed 4 broke an answer so).
 */
function intakeSettled(published: NonNullable<SchedulerSnapshot['rotation']>, atMs: number): boolean {
  if ((published.unread ?? 0) > 0) return false;
  return published.resumedAt === undefined || Date.parse(published.resumedAt) + INTAKE_ALLOWANCE_MS <= atMs;
}

/** The scheduler's lag in words: the handovers as planned (`plannedHandoversOf`), or one per minute. */
function handoverAssumption(
  config: SchedulerConfig,
  planned: { readonly nextAtMs: number; readonly everyMs: number } | undefined,
): string {
  if (config.scheduler.mode === 'service') {
    return `the scheduler acts on a freed slot within ${SCHEDULER_PACE_SECONDS} s; a crash, a stall, a restart after a failed call or its replacement (a deploy) is not included; nor a worker's report of a task's end that reaches it late (a receive whose answer was lost: its lease sweep then finds the end)`;
  }
  const handsOver = planned
    ? `hands over at ${new Date(planned.nextAtMs).toISOString().slice(11, 19)} UTC and then no more often than every ${planned.everyMs / 1000} s (its Lambda's time limit), each within ${HANDOVER_SECONDS} s`
    : `hands over (every minute on AWS) within ${HANDOVER_SECONDS} s`;
  return `the scheduler acts on a freed slot within ${SCHEDULER_PACE_SECONDS} s and ${handsOver}; a crash, a stall or a restart after a failed call beyond that is not included; nor a worker's report of a task's end that reaches it late (a receive whose answer was lost: its lease sweep then finds the end)`;
}

/**
 * When its tenant's running tasks (as read) end if none runs longer than its tasks did in the last
 * minute (`longestRunSeconds`): none when that is not known or one already ran longer.
 */
function lately(
  running: TenantFacts['running'],
  longestRunSeconds: number | undefined,
  nowMs: number,
): { tenantFreeAtMsLately?: number } {
  if (!running?.length || longestRunSeconds === undefined) return {};
  let until = nowMs;
  for (const task of running) {
    const endsMs = Date.parse(task.dispatchedAt ?? task.runAt) + longestRunSeconds * 1000;
    if (!(endsMs >= nowMs)) return {};
    until = Math.max(until, endsMs);
  }
  return { tenantFreeAtMsLately: until };
}

/** What the tasks hold of the pools, the largest fraction of any one resource, as the engine counts it. */
function dominantShareOf(running: NonNullable<TenantFacts['running']>, config: SchedulerConfig): number {
  const used = zeroVector();
  for (const task of running) addInto(used, demandOf(task.runtime, task.resources), 1);
  return dominantShare(used, capacityOf(config.pools));
}

/** It fits what its scheduler may fill of its pool now (sharded: its shard's allowance). */
function fitsFree(snapshot: SchedulerSnapshot, task: Task): boolean {
  if (task.runtime === 'lambda') {
    const lambda = snapshot.pools.lambda;
    return lambda.used < Math.min(lambda.capacity, lambda.allowance ?? lambda.capacity);
  }
  const pool = snapshot.pools.fargate;
  return (
    pool.vcpuUsed + task.resources.vcpu <= Math.min(pool.vcpu, pool.allowanceVcpu ?? pool.vcpu) &&
    pool.memoryMiBUsed + task.resources.memoryMiB <= Math.min(pool.memoryMiB, pool.allowanceMemoryMiB ?? pool.memoryMiB)
  );
}

/** It does not fit now only because its shard's allowance is less than the pool. */
function heldByAllowance(snapshot: SchedulerSnapshot, task: Task): boolean {
  const pools = snapshot.pools;
  const smaller =
    task.runtime === 'lambda'
      ? pools.lambda.allowance !== undefined && pools.lambda.allowance < pools.lambda.capacity
      : (pools.fargate.allowanceVcpu ?? pools.fargate.vcpu) < pools.fargate.vcpu ||
        (pools.fargate.allowanceMemoryMiB ?? pools.fargate.memoryMiB) < pools.fargate.memoryMiB;
  return smaller && !fitsFree(snapshot, task);
}

const round = (seconds: number) => Math.round(seconds * 10) / 10;
/** Up to the tenth: a bound is never rounded down. */
const roundUp = (seconds: number) => Math.ceil(seconds * 10) / 10;
