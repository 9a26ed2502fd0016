/**
 * The worker library (runtime/handlers/task-worker.ts) as a user's own Lambda function and
 * container run it: a type with its own queue gets its attempts there (the scheduler routes by
 * TASK_TYPE_QUEUES), and the library's handler and long-polling worker run them with the
 * scheduler's lease, heartbeats, cancel signal and fenced result, from the environment the
 * construct sets, against the emulators.
 */
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import type { CompletionMessage, WorkerMessage } from '../../runtime/adapters/queues.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import {
  COMPLETIONS_QUEUE,
  ENV,
  type QueueDefinition,
  taskTypeQueue,
  workerQueue,
} from '../../runtime/infra/resources.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { defineTaskType, type TaskContext } from '../../runtime/task-types/define.ts';
import { defaultRegistry } from '../../runtime/task-types/index.ts';
import { ATTEMPT_END_RESERVE_MS } from '../../runtime/worker/run-attempt.ts';
import { lambdaEnvironment } from '../helpers/services.ts';

const ocr = defineTaskType({
  type: 'user.ocr',
  description: 'Reads a page',
  payload: z.strictObject({ page: z.number().int() }),
  async handler({ page }, ctx) {
    await ctx.heartbeat();
    ctx.signal.throwIfAborted();
    return { text: `page ${page}`, attempt: ctx.attempt, fence: ctx.fence };
  },
});

/**
 * A type whose handler runs the script its payload names, so a test can hold an attempt while it
 * looks at the task item, heartbeats or cancels it.
 */
const scripts = new Map<string, (ctx: TaskContext) => Promise<unknown>>();
const scripted = defineTaskType({
  type: 'user.scripted',
  description: 'Runs the script its payload names',
  payload: z.strictObject({ script: z.string() }),
  handler: ({ script }, ctx) => scripts.get(script)!(ctx),
});

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const config = { pools: { lambda: { concurrency: 5 }, fargate: { vcpu: 1, memoryMiB: 2048 } } };
const saved = { ...process.env };
let emulators: Emulators;
let services: Services;
let queue: QueueDefinition;
let scriptedQueue: QueueDefinition;
let env: NodeJS.ProcessEnv;
let library: typeof import('../../runtime/handlers/task-worker.ts');

beforeAll(async () => {
  emulators = await startEmulators({ prefix: 'task-worker' });
  queue = taskTypeQueue(ocr.type, 300);
  scriptedQueue = taskTypeQueue(scripted.type, 300);
  const queueUrls = { ...emulators.queueUrls };
  for (const own of [queue, scriptedQueue]) {
    const { QueueUrl } = await emulators.clients.sqs.send(
      new CreateQueueCommand({ QueueName: `task-worker-${own.id}` }),
    );
    queueUrls[own.id] = QueueUrl!;
  }
  const typeQueues = { [ocr.type]: queue, [scripted.type]: scriptedQueue };
  // The scheduler and the API of the deployment: they know the types (their schemas) and queues.
  services = buildServices({
    config: parseConfig(config),
    clients: emulators.clients,
    resources: { tables: emulators.tables, queueUrls, typeQueues },
    registry: defaultRegistry([ocr, scripted]),
  });
  // What the construct sets on the user's function or container.
  env = {
    ...lambdaEnvironment(emulators, config),
    [ENV.queueUrls]: JSON.stringify(queueUrls),
    [ENV.taskTypeQueues]: JSON.stringify(typeQueues),
    [ENV.workerQueue]: queue.id,
  };
  Object.assign(process.env, env);
  library = await import('../../runtime/handlers/task-worker.ts');
});

afterAll(async () => {
  process.env = saved;
  await emulators?.stop();
});

async function submitAndDispatch(payload: unknown, type: string = ocr.type): Promise<string> {
  const { task } = await services.tasks.submit({ tenantId: 'acme', type, payload });
  const scheduler = new Scheduler({
    store: services.store,
    control: services.control,
    queues: services.queues,
    config: services.config,
  });
  await scheduler.resume();
  for (let i = 0; i < 10 && (await services.store.get(task.taskId))?.state === 'QUEUED'; i++) {
    await scheduler.tick({ waitSeconds: 0 });
  }
  return task.taskId;
}

