/**
 * The long-lived scheduler (`scheduler.mode: "service"`): the service task holds its shard's
 * lease for good and dispatches; a second task (a deploy's replacement) waits for the lease and
 * takes over when the first is stopped; the scheduler Lambda, standing in while the service is
 * down, leaves the lease to it at its time limit instead of invoking a fresh Lambda.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { type ConfigInput, parseConfig } from '../../runtime/core/config.ts';
import { ConfigError } from '../../runtime/core/errors.ts';
import type { SchedulerHandlerMetrics } from '../../runtime/handlers/scheduler-report.ts';
import { ENV } from '../../runtime/infra/resources.ts';
import { SCHEDULER_LEASE } from '../../runtime/scheduler/scheduler-loop.ts';
import { contextUntil, type RecordedInvocation, startLambdaApi } from '../helpers/lambda-invocations.ts';
import { lambdaEnvironment } from '../helpers/services.ts';

let emulators: Emulators;
let services: Services;
let lambdaApi: Awaited<ReturnType<typeof startLambdaApi>>;
let invocations: RecordedInvocation[];
const saved = { ...process.env };
let service: typeof import('../../runtime/handlers/scheduler-service.ts');
let scheduler: typeof import('../../runtime/handlers/scheduler.ts').handler;

const config: ConfigInput = {
  pools: { lambda: { concurrency: 5 }, fargate: { vcpu: 1, memoryMiB: 2048 } },
  scheduler: { mode: 'service' },
};

/** A metrics sink that records the names and values published. */
function recordingMetrics(): SchedulerHandlerMetrics & { readonly published: [string, number][] } {
  const published: [string, number][] = [];
  return {
    published,
    addMetric: (name, _unit, value) => published.push([name, value]),
    singleMetric: () => ({
      addDimension() {},
      addDimensions() {},
      addMetric: (name, _unit, value) => published.push([name, value]),
    }),
    publishStoredMetrics() {},
  };
}

beforeAll(async () => {
  emulators = await startEmulators({ prefix: 'scheduler-service' });
  lambdaApi = await startLambdaApi();
  invocations = lambdaApi.invocations;
  Object.assign(process.env, lambdaEnvironment(emulators, config), {
    AWS_ENDPOINT_URL_LAMBDA: lambdaApi.url,
  });
  services = buildServices({
    config: parseConfig(config),
    clients: emulators.clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
  });
  service = await import('../../runtime/handlers/scheduler-service.ts');
  ({ handler: scheduler } = await import('../../runtime/handlers/scheduler.ts'));
});
beforeEach(() => {
  invocations.length = 0;
});
afterAll(async () => {
  process.env = saved;
  await lambdaApi.close();
  await emulators.stop();
});

describe('Scheduler service (scheduler.mode "service")', () => {
  it('holds the lease and dispatches; a replacement waits for the lease and takes over when the first stops', async () => {
    const firstMetrics = recordingMetrics();
    const first = service.startSchedulerService({
      services,
      env: { [ENV.schedulerShard]: '0' },
      metrics: firstMetrics,
    });
    const { task: early } = await services.tasks.submit({ tenantId: 's', type: 'demo.echo', payload: {} });
    await vi.waitFor(async () => expect((await services.store.get(early.taskId))?.state).toBe('DISPATCHED'), {
      timeout: 20_000,
      interval: 200,
    });
    const held = await services.control.getLease(SCHEDULER_LEASE);
    expect(held?.owner).toMatch(/^service-/);

    // A deploy starts the replacement before stopping the old task: it waits, dispatching nothing.
    const second = service.startSchedulerService({
      services,
      env: { [ENV.schedulerShard]: '0' },
      metrics: recordingMetrics(),
    });
    first.stop();
    await first.done;
    // Its last report counts what it dispatched and a completed pass (the silence alarm's metric).
    expect(firstMetrics.published).toContainEqual(['TasksDispatched', 1]);
    expect(firstMetrics.published).toContainEqual(['SchedulerLoopCompleted', 1]);

    const { task: late } = await services.tasks.submit({ tenantId: 's', type: 'demo.echo', payload: {} });
    await vi.waitFor(async () => expect((await services.store.get(late.taskId))?.state).toBe('DISPATCHED'), {
      timeout: 20_000,
      interval: 200,
    });
    const taken = await services.control.getLease(SCHEDULER_LEASE);
    expect(taken?.owner).toMatch(/^service-/);
    expect(taken?.token).not.toBe(held?.token);
    second.stop();
    await second.done;
    // Neither the service nor anything else invoked the scheduler Lambda.
    expect(invocations).toEqual([]);
  }, 60_000);

  it('the scheduler Lambda standing in leaves the lease to the service at its time limit', async () => {
    const { task } = await services.tasks.submit({ tenantId: 'l', type: 'demo.echo', payload: {} });
    // Out of time once it has dispatched the task.
    const invocation = contextUntil(async () => (await services.store.get(task.taskId))?.state === 'DISPATCHED');
    const run = await scheduler({ reason: 'wake' }, invocation.context).finally(invocation.stop);
    expect(run).toMatchObject({ ended: 'stopped' });
    expect(run.dispatched).toBeGreaterThanOrEqual(1);
    expect((await services.store.get(task.taskId))?.state).toBe('DISPATCHED');
    // No fresh invocation: the service (waiting for the lease) takes over.
    expect(invocations).toEqual([]);
  }, 30_000);

  it('refuses a SCHEDULER_SHARD the configuration does not have', () => {
    expect(() => service.shardFromEnvironment({ [ENV.schedulerShard]: '1' }, 1)).toThrow(ConfigError);
    expect(() => service.shardFromEnvironment({ [ENV.schedulerShard]: 'x' }, 4)).toThrow(
      'SCHEDULER_SHARD must be a shard from 0 to 3, got "x"',
    );
    expect(service.shardFromEnvironment({ [ENV.schedulerShard]: '3' }, 4)).toBe(3);
    expect(service.shardFromEnvironment({}, 4)).toBe(0);
  });
});
