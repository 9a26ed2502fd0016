/**
 * The fair share (fair-share): a tenant's weight over the summed weight of the tenants with work.
 * Tenants below theirs are served in rotation, the others by DRF (policy.ts); the API's bound on
 * the pool's pace rests on a tenant staying below its own (explain.ts, bound.ts `paceBound`).
 */
/** Shares within this of the fair share count as at it (floating-point sums of weights). */
export const FAIR_SHARE_EPSILON = 1e-9;

/**
 * Below its fair share: a weighted dominant share under 1 / the summed weight of the tenants with
 * work (its dominant share under its weight / that sum). The engine orders by it (policy.ts) and
 * the API's bound rests on it (explain.ts): one test for both.
 */
export function belowFairShare(weightedShare: number, busyWeight: number): boolean {
  return weightedShare * busyWeight < 1 - FAIR_SHARE_EPSILON;
}
