/**
 * A seeded sweep of short chaos runs: the production API, scheduler Lambda, workers and redrive
 * under lost responses, throttling, duplicate and early deliveries, index lag and crashes
 * (sim/chaos). Every guarantee the checker knows must hold on every seed; a failure
 * prints the violations with each task's stored history. `npm run sim -- chaos --long` runs
 * 1,000 seeds.
 */
import { describe, expect, it } from 'vitest';
import { checkHistory } from '../../sim/chaos/check.ts';
import { DEFAULT_OPTIONS, runChaos } from '../../sim/chaos/run.ts';

const SEEDS = [101, 102];

describe('chaos sweep', () => {
  for (const seed of SEEDS) {
    it(`seed ${seed}: no violation`, async () => {
      const history = await runChaos({ ...DEFAULT_OPTIONS, tasks: 20, seed });
      const { violations, stats } = checkHistory(history);
      expect(violations).toEqual([]);
      expect(stats.accepted).toBe(20);
    }, 120_000);
  }
});
