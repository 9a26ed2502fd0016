/**
 * Issue 11, migration step 7 (docs/intake.md §4(a), "Suppressing the flood's announcements"):
 * while a backlogged tenant-tier's registry item carries a promise, its submits skip the tier
 * message and the scheduler finds the tasks in `byTenantQueue`. Run on the simulated AWS with a
 * lagging index and stale eventually consistent reads, the production submit path, the
 * production scheduler restarted every minute as the Lambda is, and production workers.
 * Before the promise, every one of the flood's submits sent its announcement.
 */
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NO_PROMISE_CACHE_MS } from '../../runtime/app/intake-promises.ts';
import { buildServices } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import type { TaskLogger } from '../../runtime/core/logger.ts';
import { tierQueue, workerQueue } from '../../runtime/infra/resources.ts';
import { INDEX_LAG_MS, PROMISE_MS } from '../../runtime/scheduler/intake.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { lambdaInvocationTiming, runSchedulerLoop } from '../../runtime/scheduler/scheduler-loop.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { QueueWorker } from '../../runtime/worker/queue-worker.ts';
import { NO_TRANSPORT_FAULTS } from '../../sim/aws/faults.ts';
import { installVirtualClock, type VirtualClock } from '../../sim/aws/virtual-clock.ts';
import { SimulatedAws } from '../../sim/aws/world.ts';

const START_MS = Date.parse('2026-01-05T00:00:00.000Z');
const silent: TaskLogger = { info() {}, warn() {}, error() {} };

let clock: VirtualClock | undefined;
afterEach(() => {
  clock?.uninstall();
  clock = undefined;
});

describe('Intake promise (submit-side suppression)', () => {
  it('a flood submitted while the scheduler runs sends few announcements, and every task is dispatched', async () => {
    // Prepare: an index lagging 1 s on average (exponential tail), reads up to 2 s stale.
    clock = installVirtualClock({ startMs: START_MS, seed: 7 });
    const aws = new SimulatedAws({
      seed: 7,
      now: () => Date.now(),
      indexLagMs: 1_000,
      eventualLagMs: 2_000,
      unprocessedRate: 0,
      sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
    });
    const config = parseConfig(
      { pools: { lambda: { concurrency: 10 }, fargate: { vcpu: 2, memoryMiB: 4096 } } },
      'intake promise',
    );
    const registry = new TaskTypeRegistry([
      defineTaskType({
        type: 'sim.hold',
        description: 'Holds its slot for 1 s.',
        payload: z.strictObject({}),
        handler: () => new Promise((resolve) => setTimeout(() => resolve({}), 1_000)),
      }),
    ]);
    const servicesFor = (name: string) =>
      buildServices({
        config,
        clients: aws.component(name, NO_TRANSPORT_FAULTS).clients,
        resources: aws.resources,
        registry,
      });
    const stop = new AbortController();
    let invocation: Promise<void> | undefined;
    let invocations = 0;
    const invoke = () => {
      if (stop.signal.aborted || invocation) return;
      const services = servicesFor(`scheduler-${++invocations}`);
      const startedAtMs = Date.now();
      invocation = runSchedulerLoop({
        control: services.control,
        signal: stop.signal,
        ...lambdaInvocationTiming(() => startedAtMs + 75_000 - Date.now()),
        logger: silent,
        createScheduler: () =>
          new Scheduler({ store: services.store, control: services.control, queues: services.queues, config }),
      }).then(
        (end) => {
          invocation = undefined;
          if (end === 'stopped') invoke();
        },
        () => {
          invocation = undefined;
        },
      );
    };
    invoke();
    const invoker = setInterval(invoke, 60_000);
    for (let i = 0; i < 10; i++) {
      const services = servicesFor(`worker-${i}`);
      new QueueWorker({
        queues: services.queues,
        queueId: workerQueue('lambda').id,
        maxConcurrent: 1,
        attempt: { store: services.store, queues: services.queues, registry, config, logger: silent },
        waitSeconds: 5,
        batchSize: 1,
        logger: silent,
      }).start();
    }
    // Two API containers, each with its own cache of promises.
    const api = [servicesFor('api-0'), servicesFor('api-1')];
    const submitted = { flood: 0, quiet: 0 };
    const submit = (tenantId: 'flood' | 'quiet') => {
      submitted[tenantId]++;
      return api[submitted[tenantId] % 2]!.tasks.submit({ tenantId, type: 'sim.hold', priority: 'normal' });
    };

    // Act: the flood submits 20 tasks a second for 30 s (its quota of 10 drains 10 a second);
    // a quiet tenant submits one task every 5 s meanwhile.
    const submits: Promise<unknown>[] = [];
    const flooding = setInterval(() => {
      for (let i = 0; i < 2; i++) submits.push(submit('flood'));
    }, 100);
    const quiet = setInterval(() => submits.push(submit('quiet')), 5_000);
    await clock.runUntil(START_MS + 30_000);
    clearInterval(flooding);
    clearInterval(quiet);
    // Until the backlog is gone and the promises have run out (H + G), and the scheduler has
    // deregistered the tenant-tiers.
    const tasksTable = aws.resources.tables.tasks!;
    const states = () =>
      // biome-ignore lint/suspicious/noExplicitAny: wire-format attribute values.
      aws.dynamodb.items(tasksTable).map((raw) => unmarshall(raw as any) as { tenantId: string; state: string });
    const settled = () =>
      states().every((task) => task.state === 'SUCCEEDED') &&
      aws.dynamodb.items(aws.resources.tables.control!).every((item) => item.kind?.S !== 'intake');
    await clock.runUntil(START_MS + 30_000 + 20 * 60_000, settled);
    clearInterval(invoker);
    stop.abort();
    await Promise.all(submits);

    // Assess: every task ran; the flood's announcements stopped once its promise was made.
    const tasks = states();
    expect(tasks).toHaveLength(submitted.flood + submitted.quiet);
    expect(tasks.filter((task) => task.state !== 'SUCCEEDED')).toEqual([]);
    const tier = tierQueue('normal').id;
    const sent = aws.sqs.sends.filter((send) => send.queueId === tier).map((send) => JSON.parse(send.body));
    const floodSends = aws.sqs.sends.filter(
      (send) => send.queueId === tier && (JSON.parse(send.body) as { tenantId: string }).tenantId === 'flood',
    );
    const floodSent = floodSends.length;
    const quietSent = sent.filter((body) => body.tenantId === 'quiet').length;
    expect(submitted.flood).toBe(600);
    // Announced until the backlog was promised (a few seconds) and each API container's read that
    // found no promise had expired (NO_PROMISE_CACHE_MS); none after.
    expect(floodSent).toBeLessThan(submitted.flood / 4);
    expect(Math.max(...floodSends.map((send) => send.atMs)) - START_MS).toBeLessThanOrEqual(
      5_000 + NO_PROMISE_CACHE_MS,
    );
    // The quiet tenant never had a backlog, so never a promise: every submit announced.
    expect(quietSent).toBe(submitted.quiet);
    // Nothing left registered: the scheduler deregistered after the promise + G.
    expect(settled()).toBe(true);
    expect(PROMISE_MS + INDEX_LAG_MS).toBeLessThan(20 * 60_000);
    // Simulated time: the outcome does not depend on the machine, only how long it takes (27 s of
    // wall time alone here, past a minute while the whole suite loads the machine).
  }, 240_000);
});
