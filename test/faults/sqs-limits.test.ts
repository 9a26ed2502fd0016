/**
 * Issue 10, items 7 and 8: SQS's limits (1 MiB per batch, its character set, 12 h of visibility
 * from receipt, per-entry failures of batch calls, a tier message's receive count against its
 * dead-letter queue's maxReceiveCount). Real Scheduler and workers on dynalite + fauxqs.
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { createAwsClients, localEndpoints } from '../../runtime/adapters/aws-clients.ts';
import type { TierMessage, WorkerMessage } from '../../runtime/adapters/queues.ts';
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

  it('a held tier message is never asked to stay hidden past 12 h from its first receipt', async () => {
    const clock = new FakeClock();
    const config: ConfigInput = { tenantDefaults: { weight: 1, maxConcurrency: 1 } };
    const base = await started(config, clock.now);
    // The scheduler on its own SQS client, whose visibility requests are recorded.
    const clients = createAwsClients(localEndpoints(base.emulators.dynamodbUrl, base.emulators.sqsUrl));
    const requests: { atMs: number; seconds: number }[] = [];
    clients.sqs.middlewareStack.add(
      (next) => async (args) => {
        if (args.input && (args as { input: object }).input instanceof Object) {
          const input = args.input as { Entries?: { VisibilityTimeout?: number }[] };
          for (const entry of input.Entries ?? []) {
            if (entry.VisibilityTimeout !== undefined) {
              requests.push({ atMs: clock.now().getTime(), seconds: entry.VisibilityTimeout });
            }
          }
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
    await tickAll(scheduler, 3); // one dispatched (the tenant's quota), one held
    expect(scheduler.heldCount).toBe(1);
    const firstReceiptMs = Date.now();
    requests.length = 0;
    // The tenant stays at its quota for half a day: the scheduler keeps renewing its hold.
    for (let hour = 0; hour < 13; hour++) {
      clock.advance(3_600_000);
      await tickAll(scheduler, 1);
    }
    const capMs = firstReceiptMs + 43_200_000;
    const pastCap = requests.filter(({ atMs, seconds }) => seconds > 0 && atMs + seconds * 1000 > capMs);
    expect(pastCap).toEqual([]);
    // And the waiting task still has a message to come back on.
    expect(await messagesOn(base, TIER.id)).toBeGreaterThan(0);
  });
});

describe('tier messages and their dead-letter queue (issue 10, item 8)', () => {
  it("a message parked again and again is replaced before its receive count reaches the DLQ's maxReceiveCount", async () => {
    const config: ConfigInput = { tenantDefaults: { weight: 1, maxConcurrency: 1 } };
    const base = await started(config);
    const submitted: string[] = [];
    // Hold limit under fair share: max(10, 2 × quota) = 10 candidates, one dispatched: the
    // last few are parked.
    for (let i = 0; i < 15; i++) {
      const { task } = await base.tasks.submit({ tenantId: 'flood', type: 'demo.sleep', payload: { ms: 1 } });
      submitted.push(task.taskId);
    }
    // Bring every tier message to maxReceiveCount - 1 receives (what minutes of parking waves do).
    const target = TIER.deadLetter!.maxReceiveCount - 1;
    const reached = new Map<string, string>();
    while (reached.size < submitted.length) {
      const batch = await base.queues.receive<TierMessage>(TIER.id, { visibilitySeconds: 0 });
      for (const message of batch) {
        if (message.receiveCount >= target) reached.set(message.messageId, message.receiptHandle);
      }
      const done = batch.filter((m) => m.receiveCount >= target).map((m) => m.receiptHandle);
      if (done.length > 0) await base.queues.changeVisibility(TIER.id, done, 600);
    }
    await base.queues.changeVisibility(TIER.id, [...reached.values()], 0);

    const scheduler = new Scheduler(base);
    await scheduler.resume();
    await tickAll(scheduler, 3);
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // the parked message comes back
    await tickAll(scheduler, 3);

    expect(await messagesOn(base, TIER.deadLetter!.id)).toBe(0);
    const tasks = await base.store.getMany(submitted);
    const queued = [...tasks.values()].filter((task) => task.state === 'QUEUED');
    // Every task still waiting has a message: held by the scheduler or on the queue.
    expect(await messagesOn(base, TIER.id)).toBeGreaterThanOrEqual(queued.length);
  });
});
