/**
 * The worker, scheduler and scheduled-submit Lambdas as deployed: services built from the
 * environment the stack sets, pointed at the in-memory emulators through the SDK's standard
 * endpoint variables.
 */
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { dispatch } from '../../runtime/core/lifecycle.ts';
import { lambdaEnvironment } from '../helpers/services.ts';

let emulators: Emulators;
let services: Services;
let worker: {
  (event: SQSEvent, context: Context): Promise<{ batchItemFailures: { itemIdentifier: string }[] }>;
  (event: WorkerMessage, context: Context): Promise<undefined>;
};
let scheduler: (
  event: { reason?: 'tick' } | undefined,
  context: Context,
) => Promise<{ ticks: number; dispatched: number }>;
let idleWait: (configuredSeconds: number, msLeft: number) => number;
let scheduledSubmit: (event: unknown, context: Context) => Promise<{ taskId: string; created: boolean }>;
const saved = { ...process.env };

const context = (remainingMs: number): Context =>
  ({
    awsRequestId: `req-${Math.random()}`,
    functionName: 'test',
    getRemainingTimeInMillis: (() => {
      const deadline = Date.now() + remainingMs;
      return () => deadline - Date.now();
    })(),
  }) as unknown as Context;

const record = (messageId: string, body: unknown): SQSRecord =>
  ({
    messageId,
    receiptHandle: messageId,
    body: JSON.stringify(body),
    attributes: {},
    eventSource: 'aws:sqs',
  }) as unknown as SQSRecord;

beforeAll(async () => {
  emulators = await startEmulators({ prefix: 'handlers' });
  const config = { pools: { lambda: { concurrency: 5 }, fargate: { vcpu: 1, memoryMiB: 2048 } } };
  Object.assign(process.env, lambdaEnvironment(emulators, config));
  services = buildServices({
    config: parseConfig(config),
    clients: emulators.clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
  });
  ({ handler: worker } = await import('../../runtime/handlers/worker.ts'));
  ({ handler: scheduler, idleWait } = await import('../../runtime/handlers/scheduler.ts'));
  ({ handler: scheduledSubmit } = await import('../../runtime/handlers/scheduled-submit.ts'));
});
afterAll(async () => {
  process.env = saved;
  await emulators.stop();
});

describe('Handler: worker', () => {
  it('runs each record and reports only infrastructure failures as batch item failures', async () => {
    // Prepare: one runnable attempt, one duplicate of it, and one record that is not JSON.
    const { task } = await services.tasks.submit({ tenantId: 'w', type: 'demo.echo', payload: { n: 1 } });
    const dispatched = await services.store.apply(dispatch(task, new Date(), 60));
    const message: WorkerMessage = { taskId: task.taskId, fence: dispatched.fence, tenantId: 'w', type: 'demo.echo' };

    // Act
    const response = await worker(
      { Records: [record('m1', message), record('m2', message), { ...record('m3', {}), body: '{not json' }] },
      context(60_000),
    );

    // Assess: the task ran once; the duplicate was skipped (not a failure); the garbage failed.
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm3' }]);
    expect(await services.store.get(task.taskId)).toMatchObject({
      state: 'SUCCEEDED',
      attempts: 1,
      result: { echo: { n: 1 } },
    });
  });
});

