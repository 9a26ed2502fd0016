/** The scheduling-policy engine: pure, synchronous, time passed in as epoch milliseconds. */
export { effectiveRank, nextPromotionMs, topTierAtMs, type WaitBoundInput, waitBoundSeconds } from './aging.ts';
export { capacityOf, demandOf, dominantShare, jainIndex, weightedDominantShare } from './drf.ts';
export { SchedulingPolicy } from './policy.ts';
export type * from './types.ts';
