/** The scheduling-policy engine: pure, synchronous, time passed in as epoch milliseconds. */
export {
  effectiveRank,
  NO_BOUND_REASONS,
  type NoBoundReason,
  nextPromotionMs,
  topTierAtMs,
  type WaitBound,
  type WaitBoundInput,
  waitBound,
  waitBoundSeconds,
} from './aging.ts';
export { capacityOf, demandOf, dominantShare, jainIndex, weightedDominantShare } from './drf.ts';
export {
  explainWait,
  type HoldSeconds,
  holdSecondsOf,
  type PoolLeader,
  WAIT_REASONS,
  type WaitExplanation,
  type WaitReason,
  type WaitView,
} from './explain.ts';
export { DEFAULT_RESERVATION_AFTER_SKIPS, SchedulingPolicy } from './policy.ts';
export type * from './types.ts';
