/**
 * Issue 10, items 3 and 5: the scheduler's dispatch step when some of its writes fail or
 * conflict. Every landed dispatch write must be counted and get its worker message, and a task
 * still QUEUED must keep a live tier message. Real Scheduler on dynalite + fauxqs.
 */
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { createAwsClients, localEndpoints } from '../../runtime/adapters/aws-clients.ts';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { type ConfigInput, parseConfig } from '../../runtime/core/config.ts';
import { start, succeed } from '../../runtime/core/lifecycle.ts';
import { TASKS_TABLE, workerQueue } from '../../runtime/infra/resources.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { attributeString } from '../../sim/faults/lost-response.ts';
import { submitTask } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices | undefined;
afterEach(async () => {
  await services?.stop();
  services = undefined;
});

async function started(config: ConfigInput): Promise<TestServices> {
  services = await startTestServices({ config });
  return services;
}

type PutHook = (item: Record<string, unknown>) => Promise<void> | void;

/** Services on their own clients; `onPut` runs before each PutItem on the tasks table is sent. */
function withPutHook(base: TestServices, config: ConfigInput, onPut: PutHook): Services {
  const { emulators } = base;
  const clients = createAwsClients(localEndpoints(emulators.dynamodbUrl, emulators.sqsUrl));
  const table = emulators.tables[TASKS_TABLE.id];
  clients.dynamodb.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string; Item?: Record<string, unknown> };
      if (context.commandName === 'PutItemCommand' && input.TableName === table && input.Item) await onPut(input.Item);
      return next(args);
    },
    { step: 'initialize', name: 'putHook' },
  );
  return buildServices({
    config: parseConfig(config, 'scheduler dispatch test'),
    clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
  });
}

/** The item's state, marshalled (below the document client) or not. */
const stateOf = (item: Record<string, unknown>) =>
  typeof item.state === 'string' ? item.state : attributeString(item, 'state');

async function workerMessages(base: TestServices): Promise<WorkerMessage[]> {
  const bodies: WorkerMessage[] = [];
  for (;;) {
    const batch = await base.queues.receive<WorkerMessage>(workerQueue('lambda').id, { visibilitySeconds: 600 });
    if (batch.length === 0) return bodies;
    bodies.push(...batch.map((m) => m.body));
  }
}

describe('Scheduler dispatch step', () => {
  it('a failed dispatch write does not strand the writes still in flight (issue 10, item 5)', async () => {
    const config: ConfigInput = { tenantDefaults: { weight: 1, maxConcurrency: 4 } };
    const base = await started(config);
    const first = await submitTask(base);
    const second = await submitTask(base);
    let dispatchWrites = 0;
    let landLate!: () => void;
    const lateWrite = new Promise<void>((resolve) => {
      landLate = resolve;
    });
    let slowWriteSent!: () => void;
    const slowWriteLanded = new Promise<void>((resolve) => {
      slowWriteSent = () => setTimeout(resolve, 100);
    });
    const schedulerServices = withPutHook(base, config, async (item) => {
      if (stateOf(item) !== 'DISPATCHED') return;
      dispatchWrites++;
      if (dispatchWrites === 1) {
        // The first dispatch write fails for good (throttled past the SDK's retries)...
        throw new ProvisionedThroughputExceededException({ message: 'injected', $metadata: {} });
      }
      // ...while the second is still on its way, and lands after the first has failed.
      await lateWrite;
      slowWriteSent();
    });
    const scheduler = new Scheduler(schedulerServices);
    await scheduler.resume();
    const tick = scheduler.tick().then(
      () => undefined,
      (error: unknown) => error,
    );
    // Let the tick run into the failure before the slow write is allowed to land.
    await new Promise((resolve) => setTimeout(resolve, 200));
    landLate();
    await slowWriteLanded;
    await tick;

    const states = await base.store.getMany([first.taskId, second.taskId]);
    const landed = [...states.values()].filter((task) => task.state === 'DISPATCHED');
    expect(landed).toHaveLength(1);
    const sent = await workerMessages(base);
    expect(sent.map((m) => m.taskId)).toEqual([landed[0]!.taskId]);
    expect(scheduler.activeCount).toBe(1);
  });

  it('cancel then operator retry of a task the scheduler holds leaves it a live tier message (issue 10, item 3)', async () => {
    const config: ConfigInput = { tenantDefaults: { weight: 1, maxConcurrency: 1 } };
    const base = await started(config);
    const scheduler = new Scheduler(base);
    await scheduler.resume();
    const busy = await submitTask(base);
    const waiting = await submitTask(base);
    for (let i = 0; i < 3; i++) await scheduler.tick();
    // The tenant is at its quota with `busy`; `waiting` is held by the scheduler.
    expect((await base.store.get(busy.taskId))!.state).toBe('DISPATCHED');
    expect(scheduler.heldCount).toBe(1);

    await base.tasks.cancel(waiting.taskId);
    await base.tasks.retry(waiting.taskId);
    await scheduler.tick(); // receives the retry's announcement while holding the old one

    // `busy` finishes: the scheduler dispatches what it holds.
    const dispatched = (await base.store.get(busy.taskId))!;
    const running = await base.store.apply(start(dispatched, dispatched.fence, new Date(), 60));
    await base.store.apply(succeed(running, running.fence, new Date(), {}));
    await base.queues.reportCompletions([
      { taskId: busy.taskId, fence: running.fence, tenantId: busy.tenantId, state: 'SUCCEEDED' },
    ]);
    for (let i = 0; i < 3; i++) await scheduler.tick();

    const after = (await base.store.get(waiting.taskId))!;
    // Before the fix: QUEUED, and no message on its tier queue to bring it back.
    expect(after.state).toBe('DISPATCHED');
    expect(await workerMessages(base)).toEqual(
      expect.arrayContaining([expect.objectContaining({ taskId: waiting.taskId, fence: after.fence })]),
    );
  });
});
