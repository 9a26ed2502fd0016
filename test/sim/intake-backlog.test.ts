/**
 * Issue 11 (flood): announcements left in a tier queue are taken at once, not one tick per
 * completion. A busy tick long-polls the completions queue; while a tier still returns full
 * batches that poll must not wait, or the intake is paced by the workers' completions (about
 * 10 ticks a second with the flood at its quota: the 10,000-task flood's announcements took 10
 * simulated seconds to consume, and quiet tenants' behind them waited as long).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildServices } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { tierQueue } from '../../runtime/infra/resources.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { NO_TRANSPORT_FAULTS } from '../../sim/aws/faults.ts';
import { installVirtualClock, type VirtualClock } from '../../sim/aws/virtual-clock.ts';
import { SimulatedAws } from '../../sim/aws/world.ts';

const START_MS = Date.parse('2026-01-05T00:00:00.000Z');
const tier = tierQueue('normal');

let clock: VirtualClock | undefined;
afterEach(() => {
  clock?.uninstall();
  clock = undefined;
});

/** Run `work` under the virtual clock (its long polls need the clock to move). */
async function run<T>(work: () => Promise<T>): Promise<T> {
  let result: { value: T } | undefined;
  let failure: unknown;
  const heartbeat = setInterval(() => {}, 100);
  work().then(
    (value) => {
      result = { value };
    },
    (error: unknown) => {
      failure = error ?? new Error('failed');
    },
  );
  await clock!.runUntil(clock!.nowMs() + 600_000, () => result !== undefined || failure !== undefined);
  clearInterval(heartbeat);
  if (failure) throw failure;
  if (!result) throw new Error('did not finish in simulated time');
  return result.value;
}

describe('Intake with announcements queued ahead', () => {
  it('a busy tick does not wait on completions while a tier still returns full batches', async () => {
    // Prepare: 250 announcements of one tenant queued, no workers (nothing ever completes).
    clock = installVirtualClock({ startMs: START_MS, seed: 5 });
    const aws = new SimulatedAws({
      seed: 5,
      now: () => Date.now(),
      indexLagMs: 0,
      eventualLagMs: 0,
      unprocessedRate: 0,
      sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
    });
    const config = parseConfig(
      { pools: { lambda: { concurrency: 2 }, fargate: { vcpu: 2, memoryMiB: 4096 } } },
      'intake backlog',
    );
    const registry = new TaskTypeRegistry([
      defineTaskType({
        type: 'sim.noop',
        description: 'Nothing.',
        payload: z.strictObject({}),
        handler: async () => ({}),
      }),
    ]);
    const services = buildServices({
      config,
      clients: aws.component('scheduler', NO_TRANSPORT_FAULTS).clients,
      resources: aws.resources,
      registry,
    });
    await run(async () => {
      for (let i = 0; i < 250; i++)
        await services.tasks.submit({ tenantId: 'flood', type: 'sim.noop', priority: 'normal' });
    });
    const scheduler = new Scheduler({
      store: services.store,
      control: services.control,
      queues: services.queues,
      config,
    });

    // Act: busy ticks, as the scheduler loop runs them (2 s long polls), until every announcement
    // is consumed; the simulated time each took.
    const tickMs: number[] = [];
    while (aws.sqs.pending(tier.id).length > 0 && tickMs.length < 5) {
      const startMs = Date.now();
      await run(() => scheduler.tick({ waitSeconds: 2 }));
      tickMs.push(Date.now() - startMs);
    }

    // Assess: every announcement consumed, and no tick waited out a completions long poll for it
    // (the completions poll runs beside the tier polls and wakes nothing here: nothing completes).
    expect(aws.sqs.pending(tier.id)).toHaveLength(0);
    expect(tickMs.length).toBeGreaterThan(0);
    for (const ms of tickMs) expect(ms).toBeLessThan(1_000);
  });
});
