/**
 * Issue 10, items 7 and 8: SQS's limits (1 MiB per batch, its character set, per-entry failures
 * of batch calls, a tier message's receive count against its dead-letter queue's
 * maxReceiveCount; since issue 11 waiting work is no longer kept in SQS visibility at all).
 * Real Scheduler and workers on dynalite + fauxqs.
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { createAwsClients, localEndpoints } from '../../runtime/adapters/aws-clients.ts';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { buildServices } from '../../runtime/app/wiring.ts';
import { type ConfigInput, parseConfig } from '../../runtime/core/config.ts';
import { tierQueue, workerQueue } from '../../runtime/infra/resources.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { runAttempt } from '../../runtime/worker/run-attempt.ts';
import { FakeClock } from '../helpers/faults.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices | undefined;
afterEach(async () => {
  await services?.stop();
  services = undefined;
});

const WORKER_QUEUE = workerQueue('lambda').id;
const TIER = tierQueue('normal');

async function started(config: ConfigInput, now?: () => Date): Promise<TestServices> {
  services = await startTestServices({ config, ...(now ? { now } : {}) });
  return services;
}

async function drain<T>(base: TestServices, queueId: string): Promise<T[]> {
  const bodies: T[] = [];
  for (;;) {
    const batch = await base.queues.receive<T>(queueId, { visibilitySeconds: 600 });
    if (batch.length === 0) return bodies;
    bodies.push(...batch.map((m) => m.body));
  }
}

/** Messages on a queue, visible, delayed or in flight. */
async function messagesOn(base: TestServices, queueId: string): Promise<number> {
  const { Attributes } = await base.clients.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: base.emulators.queueUrls[queueId],
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesDelayed',
        'ApproximateNumberOfMessagesNotVisible',
      ],
    }),
  );
  return (
    Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0) +
    Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

async function tickAll(scheduler: Scheduler, ticks: number): Promise<unknown[]> {
  const errors: unknown[] = [];
  for (let i = 0; i < ticks; i++) await scheduler.tick().catch((error: unknown) => errors.push(error));
  return errors;
}

const roomy: ConfigInput = {
  pools: { lambda: { concurrency: 20 }, fargate: { vcpu: 4, memoryMiB: 8192 } },
  tenantDefaults: { weight: 1, maxConcurrency: 20 },
};

