/**
 * The scheduler's handovers within a wait (explain.ts `plannedHandoversWithin`): a Lambda scheduler
 * publishes when its invocation ends and how long one runs; the bound counts only the handovers
 * the wait reaches, each lengthening it, and never counts one later than it can happen.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lagSeconds, plannedHandoversWithin } from '../../../runtime/core/policy/explain.ts';

const EVERY = 285_000;

describe('Function: plannedHandoversWithin', () => {
  it('counts none when the wait ends before the next handover, one when it reaches it', () => {
    expect(plannedHandoversWithin({ nextAtMs: 30_000, everyMs: EVERY }, 0, 29, 5)).toBe(0);
    expect(plannedHandoversWithin({ nextAtMs: 30_000, everyMs: EVERY }, 0, 30, 5)).toBe(1);
  });

  it('lets each handover lengthen the wait into the next one', () => {
    // 30 s, then 315 s: a wait of 310 s reaches 315 s only with the first handover's 5 s.
    expect(plannedHandoversWithin({ nextAtMs: 30_000, everyMs: EVERY }, 0, 310, 5)).toBe(2);
    expect(plannedHandoversWithin({ nextAtMs: 30_000, everyMs: EVERY }, 0, 309, 0)).toBe(1);
  });

  it('counts a handover planned before now at once (it may be under way), its successor a run after the plan', () => {
    expect(plannedHandoversWithin({ nextAtMs: -10_000, everyMs: EVERY }, 0, 1, 5)).toBe(1);
    // The successor ends no sooner than 275 s (-10 + 285): a wait to 275 s counts it too.
    expect(plannedHandoversWithin({ nextAtMs: -10_000, everyMs: EVERY }, 0, 270, 5)).toBe(2);
  });

  it('never counts fewer than the handovers of any schedule the plan allows (each run at least everyMs)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -600_000, max: 600_000 }),
        fc.integer({ min: 30_000, max: 900_000 }),
        fc.integer({ min: 0, max: 3_000 }),
        fc.array(fc.integer({ min: 0, max: 60_000 }), { minLength: 20, maxLength: 20 }),
        fc.integer({ min: 0, max: 10 }),
        (nextAtMs, everyMs, waitSeconds, laterBy, perHandover) => {
          // A real schedule: the first handover at the plan or later (but not before now when it
          // is under way), each successor a run or more after its predecessor.
          const counted = plannedHandoversWithin({ nextAtMs, everyMs }, 0, waitSeconds, perHandover);
          let endMs = waitSeconds * 1000;
          let real = 0;
          let atMs = Math.max(0, nextAtMs + (laterBy[0] as number));
          for (let i = 1; atMs <= endMs && i < laterBy.length; i++) {
            real++;
            endMs += perHandover * 1000;
            atMs += everyMs + (laterBy[i] as number);
          }
          return counted >= real;
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('Function: lagSeconds', () => {
  const lag = { perRoundSeconds: 2, perHandoverSeconds: 5, handsOverEveryMinute: true };
  it('charges a handover per started minute without a plan, only the planned ones it reaches with one', () => {
    expect(lagSeconds(lag, 20, 1, 0)).toBe(2 + 5);
    expect(lagSeconds({ ...lag, plannedHandovers: { nextAtMs: 60_000, everyMs: EVERY } }, 20, 1, 0)).toBe(2);
    expect(lagSeconds({ ...lag, plannedHandovers: { nextAtMs: 10_000, everyMs: EVERY } }, 20, 1, 0)).toBe(2 + 5);
    expect(lagSeconds({ ...lag, handsOverEveryMinute: false }, 20, 1, 0)).toBe(2);
  });
});
