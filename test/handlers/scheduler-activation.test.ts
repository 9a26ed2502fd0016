/**
 * The scheduler Lambda scaled to zero, as deployed: the per-minute tick exits at once when a
 * scheduler runs or nothing is due, an invocation out of time hands over to a fresh one, and a
 * submit from another function wakes the scheduler with an asynchronous invoke. Lambda's Invoke
 * API is a local HTTP endpoint that records each call (AWS_ENDPOINT_URL_LAMBDA).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { ENV } from '../../runtime/infra/resources.ts';
import type { SchedulerEvent } from '../../runtime/scheduler/activation.ts';
import { SCHEDULER_LEASE } from '../../runtime/scheduler/scheduler-loop.ts';
import { lambdaEnvironment } from '../helpers/services.ts';

interface Invocation {
  readonly functionName: string;
  readonly invocationType: string | undefined;
  readonly event: SchedulerEvent;
}

let emulators: Emulators;
let services: Services;
let lambdaApi: Server;
const invocations: Invocation[] = [];
let scheduler: typeof import('../../runtime/handlers/scheduler.ts').handler;
let scheduledSubmit: (event: unknown, context: Context) => Promise<{ taskId: string; created: boolean }>;
const saved = { ...process.env };

const context = (remainingMs: number, functionName = 'scheduler-fn'): Context =>
  ({
    awsRequestId: `req-${Math.random()}`,
    functionName,
    getRemainingTimeInMillis: (() => {
      const deadline = Date.now() + remainingMs;
      return () => deadline - Date.now();
    })(),
  }) as unknown as Context;

/**
 * An invocation that runs out of time once `done` holds (checked every 100 ms), however fast the
 * machine: 60 s left until then, 10 s after (under the 15 s safety margin).
 */
const contextUntil = (done: () => Promise<boolean>): { context: Context; stop: () => void } => {
  let remainingMs = 60_000;
  const poll = setInterval(() => {
    void done().then((yes) => {
      if (yes) remainingMs = 10_000;
    });
  }, 100);
  const invocation = context(0);
  const timed = { ...invocation, getRemainingTimeInMillis: () => remainingMs } as unknown as Context;
  return { context: timed, stop: () => clearInterval(poll) };
};

beforeAll(async () => {
  emulators = await startEmulators({ prefix: 'activation' });
  lambdaApi = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      const match = /\/functions\/([^/]+)\/invocations/.exec(request.url ?? '');
      invocations.push({
        functionName: decodeURIComponent(match?.[1] ?? ''),
        invocationType: request.headers['x-amz-invocation-type'] as string | undefined,
        event: JSON.parse(body) as SchedulerEvent,
      });
      response.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => lambdaApi.listen(0, '127.0.0.1', resolve));
  const config = { pools: { lambda: { concurrency: 5 }, fargate: { vcpu: 1, memoryMiB: 2048 } } };
  Object.assign(process.env, lambdaEnvironment(emulators, config), {
    AWS_ENDPOINT_URL_LAMBDA: `http://127.0.0.1:${(lambdaApi.address() as AddressInfo).port}`,
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
  await new Promise((resolve) => lambdaApi.close(resolve));
  await emulators.stop();
});

describe('Handler: scheduler (scale to zero)', () => {
  it('a tick with nothing due exits without looping', async () => {
    const run = await scheduler({ reason: 'tick' }, context(60_000));
    expect(run).toEqual({ ticks: 0, dispatched: 0, ended: 'nothing-due' });
  });

  it('a tick while a scheduler holds the lease exits without looping', async () => {
    const lease = await services.control.acquireLease(SCHEDULER_LEASE, 'running', Date.now(), 30_000);
    try {
      const run = await scheduler({ reason: 'tick' }, context(60_000));
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
      context(10_000, 'scheduled-submit-fn'),
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
