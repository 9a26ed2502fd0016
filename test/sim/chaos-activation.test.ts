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

describe('chaos: the long-lived scheduler (scheduler.mode "service")', () => {
  it('the service task holds the lease; while a dead one is replaced the Lambda stands in, with no violation', async () => {
    // 60 tasks over 10 minutes; the service task dies about every 100 s and is replaced 10-60 s
    // later (every standing-in Lambda invocation crashes at some moment too).
    const history = await runChaos({
      ...DEFAULT_OPTIONS,
      seed: 3,
      tasks: 60,
      submitSeconds: 600,
      delayRate: 0,
      workMs: [200, 2000],
      faults: { ...DEFAULT_OPTIONS.faults, schedulerCrashRate: 3 },
      config: { ...DEFAULT_OPTIONS.config, scheduler: { ...DEFAULT_OPTIONS.config?.scheduler, mode: 'service' } },
    });
    const { violations, stats } = checkHistory(history);
    expect(violations).toEqual([]);
    expect(stats.accepted).toBe(60);
    const deathOf = (component: string) => history.deaths.find((death) => death.component === component)?.atMs;
    const leaseOf = (owner: string) => history.leases.find((lease) => lease.owner === owner)?.atMs;
    // The first service task held the lease and died; its replacement held it after.
    const firstDied = deathOf('service-0-1');
    expect(leaseOf('service-0-1')).toBeDefined();
    expect(firstDied).toBeDefined();
    expect(leaseOf('service-0-2')).toBeGreaterThan(firstDied!);
    // A wake found a service's lease lapsed: a Lambda invocation took the lease and stood in.
    const secondDied = deathOf('service-0-2')!;
    expect(history.leases.some((lease) => lease.owner.startsWith('lambda-') && lease.atMs > secondDied)).toBe(true);
    // A standing-in Lambda never hands over to another invocation: only the service takes over.
    expect(history.scheduler.invoked.handover ?? 0).toBe(0);
  }, 240_000);
});
