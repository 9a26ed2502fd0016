/**
 * The scheduler Lambda scaled to zero, as deployed: the per-minute tick exits at once when a
 * scheduler runs or nothing is due, an invocation out of time hands over to a fresh one, and a
 * submit from another function wakes the scheduler with an asynchronous invoke. Lambda's Invoke
 * API is a local HTTP endpoint that records each call (AWS_ENDPOINT_URL_LAMBDA).
 */
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { ENV } from '../../runtime/infra/resources.ts';
import { SCHEDULER_LEASE } from '../../runtime/scheduler/scheduler-loop.ts';
import {
  contextUntil,
  invocationContext,
  type RecordedInvocation,
  startLambdaApi,
} from '../helpers/lambda-invocations.ts';
import { lambdaEnvironment } from '../helpers/services.ts';

let emulators: Emulators;
let services: Services;
let lambdaApi: Awaited<ReturnType<typeof startLambdaApi>>;
let invocations: RecordedInvocation[];
let scheduler: typeof import('../../runtime/handlers/scheduler.ts').handler;
let scheduledSubmit: (event: unknown, context: Context) => Promise<{ taskId: string; created: boolean }>;
const saved = { ...process.env };

beforeAll(async () => {
  emulators = await startEmulators({ prefix: 'activation' });
  lambdaApi = await startLambdaApi();
  invocations = lambdaApi.invocations;
  const config = { pools: { lambda: { concurrency: 5 }, fargate: { vcpu: 1, memoryMiB: 2048 } } };
  Object.assign(process.env, lambdaEnvironment(emulators, config), {
    AWS_ENDPOINT_URL_LAMBDA: lambdaApi.url,
    // Set by the stack on every function but the scheduler itself.
    [ENV.schedulerFunction]: 'scheduler-fn',
  });
  services = buildServices({
    config: parseConfig(config),
    clients: emulators.clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
  });
  ({ handler: scheduler } = await import('../../runtime/handlers/scheduler.ts'));
  ({ handler: scheduledSubmit } = await import('../../runtime/handlers/scheduled-submit.ts'));
});
beforeEach(() => {
  invocations.length = 0;
});
afterAll(async () => {
  process.env = saved;
  await lambdaApi.close();
  await emulators.stop();
});

describe('Handler: scheduler (scale to zero)', () => {
  it('a tick with nothing due exits without looping', async () => {
    const run = await scheduler({ reason: 'tick' }, invocationContext(60_000));
    expect(run).toEqual({ ticks: 0, dispatched: 0, ended: 'nothing-due' });
  });

  it('a tick while a scheduler holds the lease exits without looping', async () => {
    const lease = await services.control.acquireLease(SCHEDULER_LEASE, 'running', Date.now(), 30_000);
    try {
      const run = await scheduler({ reason: 'tick' }, invocationContext(60_000));
      expect(run.ended).toBe('live-elsewhere');
    } finally {
      await services.control.releaseLease(lease!, Date.now());
    }
  });

  it('a submit from another function wakes the scheduler with an asynchronous invoke', async () => {
    const submitted = await scheduledSubmit(
      {
        scheduleName: 'wake',
        scheduledTime: '2026-11-30T02:00:00Z',
        task: { tenantId: 'w', type: 'demo.echo', payload: {} },
      },
      invocationContext(10_000, 'scheduled-submit-fn'),
    );
    expect(submitted.created).toBe(true);
    expect(invocations).toEqual([{ functionName: 'scheduler-fn', invocationType: 'Event', event: { reason: 'wake' } }]);
  });

  it('woken, it dispatches, and out of time with work left it hands over to a fresh invocation', async () => {
    const { task } = await services.tasks.submit({ tenantId: 'h', type: 'demo.echo', payload: {} });
    // Out of time once it has dispatched the task (a fixed time left failed on a loaded machine).
    const invocation = contextUntil(async () => (await services.store.get(task.taskId))?.state === 'DISPATCHED');
    const run = await scheduler({ reason: 'wake' }, invocation.context).finally(invocation.stop);
    expect(run.dispatched).toBeGreaterThanOrEqual(1);
    expect(run.ended).toBe('handed-over');
    expect((await services.store.get(task.taskId))?.state).toBe('DISPATCHED');
    expect(invocations).toEqual([
      { functionName: 'scheduler-fn', invocationType: 'Event', event: { reason: 'handover' } },
    ]);
  }, 30_000);
});
