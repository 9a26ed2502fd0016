/**
 * Aging and the wait bound.
 *
 * Aging: a task of base rank r (critical 0 … low 3) that has waited w = now − agingFrom competes
 * at effective rank max(0, r − ⌊w / A⌋), A = agingSeconds. So a `low` task is `normal` after A,
 * `high` after 2A and `critical` after 3A. Within an effective tier, older tasks (smaller
 * agingFrom, then seq) go first. Retries keep agingFrom, so a retried task keeps its age.
 *
 * Bounded overtaking. Write T = agingFrom + r·A for the instant the task reaches the top tier.
 * Before T it can be passed by anything of a higher effective tier. From T on it sits at the top
 * tier, where only tasks OLDER than it rank ahead of it, and older tasks are a finite set that no
 * new submission can grow (a new task is younger). So after T nothing submitted after the task
 * can pass it while it is eligible (under `priority` and `fifo`; `fair-share` orders tenants by
 * share and rotation, and only a tenant's own work by tier: bound.ts).
 *
 * Maximum wait under `priority` and `fifo` (proof sketch; `fair-share` has its own, bound.ts).
 * Assumptions: a dispatched task holds its pool's capacity at most τ_pool (timeout cap + leases,
 * enforced at submit), so any task of the tenant at most τ_tenant (the larger of the pools' τ);
 * the task's tenant submits nothing new while it waits; no task older than it is re-added (a
 * retry of a task running now). Let k be the waiting tasks that can still go first once it is
 * top tier: the waiting tasks of its pool older than it, plus every other waiting task of its
 * tenant (they take its quota). Write W = τ_tenant + τ_pool, Q its tenant's maxConcurrency, c
 * the Lambda slots.
 *
 * Events: a start of one of the k + 1 tasks (the k and the task). Claim: every window
 * [s, s + W] after T in which the task still waits holds an event. Otherwise its tenant starts
 * nothing in the window (all its waiting tasks are among the k + 1), so by s + τ_tenant it runs
 * nothing and is below quota. From then on only the k + 1 can be the pool's best, so only they
 * start in the pool, or (Fargate) tasks that end before the best one would fit anyway (EASY
 * backfill, policy.ts): by s + W the tasks running at s + τ_tenant have ended, the best task
 * fits, and the scheduler (work conserving) starts it: an event. Each task starts once, so
 *
 *     Fargate: wait ≤ (T − now) + W · (k + 1)          (no bound with reservations off)
 *     Lambda:  wait ≤ (T − now) + W · ⌈(k + 1) / p⌉
 *
 * Lambda tasks are all one size: each window starts p = min(c, Q) of the k + 1 (fewer than p
 * busy slots at the window's end means one of them starts). `fifo` has no aging: T = agingFrom.
 */
import type { PolicyName } from '../config.ts';
import type { Runtime } from '../task.ts';

/** The rank a task competes at now (0 = critical). Never below 0, never above its base rank. */
export function effectiveRank(baseRank: number, agingFromMs: number, nowMs: number, agingMs: number): number {
  if (baseRank === 0 || nowMs <= agingFromMs) return baseRank;
  return Math.max(0, baseRank - Math.floor((nowMs - agingFromMs) / agingMs));
}

/** The next instant the task's effective rank improves, or Infinity once it is top tier. */
export function nextPromotionMs(baseRank: number, agingFromMs: number, nowMs: number, agingMs: number): number {
  const rank = effectiveRank(baseRank, agingFromMs, nowMs, agingMs);
  if (rank === 0) return Number.POSITIVE_INFINITY;
  return agingFromMs + (baseRank - rank + 1) * agingMs;
}

/** When the task reaches the top tier (T in the proof above). */
export function topTierAtMs(baseRank: number, agingFromMs: number, agingMs: number): number {
  return agingFromMs + baseRank * agingMs;
}

/** Why no bound can be given. */
export const NO_BOUND_REASONS = [
  'never_fits',
  'quota_zero',
  'not_aging_yet',
  'not_due',
  'tenant_backlog',
  'ahead_unknown',
  'no_reservation',
  'paused',
  'dependencies',
  'sharded',
] as const;
export type NoBoundReason = (typeof NO_BOUND_REASONS)[number];

export interface WaitBoundInput {
  readonly policy: PolicyName;
  readonly runtime: Runtime;
  readonly baseRank: number;
  readonly agingFromMs: number;
  readonly runAtMs: number;
  readonly nowMs: number;
  readonly agingSeconds: number;
  /** k: tasks that can still go first once it is top tier (see above), or null when not known. */
  readonly aheadCount: number | null;
  /** c: slots of the Lambda pool. */
  readonly lambdaConcurrency: number;
  /** Q: its tenant's maxConcurrency. */
  readonly maxConcurrency: number;
  /** τ_pool: the longest one task holds capacity of its pool. */
  readonly poolHoldSeconds: number;
  /** τ_tenant: the longest one task holds capacity of any pool. */
  readonly tenantHoldSeconds: number;
  /** EASY backfill on (policy.ts); off, a Fargate task has no bound. */
  readonly reservations: boolean;
  /** False when the task is bigger than its whole pool. */
  readonly fitsPool: boolean;
}

export type WaitBound = { readonly seconds: number } | { readonly seconds: null; readonly why: NoBoundReason };

/** Upper bound on the remaining wait in seconds under priority or fifo (proved above), or why none holds. */
export function waitBound(input: WaitBoundInput): WaitBound {
  if (!input.fitsPool) return { seconds: null, why: 'never_fits' };
  if (input.maxConcurrency < 1) return { seconds: null, why: 'quota_zero' };
  if (input.agingFromMs > input.nowMs) return { seconds: null, why: 'not_aging_yet' };
  if (input.aheadCount === null) return { seconds: null, why: 'ahead_unknown' };
  const fargate = input.runtime === 'fargate';
  if (fargate && !input.reservations) return { seconds: null, why: 'no_reservation' };
  const agingMs = input.agingSeconds * 1000;
  const promotedAt =
    input.policy === 'fifo' ? input.agingFromMs : topTierAtMs(input.baseRank, input.agingFromMs, agingMs);
  const topAt = Math.max(input.nowMs, input.runAtMs, promotedAt);
  const tasks = input.aheadCount + 1;
  const perWindow = Math.max(1, Math.min(input.lambdaConcurrency, input.maxConcurrency));
  const windows = fargate ? tasks : Math.ceil(tasks / perWindow);
  return { seconds: (topAt - input.nowMs) / 1000 + windows * (input.poolHoldSeconds + input.tenantHoldSeconds) };
}

/** The bound in seconds, or null when none holds (see `waitBound` for why). */
export function waitBoundSeconds(input: WaitBoundInput): number | null {
  return waitBound(input).seconds;
}