describe('Handler: worker memory classes', () => {
  it('does not run a bigger task at the entry: with no function for its class the record fails and comes back', async () => {
    // Prepare: a 2,048 MiB task reaches the entry (512 MiB), which has no class functions here.
    const { task } = await services.tasks.submit({
      tenantId: 'w',
      type: 'demo.echo',
      payload: { big: true },
      runtime: 'lambda',
      resources: { vcpu: 1, memoryMiB: 2048 },
    });
    const dispatched = await services.store.apply(dispatch(task, new Date(), 60));
    const message: WorkerMessage = {
      taskId: task.taskId,
      fence: dispatched.fence,
      tenantId: 'w',
      type: 'demo.echo',
      resources: task.resources,
    };

    const small = await services.tasks.submit({ tenantId: 'w', type: 'demo.echo', payload: { small: true } });
    const smallDispatched = await services.store.apply(dispatch(small.task, new Date(), 60));
    // As an older scheduler sent it: no resources and no task; the entry reads the item to place it.
    const smallMessage: WorkerMessage = {
      taskId: small.task.taskId,
      fence: smallDispatched.fence,
      tenantId: 'w',
      type: 'demo.echo',
    };

    // Act
    const response = await worker(
      { Records: [record('big', message), record('small', smallMessage)] },
      context(60_000),
    );

    // Assess: the small one ran here; the big one is a batch item failure and untouched (its
    // dispatch lease brings it back if this persists).
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'big' }]);
    expect((await services.store.get(task.taskId))?.state).toBe('DISPATCHED');
    expect((await services.store.get(small.task.taskId))?.state).toBe('SUCCEEDED');
  });

  it('runs the message it is invoked with in its own class (the entry hands it over this way)', async () => {
    // Prepare
    const { task } = await services.tasks.submit({
      tenantId: 'w',
      type: 'demo.echo',
      payload: { big: 2 },
      runtime: 'lambda',
      resources: { vcpu: 1, memoryMiB: 2048 },
    });
    const dispatched = await services.store.apply(dispatch(task, new Date(), 60));
    const message: WorkerMessage = { taskId: task.taskId, fence: dispatched.fence, tenantId: 'w', type: 'demo.echo' };
    process.env.WORKER_MEMORY_MIB = '2048';

    // Act
    try {
      await worker(message, context(60_000));
    } finally {
      delete process.env.WORKER_MEMORY_MIB;
    }

    // Assess
    expect(await services.store.get(task.taskId)).toMatchObject({ state: 'SUCCEEDED', result: { echo: { big: 2 } } });
  });
});

describe('Handler: scheduler', () => {
  it('shortens the idle poll so that it ends before the safety margin', () => {
    expect(idleWait(10, 60_000)).toBe(10);
    expect(idleWait(10, 4_500)).toBe(4);
    expect(idleWait(10, 200)).toBe(1); // SQS waits whole seconds; the margin absorbs the rest
  });

  it('takes the lease, dispatches queued work and stops before its timeout', async () => {
    const { task } = await services.tasks.submit({ tenantId: 's', type: 'demo.echo', payload: {} });
    // 17 s left with a 15 s safety margin: it loops about two seconds, then hands the lease back.
    const result = await scheduler({}, context(17_000));
    expect(result.ticks).toBeGreaterThan(0);
    expect(result.dispatched).toBeGreaterThanOrEqual(1);
    expect((await services.store.get(task.taskId))?.state).toBe('DISPATCHED');
    expect((await services.control.getLease('scheduler'))?.expiresAt).toBe(0);
  }, 30_000);
});

describe('Handler: scheduled-submit', () => {
  it('submits one task per firing however often the firing is delivered', async () => {
    const event = {
      scheduleName: 'nightly',
      scheduledTime: '2026-11-30T02:00:00Z',
      task: { tenantId: 'finance', type: 'demo.echo', payload: { night: '{{date}}' } },
    };
    const first = await scheduledSubmit(event, context(10_000));
    const again = await scheduledSubmit(event, context(10_000));
    expect(first.created).toBe(true);
    expect(again).toEqual({ taskId: first.taskId, created: false });
    expect(await services.store.get(first.taskId)).toMatchObject({ payload: { night: '2026-11-30' } });
    await expect(scheduledSubmit({ ...event, scheduledTime: 'yesterday' }, context(10_000))).rejects.toThrow();
  });

  it("fills {{date}} with the scheduled date in the schedule's time zone (the stack passes it)", async () => {
    // 00:30 on 4 December in Paris is 23:30 UTC on 3 December.
    const { taskId } = await scheduledSubmit(
      {
        scheduleName: 'paris-nightly',
        scheduledTime: '2026-12-03T23:30:00Z',
        timezone: 'Europe/Paris',
        task: { tenantId: 'finance', type: 'demo.echo', payload: { night: '{{date}}' } },
      },
      context(10_000),
    );
    expect(await services.store.get(taskId)).toMatchObject({ payload: { night: '2026-12-04' } });
  });
});
