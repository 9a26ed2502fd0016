/**
 * Chaos in process: a handler that sometimes throws and sometimes hangs, worker processes killed
 * and restarted mid-run, the scheduler crashing now and then (SDK faults): every task finishes,
 * none is lost, none is recorded as completed twice. (kill -9 of the whole runtime: chaos.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { randomFaults, seededRandom } from '../helpers/faults.ts';
import { Harness } from './harness.ts';

describe('chaos: crashing workers and schedulers in process', () => {
  it('a flaky, sometimes hanging handler and killed workers: all finish, none lost, none completed twice', async () => {
    const random = seededRandom(20_261_129);
    const harness = await Harness.start({
      random,
      workers: 3,
      config: {
        pools: { lambda: { concurrency: 6 }, fargate: { vcpu: 2, memoryMiB: 4096 } },
        tenantDefaults: { weight: 1, maxConcurrency: 3 },
        retry: { baseDelaySeconds: 0, maxDelaySeconds: 0 },
        scheduler: { dispatchLeaseSeconds: 5, runLeaseSeconds: 5, bufferSize: 100 },
      },
    });
    try {
      harness.startWorkers();
      const ids: string[] = [];
      for (let i = 0; i < 60; i++) {
        // One in five hangs (longer than the run between clock jumps: its lease expires and it
        // becomes a zombie), the rest fail up to twice before succeeding.
        const hang = i % 5 === 0;
        const task = await harness.submit({
          tenantId: `tenant-${i % 3}`,
          type: 'test.record',
          payload: { failTimes: i % 3, permanent: false, ms: hang ? 1_500 : 20 + (i % 7) * 10 },
          maxAttempts: 6,
          idempotencyKey: `chaos-${i}`,
        });
        ids.push(task.taskId);
      }
      harness.decide = randomFaults(random, { crash: 0.005, throttle: 0.02, ambiguous: 0.01, duplicate: 0.2 });
      harness.stepCrashRate = 0.03;
      const final = await harness.runUntilSettled(ids, {
        chaosMs: 6_000,
        maxMs: 240_000, // a wall-clock backstop only: stuck is judged in clock jumps (harness.ts)
        onRound: async (round) => {
          // kill -9 a worker process. Every 5 rounds: on a loaded machine the 6 s of chaos hold
          // only 9–14 rounds, so "every 25" never killed one and the crash count below relied on
          // a random SDK crash landing on a worker call.
          if (round % 5 === 4) await harness.reviveWorkers(true);
          if (round % 60 === 59) harness.jumpClock(); // hung attempts lose their lease
        },
      });
      expect(final.size).toBe(ids.length);
      expect(harness.log.audit(() => 3)).toEqual([]);
      ids.forEach((taskId, i) => {
        const task = final.get(taskId)!;
        if (i % 5 === 0 && task.state === 'FAILED') {
          // A handler that outlives its lease without heartbeating loses it on every attempt.
          expect(task).toMatchObject({ attempts: task.maxAttempts, error: { name: 'LeaseExpired' } });
          return;
        }
        expect(task.state).toBe('SUCCEEDED');
        expect(harness.log.entries(task.taskId, 'SUCCEEDED')).toBe(1);
        expect(task.result).toEqual({ fence: task.fence, attempt: task.attempts });
      });
      expect(harness.stats.workerCrashes).toBeGreaterThan(0);
    } finally {
      await harness.stop();
    }
  }, 300_000);
});
