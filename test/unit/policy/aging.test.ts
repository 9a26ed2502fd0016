import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  effectiveRank,
  nextPromotionMs,
  topTierAtMs,
  waitBound,
  waitBoundSeconds,
} from '../../../runtime/core/policy/aging.ts';

const A = 300_000;

describe('Function: effectiveRank', () => {
  it('raises a low task one tier per agingSeconds waited, up to critical', () => {
    // Prepare
    const low = 3;
    // Act
    const ranks = [0, A - 1, A, 2 * A, 3 * A - 1, 3 * A, 10 * A].map((wait) =>
      effectiveRank(low, 1000, 1000 + wait, A),
    );
    // Assess
    expect(ranks).toEqual([3, 3, 2, 1, 1, 0, 0]);
  });

  it('is monotone in time and changes exactly at nextPromotionMs', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 }), fc.nat(10 * A), fc.nat(10 * A), (rank, from, wait) => {
        // Act
        const now = from + wait;
        const current = effectiveRank(rank, from, now, A);
        const promotion = nextPromotionMs(rank, from, now, A);
        // Assess
        expect(current).toBeLessThanOrEqual(rank);
        expect(effectiveRank(rank, from, now + 1, A)).toBeLessThanOrEqual(current);
        if (current === 0) expect(promotion).toBe(Number.POSITIVE_INFINITY);
        else {
          expect(promotion).toBeGreaterThan(now);
          expect(effectiveRank(rank, from, promotion - 1, A)).toBe(current);
          expect(effectiveRank(rank, from, promotion, A)).toBe(current - 1);
        }
        expect(effectiveRank(rank, from, topTierAtMs(rank, from, A), A)).toBe(0);
      }),
    );
  });
});

describe('Function: waitBound', () => {
  const base = {
    policy: 'priority' as const,
    runtime: 'lambda' as const,
    baseRank: 3,
    agingFromMs: 0,
    runAtMs: 0,
    nowMs: 0,
    agingSeconds: 300,
    aheadCount: 9,
    lambdaConcurrency: 5,
    maxConcurrency: 100,
    poolHoldSeconds: 60,
    tenantHoldSeconds: 100,
    reservations: true,
    fitsPool: true,
  };

  it('is the time to reach the top tier plus one window (τ_tenant + τ_pool) per round of p tasks', () => {
    // Act
    const bound = waitBoundSeconds(base);
    // Assess: 3·300 s to reach critical, then ⌈(9+1)/5⌉ = 2 windows of 100 + 60 s
    expect(bound).toBe(900 + 2 * 160);
  });

  it('starts one of the k + 1 tasks per window on Fargate (a reservation drains the pool at once)', () => {
    // Act
    const fargate = waitBoundSeconds({ ...base, runtime: 'fargate' });
    // Assess
    expect(fargate).toBe(900 + 10 * 160);
  });

  it('says why when no bound holds', () => {
    // Act & Assess
    expect(waitBound({ ...base, fitsPool: false })).toEqual({ seconds: null, why: 'never_fits' });
    expect(waitBound({ ...base, maxConcurrency: 0 })).toEqual({ seconds: null, why: 'quota_zero' });
    expect(waitBound({ ...base, agingFromMs: 5000, runAtMs: 5000 })).toEqual({ seconds: null, why: 'not_aging_yet' });
    expect(waitBound({ ...base, aheadCount: null })).toEqual({ seconds: null, why: 'ahead_unknown' });
    expect(waitBound({ ...base, runtime: 'fargate', reservations: false })).toEqual({
      seconds: null,
      why: 'no_reservation',
    });
  });
});