describe('SQS limits (issue 10, item 7)', () => {
  it('eight tasks of 150 KiB dispatched together all get their worker message (1 MiB per batch)', async () => {
    const base = await started(roomy);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const { task } = await base.tasks.submit({
        tenantId: 'big',
        type: 'demo.echo',
        payload: { blob: String(i).repeat(150 * 1024) },
      });
      ids.push(task.taskId);
    }
    const scheduler = new Scheduler(base);
    await scheduler.resume();
    const errors = await tickAll(scheduler, 4);
    expect(errors).toEqual([]);
    const sent = await drain<WorkerMessage>(base, WORKER_QUEUE);
    expect(sent.map((m) => m.taskId).sort()).toEqual([...ids].sort());
  });

  it('a payload with characters SQS refuses (U+FFFF, an emoji) reaches its handler intact', async () => {
    const base = await started(roomy);
    const payload = { text: 'noncharacter \uFFFF \uFFFE, emoji 😀, accents é, nul \u0000' };
    const { task } = await base.tasks.submit({ tenantId: 'chars', type: 'demo.echo', payload });
    const scheduler = new Scheduler(base);
    await scheduler.resume();
    const errors = await tickAll(scheduler, 3);
    expect(errors).toEqual([]);
    const [message] = await drain<WorkerMessage>(base, WORKER_QUEUE);
    expect(message?.taskId).toBe(task.taskId);
    const outcome = await runAttempt(base, message!);
    expect(outcome.kind).toBe('finished');
    const done = (await base.store.get(task.taskId))!;
    expect(done.state).toBe('SUCCEEDED');
    expect(done.result).toEqual({ echo: payload });
  });

  it("a batch call's per-entry failures are retried when SQS's own, else reported, not ignored", async () => {
    const base = await started(roomy);
    // A client on which SQS fails the first entry of the next DeleteMessageBatch calls.
    const clients = createAwsClients(localEndpoints(base.emulators.dynamodbUrl, base.emulators.sqsUrl));
    const failNext: { senderFault: boolean }[] = [];
    const middleware = (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
      (async (args: { input: { Entries: { Id: string }[] } }) => {
        const fault = context.commandName === 'DeleteMessageBatchCommand' ? failNext.shift() : undefined;
        if (!fault) return next(args);
        const [failed, ...rest] = args.input.Entries;
        const result = (
          rest.length > 0
            ? await next({ ...args, input: { ...args.input, Entries: rest } })
            : { output: { Successful: [], $metadata: {} }, response: {} }
        ) as { output: { Failed?: object[] } };
        result.output.Failed = [
          ...(result.output.Failed ?? []),
          {
            Id: failed!.Id,
            Code: fault.senderFault ? 'ReceiptHandleIsInvalid' : 'InternalError',
            SenderFault: fault.senderFault,
            Message: 'injected',
          },
        ];
        return result;
      }) as never;
    (clients.sqs.middlewareStack as { add: (m: unknown, o: unknown) => void }).add(middleware, {
      step: 'initialize',
      name: 'entryFailures',
    });
    const queues = buildServices({
      config: parseConfig(roomy, 'batch failures test'),
      clients,
      resources: { tables: base.emulators.tables, queueUrls: base.emulators.queueUrls },
    }).queues;
    await queues.reportCompletions([{ taskId: 't1', fence: 1, tenantId: 'a', state: 'SUCCEEDED' }]);
    const [received] = await queues.receive<unknown>('completions', { visibilitySeconds: 600 });

    failNext.push({ senderFault: false });
    const refusedOnce = await queues.delete('completions', [received!.receiptHandle]);
    // SQS's own failure was retried: the message is gone.
    expect(refusedOnce).toEqual([]);
    expect(await messagesOn(base, 'completions')).toBe(0);

    failNext.push({ senderFault: true });
    const refused = await queues.delete('completions', ['a-handle-sqs-refuses']);
    expect(refused).toEqual([
      expect.objectContaining({
        operation: 'DeleteMessageBatch',
        queueId: 'completions',
        code: 'ReceiptHandleIsInvalid',
        senderFault: true,
      }),
    ]);
  });

  it('a task waiting half a day at its quota is kept by the intake, not by SQS visibility (issue 11)', async () => {
    const clock = new FakeClock();
    const config: ConfigInput = { tenantDefaults: { weight: 1, maxConcurrency: 1 } };
    const base = await started(config, clock.now);
    // The scheduler on its own SQS client, whose visibility requests are recorded.
    const clients = createAwsClients(localEndpoints(base.emulators.dynamodbUrl, base.emulators.sqsUrl));
    const requests: number[] = [];
    clients.sqs.middlewareStack.add(
      (next) => async (args) => {
        const input = (args as { input?: { Entries?: { VisibilityTimeout?: number }[] } }).input;
        for (const entry of input?.Entries ?? []) {
          if (entry.VisibilityTimeout !== undefined) requests.push(entry.VisibilityTimeout);
        }
        return next(args);
      },
      { step: 'initialize', name: 'visibilityRecorder' },
    );
    const schedulerServices = buildServices({
      config: parseConfig(config, 'visibility test'),
      clients,
      resources: { tables: base.emulators.tables, queueUrls: base.emulators.queueUrls },
      now: clock.now,
    });
    const scheduler = new Scheduler(schedulerServices);
    await scheduler.resume();
    await base.tasks.submit({ tenantId: 'held', type: 'demo.sleep', payload: { ms: 1 } });
    await base.tasks.submit({ tenantId: 'held', type: 'demo.sleep', payload: { ms: 1 } });
    await tickAll(scheduler, 3); // one dispatched (the tenant's quota), one waiting
    expect(scheduler.heldCount).toBe(1);
    for (let hour = 0; hour < 13; hour++) {
      clock.advance(3_600_000);
      await tickAll(scheduler, 1);
    }
    // (A dispatch lease ran out meanwhile: the retry's announcement, sent by the last tick's
    // reconciliation, is consumed by the next tick.)
    await tickAll(scheduler, 2);
    // No message is hidden or kept for the waiting task: both announcements were consumed, and
    // the tenant-tier is in the registry, so a successor reads its work from the index.
    expect(requests).toEqual([]);
    expect(await messagesOn(base, TIER.id)).toBe(0);
    expect(await base.control.listIntake()).toEqual([expect.objectContaining({ tenantId: 'held', tier: 'normal' })]);
    expect(scheduler.heldCount).toBeGreaterThanOrEqual(1);
  });
});

describe('tier messages and their dead-letter queue (issue 10, item 8)', () => {
  it('announcements of a tenant far over its quota are received once each; none reaches the DLQ (issue 11)', async () => {
    const config: ConfigInput = { tenantDefaults: { weight: 1, maxConcurrency: 1 } };
    const base = await started(config);
    const submitted: string[] = [];
    for (let i = 0; i < 15; i++) {
      const { task } = await base.tasks.submit({ tenantId: 'flood', type: 'demo.sleep', payload: { ms: 1 } });
      submitted.push(task.taskId);
    }
    const scheduler = new Scheduler(base);
    await scheduler.resume();
    // Long enough for today's old parking to have re-received every parked message many times.
    for (let round = 0; round < 4; round++) {
      await tickAll(scheduler, 3);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }

    expect(await messagesOn(base, TIER.deadLetter!.id)).toBe(0);
    // Every announcement was consumed: none is kept hidden or comes back.
    expect(await messagesOn(base, TIER.id)).toBe(0);
    const tasks = await base.store.getMany(submitted);
    expect([...tasks.values()].filter((task) => task.state !== 'QUEUED')).toHaveLength(1);
    // The 14 waiting tasks are read from the index, their tenant-tier registered.
    expect(await base.control.listIntake()).toEqual([expect.objectContaining({ tenantId: 'flood', tier: 'normal' })]);
  });
});