async function stateOf(taskId: string) {
  return (await services.store.get(taskId))!;
}

/** Submit a scripted task, dispatch it, and take its message off the type's queue. */
async function dispatchScripted(script: string): Promise<{ taskId: string; message: WorkerMessage }> {
  const taskId = await submitAndDispatch({ script }, scripted.type);
  for (let i = 0; i < 20; i++) {
    const received = await services.queues.receive<WorkerMessage>(scriptedQueue.id, {
      waitSeconds: 1,
      visibilitySeconds: 60,
    });
    const mine = received.find((m) => m.body.taskId === taskId);
    if (mine) return { taskId, message: mine.body };
  }
  throw new Error(`no message for ${taskId} on ${scriptedQueue.id}`);
}

/** The SQS event a Lambda event source delivers: `message`, once per id. */
function eventOf(message: WorkerMessage, ...messageIds: string[]): SQSEvent {
  return {
    Records: messageIds.map((messageId) => ({
      messageId,
      receiptHandle: `r-${messageId}`,
      body: JSON.stringify(message),
      attributes: {},
    })),
  } as unknown as SQSEvent;
}

const lambdaContext = { awsRequestId: 'req', functionName: 'scripted' } as unknown as Context;

/** Every completion report on the completions queue for `taskId` (taken off the queue). */
async function completionsOf(taskId: string): Promise<CompletionMessage[]> {
  const found: CompletionMessage[] = [];
  for (;;) {
    const batch = await services.queues.receive<CompletionMessage>(COMPLETIONS_QUEUE.id, {
      waitSeconds: 1,
      visibilitySeconds: 60,
    });
    if (batch.length === 0) return found;
    found.push(...batch.map((m) => m.body).filter((body) => body.taskId === taskId));
  }
}

