/**
 * The local runtime scales the scheduler to zero as the Lambda does: it stops after an idle
 * spell, a submit wakes it, and the safety-net tick starts it for work nobody announced to it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleLogger } from '../../local/console-logger.ts';
import { type LocalRuntime, startLocalRuntime } from '../../local/runtime.ts';
import { buildServices } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';

let runtime: LocalRuntime;
const config = parseConfig({ pools: { lambda: { concurrency: 4 }, fargate: { vcpu: 1, memoryMiB: 2048 } } });

beforeAll(async () => {
  runtime = await startLocalRuntime({
    config,
    summaryEverySeconds: 0,
    logger: consoleLogger({ quiet: true }),
    idleStopMs: 500,
    tickSeconds: 1,
  });
});
afterAll(async () => {
  await runtime?.stop();
});

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const succeeded = (taskId: string) => async () => (await runtime.services.store.get(taskId))?.state === 'SUCCEEDED';

describe('Local runtime: scale to zero', () => {
  it('stops the idle scheduler, and a submit wakes it to run the task', async () => {
    await until(() => !runtime.schedulerRunning(), 'the idle scheduler stops');
    const wakesBefore = runtime.schedulerWakes();

    const { task } = await runtime.services.tasks.submit({ tenantId: 't', type: 'demo.echo', payload: {} });

    expect(runtime.schedulerWakes()).toBe(wakesBefore + 1);
    expect(runtime.schedulerRunning()).toBe(true);
    await until(succeeded(task.taskId), 'the task succeeds');
    await until(() => !runtime.schedulerRunning(), 'the scheduler stops again');
  }, 30_000);

  it('the tick starts a stopped scheduler for a task announced without a wake', async () => {
    await until(() => !runtime.schedulerRunning(), 'the idle scheduler stops');
    // The same tables and queues, without the waker: as if the wake had failed.
    const silent = buildServices({
      config,
      clients: runtime.emulators.clients,
      resources: { tables: runtime.emulators.tables, queueUrls: runtime.emulators.queueUrls },
    });
    const wakesBefore = runtime.schedulerWakes();

    const { task } = await silent.tasks.submit({ tenantId: 't', type: 'demo.echo', payload: {} });

    expect(runtime.schedulerRunning()).toBe(false);
    await until(succeeded(task.taskId), 'the task succeeds');
    expect(runtime.schedulerWakes()).toBe(wakesBefore + 1);
  }, 30_000);
});

describe('Local runtime: scheduler.mode "service" (the long-lived scheduler)', () => {
  it('keeps the scheduler running through idle spells; a submit runs without a wake', async () => {
    const service = await startLocalRuntime({
      config: parseConfig({
        pools: { lambda: { concurrency: 4 }, fargate: { vcpu: 1, memoryMiB: 2048 } },
        scheduler: { mode: 'service' },
      }),
      summaryEverySeconds: 0,
      logger: consoleLogger({ quiet: true }),
      // An idle stop this short would stop a Lambda-mode scheduler within a second or two.
      idleStopMs: 500,
      tickSeconds: 1,
    });
    // The same runtime in Lambda mode, started after it: once this one has stopped for want of
    // work, the service, idle for longer with the same settings, must still be running.
    const onDemand = await startLocalRuntime({
      config,
      summaryEverySeconds: 0,
      logger: consoleLogger({ quiet: true }),
      idleStopMs: 500,
      tickSeconds: 1,
    });
    try {
      await until(() => !onDemand.schedulerRunning(), 'the Lambda-mode scheduler stops');
      expect(service.schedulerRunning()).toBe(true);
      const { task } = await service.services.tasks.submit({ tenantId: 's', type: 'demo.echo', payload: {} });
      await until(
        async () => (await service.services.store.get(task.taskId))?.state === 'SUCCEEDED',
        'the task succeeds',
      );
      expect(service.schedulerWakes()).toBe(0);
      expect(service.schedulerRunning()).toBe(true);
    } finally {
      await Promise.all([service.stop(), onDemand.stop()]);
    }
  }, 40_000);
});
