/**
 * The submit side of the intake promise (runtime/app/intake-promises.ts): when a submit may skip
 * its announcement, from a cached or freshly read promise. Any doubt answers "announce".
 */
import { describe, expect, it } from 'vitest';
import { IntakePromises, NO_PROMISE_CACHE_MS, PROMISE_MARGIN_MS } from '../../runtime/app/intake-promises.ts';

function reader(values: (number | Error)[]) {
  const reads: string[] = [];
  return {
    reads,
    intakePromise: async (tenantId: string, tier: string) => {
      reads.push(`${tier}#${tenantId}`);
      const value = values.shift() ?? 0;
      if (value instanceof Error) throw value;
      return value;
    },
  };
}

describe('IntakePromises', () => {
  it('skips only before the promise minus the margin, reading once while the promise lasts', async () => {
    const control = reader([60_000]);
    const promises = new IntakePromises(control);
    expect(await promises.covers('a', 'normal', 1_000)).toBe(true);
    expect(await promises.covers('a', 'normal', 60_000 - PROMISE_MARGIN_MS - 1)).toBe(true);
    expect(control.reads).toEqual(['normal#a']);
    // From the margin on: read again (here: no longer promised).
    expect(await promises.covers('a', 'normal', 60_000 - PROMISE_MARGIN_MS)).toBe(false);
    expect(control.reads).toHaveLength(2);
  });

  it('trusts "no promise" for NO_PROMISE_CACHE_MS, then reads again', async () => {
    const control = reader([0, 90_000]);
    const promises = new IntakePromises(control);
    expect(await promises.covers('a', 'high', 0)).toBe(false);
    expect(await promises.covers('a', 'high', NO_PROMISE_CACHE_MS - 1)).toBe(false);
    expect(control.reads).toHaveLength(1);
    expect(await promises.covers('a', 'high', NO_PROMISE_CACHE_MS)).toBe(true);
    // Another tier of the same tenant is its own promise.
    expect(await promises.covers('a', 'low', NO_PROMISE_CACHE_MS)).toBe(false);
  });

  it('keeps the later of two promises read (a stale read shows an older one)', async () => {
    const control = reader([60_000, 30_000]);
    const promises = new IntakePromises(control);
    expect(await promises.covers('a', 'normal', 0)).toBe(true);
    // Past the first promise's margin the stale read shows an even older promise: announce.
    expect(await promises.covers('a', 'normal', 58_000)).toBe(false);
  });

  it('announces when the read fails, and shares one read among concurrent submits', async () => {
    const failing = new IntakePromises(reader([new Error('throttled')]));
    expect(await failing.covers('a', 'normal', 0)).toBe(false);
    const control = reader([60_000]);
    const promises = new IntakePromises(control);
    expect(await Promise.all([1, 2, 3].map(() => promises.covers('a', 'normal', 0)))).toEqual([true, true, true]);
    expect(control.reads).toHaveLength(1);
  });
});
