/**
 * Property: for random workloads under random fault schedules (SDK throttling, ambiguous
 * failures, crashes of the scheduler and of workers at any SDK call or step boundary,
 * duplicate deliveries, lease expiries mid-run, loss of every queue's state), every accepted
 * task ends in exactly one terminal state, a success is recorded at most once and only for the
 * attempt that produced it, no task is lost, attempts never exceed maxAttempts, retries keep
 * their tier and age, and no tenant ever has more than its quota dispatched or running.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { PRIORITY_TIERS } from '../../runtime/core/task.ts';
import { randomFaults, seededRandom } from '../helpers/faults.ts';
import { FAULT_CONFIG, Harness } from './harness.ts';

const taskArb = fc.record({
  tenant: fc.integer({ min: 0, max: 2 }),
  priority: fc.constantFrom(...PRIORITY_TIERS),
  failTimes: fc.integer({ min: 0, max: 2 }),
  permanent: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  ms: fc.integer({ min: 0, max: 60 }),
  maxAttempts: fc.integer({ min: 1, max: 4 }),
});

/** A probability in steps of 1/1000, up to `max`/1000 (doubles bias towards 0 and 5e-324). */
const perMille = (max: number) => fc.integer({ min: 0, max }).map((n) => n / 1000);

const scheduleArb = fc.record({
  seed: fc.integer(),
  crash: perMille(20),
  throttle: perMille(80),
  ambiguous: perMille(50),
  duplicate: perMille(500),
  stepCrash: perMille(80),
  /** Per round: jump the clock past every lease while attempts run (zombies). */
  jump: perMille(50),
  /** Per round: kill a worker process. */
  killWorker: perMille(50),
  purgeAtRound: fc.option(fc.integer({ min: 2, max: 40 }), { nil: undefined }),
});

/** What the runs injected, printed once: proof that the faults happened. */
const totals: Record<string, number> = {};
const add = (counts: Record<string, number>) => {
  for (const [key, value] of Object.entries(counts)) totals[key] = (totals[key] ?? 0) + value;
};

describe('fault-injection properties', () => {
  afterAll(() => console.log('injected across runs:', JSON.stringify(totals)));

  it('random workloads under random faults: terminal once, success once, none lost, quotas held', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(taskArb, { minLength: 8, maxLength: 24 }), scheduleArb, async (workload, faults) => {
        const random = seededRandom(faults.seed);
        const harness = await Harness.start({ random, workers: 2 });
        try {
          harness.decide = randomFaults(random, faults);
          harness.stepCrashRate = faults.stepCrash;
          harness.startWorkers();
          const ids: string[] = [];
          for (const [i, spec] of workload.entries()) {
            const task = await harness.submit({
              tenantId: `tenant-${spec.tenant}`,
              type: 'test.record',
              payload: { failTimes: spec.failTimes, permanent: spec.permanent, ms: spec.ms },
              priority: spec.priority,
              maxAttempts: spec.maxAttempts,
              idempotencyKey: `job-${i}`,
            });
            ids.push(task.taskId);
          }
          expect(new Set(ids).size).toBe(workload.length);

          const final = await harness.runUntilSettled(ids, {
            chaosMs: 3_000,
            maxMs: 40_000,
            onRound: async (round) => {
              if (random() < faults.jump) harness.jumpClock();
              if (random() < faults.killWorker) await harness.reviveWorkers(true);
              if (round === faults.purgeAtRound) await harness.purgeQueues();
            },
          });

          // None lost; each ends in exactly one terminal state (the audit refuses writes after one).
          expect(final.size).toBe(ids.length);
          const quota = FAULT_CONFIG.tenantDefaults!.maxConcurrency;
          expect(harness.log.audit(() => quota)).toEqual([]);
          for (const [i, spec] of workload.entries()) {
            const task = final.get(ids[i]!)!;
            expect(['SUCCEEDED', 'FAILED']).toContain(task.state);
            expect(task.attempts).toBeLessThanOrEqual(task.maxAttempts);
            const completions = harness.recorder.completions.get(task.taskId) ?? [];
            if (task.state === 'SUCCEEDED') {
              expect(spec.permanent).toBe(false);
              expect(harness.log.entries(task.taskId, 'SUCCEEDED')).toBe(1);
              // The recorded success is the current attempt's own result, never a zombie's.
              expect(task.result).toEqual({ fence: task.fence, attempt: task.attempts });
              expect(completions.filter((c) => c.fence === task.fence)).toHaveLength(1);
            } else {
              expect(task.error).toBeDefined();
              expect(task.error!.retryable === false || task.attempts === task.maxAttempts).toBe(true);
            }
          }
          add({ ...harness.stats, tasks: ids.length, handlerCompletions: harness.recorder.completions.size });
          add(harness.faultCounts());
        } finally {
          await harness.stop();
        }
      }),
      {
        numRuns: 5,
        endOnFailure: true,
        ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: '0' } : {}),
      },
    );
  }, 120_000);
});
