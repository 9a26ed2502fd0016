/**
 * A seeded sweep of short chaos runs: the production API, scheduler Lambda, workers and redrive
 * under lost responses, throttling, duplicate and early deliveries, index lag and crashes
 * (sim/chaos). Every guarantee the checker knows must hold on every seed; a failure
 * prints the violations with each task's stored history. `npm run sim -- chaos --long` runs
 * 1,000 of them (`--jobs N` runs them in N processes).
 */
import { describe, expect, it } from 'vitest';
import { checkHistory } from '../../sim/chaos/check.ts';
import { historyDigest } from '../../sim/chaos/history.ts';
import { CHAOS_SCENARIOS, DEFAULT_OPTIONS, runChaos } from '../../sim/chaos/run.ts';

/** The long sweep's short runs (`--scenario short`), a few seeds of them. */
const SEEDS = [101, 102, 103, 104];

describe('chaos sweep', () => {
  const digests = new Map<number, string>();
  for (const seed of SEEDS) {
    it(`seed ${seed}: no violation`, async () => {
      const history = await runChaos({ ...DEFAULT_OPTIONS, ...CHAOS_SCENARIOS.short, seed });
      digests.set(seed, historyDigest(history));
      const { violations, stats } = checkHistory(history);
      expect(violations).toEqual([]);
      // 20 tasks, and the short scenario's batch of 3 to 6 (each acknowledged with every member)
      expect(stats.accepted - stats.batches.members).toBe(20);
      expect(stats.batches).toMatchObject({ acknowledged: 1, checked: 1 });
    }, 120_000);
  }

  it('one seed gives one history, whatever ran before it in the process', async () => {
    const history = await runChaos({ ...DEFAULT_OPTIONS, ...CHAOS_SCENARIOS.short, seed: SEEDS[0]! });
    expect(digests.get(SEEDS[0]!)).toBeDefined();
    expect(historyDigest(history)).toBe(digests.get(SEEDS[0]!));
    expect(new Set(digests.values()).size).toBe(SEEDS.length);
  }, 120_000);
});
