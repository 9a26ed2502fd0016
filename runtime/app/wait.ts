/**
 * Explaining a wait in the API. The API Lambda does not share memory with the scheduler, so the
 * scheduler publishes a small snapshot (control table) every few seconds; this module fills the
 * core's `WaitView` from the task, its tenant's settings and that snapshot, and the core's
 * `explainWait` (runtime/core/policy/explain.ts) decides the reason, the message and the bound,
 * exactly as it does for the engine.
 *
 * The snapshot cannot say how many tasks are ahead of a task: the scheduler holds a window of
 * the tier queues, the rest wait in SQS, and SQS counts are approximate. So the API gives no
 * bound (`maxWaitSeconds: null`, `noBound.code: ahead_unknown`) rather than one that could be
 * broken; docs/policy.md gives the bound's formula and its value in the default configuration.
 */
import type { SchedulerConfig } from '../core/config.ts';
import {
  explainWait as explainInCore,
  holdSecondsOf,
  type NoBoundReason,
  WAIT_REASONS,
  type WaitReason,
} from '../core/policy/index.ts';
import type { SchedulerSnapshot } from '../core/scheduler-snapshot.ts';
import type { PriorityTier, Task, TenantSettings } from '../core/task.ts';

export { WAIT_REASONS, type WaitReason };

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
  /** Why there is no bound, when there is none. */
  readonly noBound?: { readonly code: NoBoundReason; readonly message: string } | undefined;
  /** Time the snapshot the explanation rests on was taken. */
  readonly asOf?: string | undefined;
}

export function explainWait(
  task: Task,
  input: { config: SchedulerConfig; tenant: TenantSettings; snapshot: SchedulerSnapshot | undefined; now: Date },
): WaitInfo {
  const { config, tenant, snapshot, now } = input;
  const nowMs = now.getTime();
  const agingFromMs = Date.parse(task.agingFrom);
  const share = snapshot?.tenants[task.tenantId];
  const pools = config.pools;
  const fitsPool =
    task.runtime === 'lambda' ||
    (task.resources.vcpu <= pools.fargate.vcpu && task.resources.memoryMiB <= pools.fargate.memoryMiB);
  const queue = snapshot?.queue?.[task.runtime];
  const heldFor = queue?.heldForTaskId ?? null;
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
    },
    tenant: {
      active: share?.running ?? 0,
      maxConcurrency: tenant.maxConcurrency,
      weightedShare: share ? share.dominantShare / share.weight : 0,
    },
    pool: {
      heldForOther: heldFor !== null && heldFor !== task.taskId,
      leader: queue?.leader ?? null,
      unknown: queue ? undefined : true,
    },
    aheadCount: null,
    limits: {
      lambdaConcurrency: pools.lambda.concurrency,
      holdSeconds: holdSecondsOf(config),
      reservations: true,
    },
  });
  return {
    reason: explanation.reason,
    message: explanation.message,
    effectiveTier: explanation.effectiveTier,
    waitedSeconds: round(Math.max(0, (nowMs - agingFromMs) / 1000)),
    secondsToTopTier: round(Math.max(0, (explanation.topTierAtMs - nowMs) / 1000)),
    maxWaitSeconds: explanation.waitBoundSeconds === null ? null : round(explanation.waitBoundSeconds),
    noBound: explanation.noBound,
    asOf: snapshot?.at,
  };
}

function fitsFree(snapshot: SchedulerSnapshot, task: Task): boolean {
  if (task.runtime === 'lambda') return snapshot.pools.lambda.used < snapshot.pools.lambda.capacity;
  const pool = snapshot.pools.fargate;
  return (
    pool.vcpuUsed + task.resources.vcpu <= pool.vcpu && pool.memoryMiBUsed + task.resources.memoryMiB <= pool.memoryMiB
  );
}

const round = (seconds: number) => Math.round(seconds * 10) / 10;
