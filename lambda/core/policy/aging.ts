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
 * can pass it while it is eligible — under `fair-share`, except tenants below its tenant's
 * weighted share (that is the point of fair share), and that overtaking is bounded below.
 *
 * Maximum wait (proof sketch). Let τ bound how long a dispatched task holds capacity (timeout +
 * lease), k the tasks that can still rank ahead of it after T (waiting tasks of its pool older
 * than it, plus its tenant's waiting tasks in the other pool, which take the same quota), Q its tenant's
 * maxConcurrency and c the Lambda pool's slots. Consider any window [s, s + 2τ] after T in which
 * the task still waits. Unless p = min(c, Q) of those k tasks (or the task) are dispatched in
 * the window: its tenant dispatches fewer than p tasks in the window (its dispatches after T are
 * among the k), every task active at s ends by s + τ, so from s + τ its tenant is below quota
 * and only the k may start; every task started before s + τ ends by s + 2τ, so at s + 2τ fewer
 * than p ≤ c slots are busy and the scheduler, being work conserving, starts one of the k or the
 * task. Hence every 2τ window dispatches p of them and
 *
 *     wait ≤ (T − now) + 2τ · ⌈(k + 1) / p⌉
 *
 * Fair-share (share, tier, age): within its tenant the order is the priority order above. Once
 * its tenant has nothing running (within τ of its last start) its weighted dominant share is 0,
 * the minimum; among tenants at share 0 a top-tier head loses only to older top-tier heads, which
 * are among the k. So the same window argument holds with p = 1 (each start of its tenant raises
 * its share and lets lighter tenants go first, which is fair share doing its job).
 * Fargate: tasks differ in size, so p = 1 (an empty pool fits any task that fits the pool), plus
 * one window for a reservation taken before T by a larger task. fifo: no aging, T = now.
 * The bound counts only tasks the policy holds and assumes no older task is re-added (a retry of
 * an older task) and no new work of its tenant in the other pool.
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

export interface WaitBoundInput {
  readonly policy: PolicyName;
  readonly runtime: Runtime;
  readonly baseRank: number;
  readonly agingFromMs: number;
  readonly runAtMs: number;
  readonly nowMs: number;
  readonly agingSeconds: number;
  /** k: tasks that can still go first once it is top tier (see the proof above). */
  readonly aheadCount: number;
  /** c: slots of the Lambda pool. */
  readonly lambdaConcurrency: number;
  /** Q: its tenant's maxConcurrency. */
  readonly maxConcurrency: number;
  /** τ: upper bound on how long a dispatched task holds capacity. */
  readonly maxHoldSeconds: number;
  /** False when the task is bigger than its whole pool. */
  readonly fitsPool: boolean;
}

/**
 * Upper bound on the remaining wait in seconds, or null when none holds: the task never fits
 * its pool, its tenant may run nothing (quota 0), or it has not started aging yet (agingFrom in
 * the future: tasks submitted before then are older and can still go first).
 */
export function waitBoundSeconds(input: WaitBoundInput): number | null {
  if (!input.fitsPool || input.maxConcurrency < 1 || input.agingFromMs > input.nowMs) return null;
  const agingMs = input.agingSeconds * 1000;
  const promotedAt = input.policy === 'fifo' ? input.nowMs : topTierAtMs(input.baseRank, input.agingFromMs, agingMs);
  const topAt = Math.max(input.nowMs, input.runAtMs, promotedAt);
  const perWindow =
    input.policy !== 'fair-share' && input.runtime === 'lambda'
      ? Math.max(1, Math.min(input.lambdaConcurrency, input.maxConcurrency))
      : 1;
  const windows = Math.ceil((input.aheadCount + 1) / perWindow) + (input.runtime === 'fargate' ? 1 : 0);
  return (topAt - input.nowMs) / 1000 + windows * 2 * input.maxHoldSeconds;
}