describe('The worker library', () => {
  it('routes a type with its own queue there, not to its pool', async () => {
    // Act
    const taskId = await submitAndDispatch({ page: 1 });

    // Assess
    const own = await services.queues.receive<WorkerMessage>(queue.id, { waitSeconds: 1, visibilitySeconds: 0 });
    const pool = await services.queues.receive<WorkerMessage>(workerQueue('lambda').id, { waitSeconds: 0 });
    expect(own.map((m) => m.body.taskId)).toEqual([taskId]);
    expect(pool).toEqual([]);
    expect((await stateOf(taskId)).state).toBe('DISPATCHED');
  });

  it('taskWorkerHandler: a Lambda on the queue runs the attempt and records the result (fenced)', async () => {
    // Prepare: the message the event source would deliver, and the same one delivered twice.
    const taskId = await submitAndDispatch({ page: 2 });
    const [message] = (
      await services.queues.receive<WorkerMessage>(queue.id, { waitSeconds: 1, visibilitySeconds: 60 })
    ).filter((m) => m.body.taskId === taskId);
    const record = { messageId: 'm-1', receiptHandle: 'r-1', body: JSON.stringify(message!.body), attributes: {} };
    const event = { Records: [record, { ...record, messageId: 'm-2' }] } as unknown as SQSEvent;
    const handler = library.taskWorkerHandler([ocr], env);

    // Act
    const response = await handler(event, { awsRequestId: 'req', functionName: 'ocr' } as unknown as Context);

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await stateOf(taskId)).toMatchObject({
      state: 'SUCCEEDED',
      attempts: 1,
      result: { text: 'page 2', attempt: 1, fence: message!.body.fence },
    });
  });

  it('startTaskWorker: a container long-polls its queue (WORKER_QUEUE) and runs what arrives', async () => {
    // Prepare
    const taskId = await submitAndDispatch({ page: 3 });

    // Act
    const running = library.startTaskWorker([ocr], { env, exitOnSignal: false, waitSeconds: 1, concurrency: 2 });
    const deadline = Date.now() + 60_000;
    while ((await stateOf(taskId)).state !== 'SUCCEEDED' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await running.stop();

    // Assess
    expect(await stateOf(taskId)).toMatchObject({ state: 'SUCCEEDED', result: { text: 'page 3' } });
  }, 90_000);

  it('leases with the fenced DISPATCHED → RUNNING write and renews the lease when the handler heartbeats', async () => {
    // Prepare
    const running = deferred();
    const proceed = deferred();
    const beaten = deferred();
    const finish = deferred();
    scripts.set('heartbeat', async (ctx) => {
      running.resolve();
      await proceed.promise;
      await ctx.heartbeat();
      beaten.resolve();
      await finish.promise;
      return { beat: true };
    });
    const { taskId, message } = await dispatchScripted('heartbeat');
    const handler = library.taskWorkerHandler([scripted], env);

    // Act
    const invocation = handler(eventOf(message, 'm-hb'), lambdaContext);
    await running.promise;
    const leased = await stateOf(taskId);
    proceed.resolve();
    await beaten.promise;
    const renewed = await stateOf(taskId);
    finish.resolve();
    const response = await invocation;

    // Assess
    expect(leased).toMatchObject({ state: 'RUNNING', attempts: 1, fence: message.fence });
    expect(renewed).toMatchObject({ state: 'RUNNING', fence: message.fence });
    expect(renewed.version).toBe(leased.version + 1);
    expect(Date.parse(renewed.leaseExpiresAt!)).toBeGreaterThanOrEqual(Date.parse(leased.leaseExpiresAt!));
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await stateOf(taskId)).toMatchObject({ state: 'SUCCEEDED', result: { beat: true } });
    expect(await completionsOf(taskId)).toEqual([
      { taskId, fence: message.fence, tenantId: 'acme', state: 'SUCCEEDED' },
    ]);
  }, 60_000);

  it('taskWorkerHandler: times the attempt out before its Lambda invocation ends, so the end is recorded', async () => {
    // Prepare: a handler that runs until its signal aborts, in an invocation with no more time
    // left than the attempt keeps back to write its end.
    scripts.set(
      'forever',
      (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
    );
    const { taskId, message } = await dispatchScripted('forever');
    const handler = library.taskWorkerHandler([scripted], env);
    const ending = { ...lambdaContext, getRemainingTimeInMillis: () => ATTEMPT_END_RESERVE_MS } as Context;

    // Act
    const response = await handler(eventOf(message, 'm-end'), ending);

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await stateOf(taskId)).toMatchObject({
      attempts: 1,
      error: { name: 'TimeoutError', message: expect.stringMatching(/Lambda invocation/) },
    });
  }, 60_000);

  it("aborts the handler's signal on cancel and records CANCELLED, not what the handler returns after", async () => {
    // Prepare
    const running = deferred();
    let reason: unknown;
    scripts.set('cancel', async (ctx) => {
      running.resolve();
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      reason = ctx.signal.reason;
      return { late: true };
    });
    const { taskId, message } = await dispatchScripted('cancel');

    // Act: the container's entry point this time (runTaskMessage, as a custom loop calls it).
    const attempt = library.runTaskMessage(message, [scripted], env);
    await running.promise;
    await services.tasks.cancel(taskId);
    const outcome = await attempt;

    // Assess
    expect(reason).toMatchObject({ name: 'AbortError', message: 'The task was cancelled' });
    expect(outcome).toMatchObject({ kind: 'finished', task: { state: 'CANCELLED' } });
    const task = await stateOf(taskId);
    expect(task.state).toBe('CANCELLED');
    expect(task.result).toBeUndefined();
    expect(await completionsOf(taskId)).toEqual([
      { taskId, fence: message.fence, tenantId: 'acme', state: 'CANCELLED' },
    ]);
  }, 60_000);

  it("startTaskWorker: a handler's uncaught error fails its attempt; the container and its other attempts go on", async () => {
    // Before: the container had no listener, so Node ended the process on such an error, and
    // every attempt it ran (up to 4 per vCPU, of any tenant) waited out its run lease and was
    // counted failed. Node calls the listener from the handler's own asynchronous context (a
    // timer here); the test calls the listener the worker installed in the same way.
    const before = new Set(process.listeners('uncaughtException'));
    const container = library.startTaskWorker([scripted], {
      env: { ...env, [ENV.workerQueue]: scriptedQueue.id },
      exitOnSignal: false,
      waitSeconds: 1,
      concurrency: 2,
    });
    const installed = process.listeners('uncaughtException').filter((listener) => !before.has(listener));
    expect(installed).toHaveLength(1);
    scripts.set('leaky', async () => {
      setTimeout(() => installed[0]!(new Error('forgot to await this'), 'unhandledRejection'), 10);
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      return 'done';
    });
    scripts.set('steady', async () => {
      await new Promise((resolve) => setTimeout(resolve, 500));
      return 'steady done';
    });

    // Act
    const leaky = await submitAndDispatch({ script: 'leaky' }, scripted.type);
    const steady = await submitAndDispatch({ script: 'steady' }, scripted.type);
    const deadline = Date.now() + 30_000;
    const ended = async (taskId: string) => ['QUEUED', 'FAILED', 'SUCCEEDED'].includes((await stateOf(taskId)).state);
    while (!((await ended(leaky)) && (await ended(steady))) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The dispatches above also dispatched earlier tests' retries (a handler that waits for its
    // signal among them) to this container: cancel what still runs, so that it stops soon.
    for (const state of ['QUEUED', 'DISPATCHED', 'RUNNING'] as const) {
      const { items } = await services.tasks.list({ tenantId: 'acme', state, limit: 100 });
      for (const item of items) if (item.taskId !== leaky) await services.tasks.cancel(item.taskId);
    }
    await container.stop();

    // Assess
    // (Retried meanwhile, maybe: the dispatch of the second task also dispatches the retry.)
    expect(await stateOf(leaky)).toMatchObject({
      error: {
        name: 'Error',
        message: 'The handler left an unhandled rejection: forgot to await this',
        retryable: true,
      },
    });
    expect(await stateOf(steady)).toMatchObject({ state: 'SUCCEEDED', result: 'steady done' });
    expect(process.listeners('uncaughtException').filter((listener) => !before.has(listener))).toEqual([]);
  }, 60_000);

  it('under duplicate delivery (twice in a batch, to a container at once, again after the end) runs and records once', async () => {
    // Prepare
    let runs = 0;
    const running = deferred();
    const release = deferred();
    scripts.set('duplicate', async (ctx) => {
      runs++;
      running.resolve();
      await release.promise;
      return { fence: ctx.fence };
    });
    const { taskId, message } = await dispatchScripted('duplicate');
    const handler = library.taskWorkerHandler([scripted], env);

    // Act
    const batch = handler(eventOf(message, 'm-1', 'm-2'), lambdaContext);
    const container = library.runTaskMessage(message, [scripted], env);
    await running.promise;
    release.resolve();
    const [response] = await Promise.all([batch, container]);
    const finished = await stateOf(taskId);
    const late = await handler(eventOf(message, 'm-3'), lambdaContext);

    // Assess
    expect(runs).toBe(1);
    expect(response).toEqual({ batchItemFailures: [] });
    expect(late).toEqual({ batchItemFailures: [] });
    expect(finished).toMatchObject({ state: 'SUCCEEDED', attempts: 1, result: { fence: message.fence } });
    expect(await stateOf(taskId)).toEqual(finished);
    expect(await completionsOf(taskId)).toHaveLength(1);
  }, 60_000);

  it('refuses what a task module would be refused (an entry not made by defineTaskType)', () => {
    expect(() => library.taskWorkerHandler([{ ...ocr }], env)).toThrow(
      'taskWorkerHandler [0] is an object with type "user.ocr", not a task type made by defineTaskType',
    );
    expect(() =>
      library.startTaskWorker([ocr], { env: { ...env, [ENV.workerQueue]: '' }, exitOnSignal: false }),
    ).toThrow('Missing environment: WORKER_QUEUE');
  });
});
