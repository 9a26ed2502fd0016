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
export {
  coarsenSteps,
  type HeadroomBound,
  headroomBound,
  type PaceBound,
  type PaceBoundInput,
  paceBound,
  type RotationBoundInput,
  rotationBoundSeconds,
} from './bound.ts';
export {
  addInto,
  capacityOf,
  demandOf,
  dominantShare,
  jainIndex,
  weightedDominantShare,
  zeroVector,
} from './drf.ts';
export {
  explainWait,
  type HoldSeconds,
  holdSecondsOf,
  noBoundOf,
  type PoolLeader,
  type RotationView,
  taskHoldSeconds,
  WAIT_REASONS,
  type WaitExplanation,
  type WaitReason,
  type WaitView,
} from './explain.ts';
export { FreedSlots, type FreedSlotsState, PACE_BUCKET_MS, PACE_WINDOW_MS } from './pace.ts';
export { ROTATION_MEMORY_MS, SchedulingPolicy } from './policy.ts';
export type * from './types.ts';
