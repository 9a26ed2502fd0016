/**
 * The chaos driver runs the deployed scheduler handler (runtime/handlers/scheduler.ts) on a
 * simulated Lambda function, not a re-creation of its loop: sparse work under the default faults
 * makes it stop when idle and be woken again by later submits, and every guarantee still holds.
 */
import { describe, expect, it } from 'vitest';
import { checkHistory } from '../../sim/chaos/check.ts';
import { DEFAULT_OPTIONS, runChaos } from '../../sim/chaos/run.ts';

describe('chaos: the scheduler scaled to zero', () => {
  it('stops when idle and is woken by the next submit, with no violation', async () => {
    // 12 tasks at random over 10 minutes, no delays: gaps longer than the 20 s idle stop.
    const history = await runChaos({
      ...DEFAULT_OPTIONS,
      seed: 3,
      tasks: 12,
      submitSeconds: 600,
      delayRate: 0,
      workMs: [200, 2000],
    });
    const { violations, stats } = checkHistory(history);
    expect(violations).toEqual([]);
    expect(stats.accepted).toBe(12);
    expect(history.scheduler.ended.idle ?? 0).toBeGreaterThanOrEqual(1);
    expect(history.scheduler.invoked.wake ?? 0).toBeGreaterThanOrEqual(2);
  }, 240_000);
});
