/**
 * Tier dead letters on the simulated AWS account (fauxqs does not apply a redrive policy on
 * receives; the simulated SQS does): a tier message received maxReceiveCount times moves to its
 * dead-letter queue, and the dead-letter consumer must drain it back while its task waits.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startDeadLetterConsumer } from '../../local/dead-letter-consumer.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { tierQueue } from '../../runtime/infra/resources.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { runSchedulerLoop } from '../../runtime/scheduler/scheduler-loop.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { NO_TRANSPORT_FAULTS } from '../../sim/aws/faults.ts';
import { installVirtualClock, type VirtualClock } from '../../sim/aws/virtual-clock.ts';
import { SimulatedAws } from '../../sim/aws/world.ts';

const START_MS = Date.parse('2026-01-05T00:00:00.000Z');
const silent = { info() {}, warn() {}, error() {} };
const tier = tierQueue('normal');

let clock: VirtualClock | undefined;
afterEach(() => {
  clock?.uninstall();
  clock = undefined;
});

function world() {
  clock = installVirtualClock({ startMs: START_MS, seed: 11 });
  const aws = new SimulatedAws({
    seed: 11,
    now: () => Date.now(),
    indexLagMs: 0,
    eventualLagMs: 0,
    unprocessedRate: 0,
    sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
  });
  const config = parseConfig(
    { pools: { lambda: { concurrency: 2 }, fargate: { vcpu: 2, memoryMiB: 4096 } } },
    'tier dead letters',
  );
  const registry = new TaskTypeRegistry([
    defineTaskType({
      type: 'sim.noop',
      description: 'Nothing.',
      payload: z.strictObject({}),
      handler: async () => ({}),
    }),
  ]);
  const services = (name: string): Services =>
    buildServices({
      config,
      clients: aws.component(name, NO_TRANSPORT_FAULTS).clients,
      resources: aws.resources,
      registry,
    });
  return { aws, config, services };
}

/**
 * Run `work` under the virtual clock (its SDK calls and timers need the clock to move), for at
 * most an hour of simulated time.
 */
async function run<T>(work: () => Promise<T>): Promise<T> {
  const untilMs = clock!.nowMs() + 3_600_000;
  let result: { value: T } | undefined;
  let failure: unknown;
  // Time moves in small steps while the work runs (with no timer due, the clock would leap ahead).
  const heartbeat = setInterval(() => {}, 100);
  const running = work().then(
    (value) => {
      result = { value };
    },
    (error: unknown) => {
      failure = error ?? new Error('failed');
    },
  );
  await clock!.runUntil(untilMs, () => result !== undefined || failure !== undefined);
  clearInterval(heartbeat);
  if (failure) throw failure;
  if (!result) throw new Error('did not finish in simulated time');
  await running;
  return result.value;
}

/** Receive the task's tier message without deleting it until SQS dead-letters it. */
async function deadLetterTierMessage(api: Services, aws: SimulatedAws): Promise<void> {
  for (let receives = 0; aws.sqs.deadLettered.length === 0; receives++) {
    if (receives > tier.deadLetter!.maxReceiveCount + 1) throw new Error('the tier message was never dead-lettered');
    await api.queues.receive(tier.id, { visibilitySeconds: 0 });
  }
}

describe('Tier dead-letter queues', () => {
  it('a QUEUED task whose tier message was dead-lettered is announced again and dispatched', async () => {
    // Prepare: a waiting task whose only announcement sits in the tier dead-letter queue.
    const { aws, config, services } = world();
    const api = services('api');
    const { task } = await run(() => api.tasks.submit({ tenantId: 'stuck', type: 'sim.noop', priority: 'normal' }));
    await run(() => deadLetterTierMessage(api, aws));
    expect(aws.sqs.pending(tier.deadLetter!.id)).toHaveLength(1);
    // The tier is not drained (another tenant's task waits on it, delayed 15 minutes), so the
    // registry backstop, which rescues a task of a busy tier only once it is due 15 minutes, does not.
    await run(() => api.tasks.submit({ tenantId: 'later', type: 'sim.noop', priority: 'normal', delaySeconds: 900 }));
    expect(aws.sqs.pending(tier.id)).toHaveLength(1);

    // Act: the scheduler (restarted every minute, as the Lambda is) and the dead-letter consumer
    // run for five simulated minutes, well inside the stale sweep's 15.
    const stop = new AbortController();
    const redrive = startDeadLetterConsumer({ ...services('redrive'), logger: silent });
    const scheduler = services('scheduler');
    const loop = (async () => {
      for (let n = 1; !stop.signal.aborted; n++) {
        const startedAt = Date.now();
        await runSchedulerLoop({
          control: scheduler.control,
          signal: stop.signal,
          ownerId: `lambda-${n}`,
          keepGoing: () => Date.now() - startedAt < 60_000,
          waitSeconds: 2,
          idleWaitSeconds: () => 2,
          logger: silent,
          createScheduler: () =>
            new Scheduler({ store: scheduler.store, control: scheduler.control, queues: scheduler.queues, config }),
        });
      }
    })();
    const stateAfter = await run(async () => {
      for (let waited = 0; waited < 300; waited += 5) {
        const current = await api.store.get(task.taskId);
        if (current?.state !== 'QUEUED') return current?.state;
        await new Promise((resolve) => setTimeout(resolve, 5_000));
      }
      return (await api.store.get(task.taskId))?.state;
    });
    stop.abort();
    await run(async () => {
      await Promise.all([redrive.stop(), loop]);
    });

    // Assess: dispatched, and the dead letter was drained (not dropped, not left behind).
    expect(stateAfter).toBe('DISPATCHED');
    expect(aws.sqs.pending(tier.deadLetter!.id)).toHaveLength(0);
  });

  it('drops a dead-lettered tier message whose task no longer waits, announcing nothing', async () => {
    // Prepare: the task is cancelled after its announcement was dead-lettered.
    const { aws, services } = world();
    const api = services('api');
    const { task } = await run(() => api.tasks.submit({ tenantId: 'gone', type: 'sim.noop', priority: 'normal' }));
    await run(() => deadLetterTierMessage(api, aws));
    await run(() => api.tasks.cancel(task.taskId));

    // Act
    const redrive = startDeadLetterConsumer({ ...services('redrive'), logger: silent });
    await run(async () => {
      while (aws.sqs.pending(tier.deadLetter!.id).length > 0) await new Promise((r) => setTimeout(r, 1_000));
    });
    await run(() => redrive.stop());

    // Assess: the dead letter is gone and the tier queue holds nothing new.
    expect((await run(() => api.store.get(task.taskId)))?.state).toBe('CANCELLED');
    expect(aws.sqs.pending(tier.id)).toHaveLength(0);
  });
});
