import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dispatch } from '../../runtime/core/lifecycle.ts';
import { QueueWorker } from '../../runtime/worker/queue-worker.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
beforeAll(async () => {
  services = await startTestServices();
});
afterAll(async () => {
  await services.stop();
});

describe('Class: QueueWorker (against the emulators)', () => {
  it('runs what it receives, deletes settled messages, and reports busy then idle once', async () => {
    // Prepare: three dispatched attempts waiting on the Fargate worker queue.
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { task } = await services.tasks.submit({ tenantId: 'qw', type: 'demo.sleep', payload: { ms: 200 } });
      const dispatched = await services.store.apply(dispatch(task, new Date(), 60));
      await services.queues.sendToWorkers('fargate', [
        { taskId: task.taskId, fence: dispatched.fence, tenantId: 'qw', type: 'demo.sleep' },
      ]);
      ids.push(task.taskId);
    }
    const busy: boolean[] = [];
    const worker = new QueueWorker({
      queues: services.queues,
      queueId: 'worker-fargate',
      maxConcurrent: 4,
      waitSeconds: 1,
      attempt: { store: services.store, queues: services.queues, registry: services.registry, config: services.config },
      onBusyChange: (value) => busy.push(value),
    });

    // Act
    worker.start();
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const tasks = await services.store.getMany(ids);
      if ([...tasks.values()].every((t) => t.state === 'SUCCEEDED')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await worker.stop();

    // Assess
    expect([...(await services.store.getMany(ids)).values()].map((t) => t.state)).toEqual([
      'SUCCEEDED',
      'SUCCEEDED',
      'SUCCEEDED',
    ]);
    expect(busy[0]).toBe(true);
    expect(busy.at(-1)).toBe(false);
    expect(await services.queues.receive('worker-fargate', { waitSeconds: 0, visibilitySeconds: 0 })).toEqual([]);
  });

  it('deletes settled messages and reports completions ten to a call, and flushes the rest when stopped', async () => {
    // Prepare: 13 dispatched attempts; a delete delay too long to fire, so only a full batch of
    // ten or stop() can trigger a delete. On the other pool's queue: the first test's last
    // long poll, aborted client-side, may still take a message on the fauxqs side.
    const ids: string[] = [];
    for (let i = 0; i < 13; i++) {
      const { task } = await services.tasks.submit({ tenantId: 'qw-batch', type: 'demo.echo', payload: { i } });
      const dispatched = await services.store.apply(dispatch(task, new Date(), 60));
      await services.queues.sendToWorkers('lambda', [
        { taskId: task.taskId, fence: dispatched.fence, tenantId: 'qw-batch', type: 'demo.echo' },
      ]);
      ids.push(task.taskId);
    }
    const deletes = vi.spyOn(services.queues, 'delete');
    const reports = vi.spyOn(services.queues, 'reportCompletions');
    const worker = new QueueWorker({
      queues: services.queues,
      queueId: 'worker-lambda',
      maxConcurrent: 13,
      waitSeconds: 1,
      batchDelayMs: 600_000,
      attempt: { store: services.store, queues: services.queues, registry: services.registry, config: services.config },
    });

    // Act
    worker.start();
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const tasks = await services.store.getMany(ids);
      if ([...tasks.values()].every((t) => t.state === 'SUCCEEDED')) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const beforeStop = deletes.mock.calls.map(([, handles]) => handles.length);
    const reportsBeforeStop = reports.mock.calls.map(([batch]) => batch.length);
    await worker.stop();

    // Assess: one full batch while running, the remaining three at stop, nothing left queued;
    // the completion reports go the same way.
    expect(beforeStop).toEqual([10]);
    expect(deletes.mock.calls.map(([, handles]) => handles.length)).toEqual([10, 3]);
    expect(reportsBeforeStop).toEqual([10]);
    expect(reports.mock.calls.map(([batch]) => batch.length)).toEqual([10, 3]);
    expect(new Set(reports.mock.calls.flatMap(([batch]) => batch.map((r) => r.taskId)))).toEqual(new Set(ids));
    expect(await services.queues.receive('worker-lambda', { waitSeconds: 0, visibilitySeconds: 0 })).toEqual([]);
    deletes.mockRestore();
    reports.mockRestore();
  });

  it("counts a batch member's end itself when its completion report cannot be sent", async () => {
    // Prepare: a batch member dispatched to the Fargate queue; SQS refuses the reports. Emulators
    // of its own: an earlier test's long poll, aborted client-side, may still take a message on
    // the fauxqs side of the shared ones (it took this test's, every run, once main moved).
    const services = await startTestServices();
    const { batchId, results } = await services.batches.submit({
      tasks: [0, 1].map((i) => ({ tenantId: 'qw-bulk', type: 'demo.echo', payload: { i } })),
    });
    const taskId = (results[0] as { taskId: string }).taskId;
    const dispatched = await services.store.transition(taskId, (task) => dispatch(task, new Date(), 60));
    await services.queues.sendToWorkers('fargate', [
      { taskId, fence: dispatched.fence, tenantId: 'qw-bulk', type: 'demo.echo' },
    ]);
    const reports = vi.spyOn(services.queues, 'reportCompletions').mockRejectedValue(new Error('SQS unavailable'));
    const worker = new QueueWorker({
      queues: services.queues,
      queueId: 'worker-fargate',
      maxConcurrent: 1,
      waitSeconds: 1,
      attempt: { store: services.store, queues: services.queues, registry: services.registry, config: services.config },
    });

    // Act
    worker.start();
    let counts = (await services.batches.describe(batchId))?.counts;
    for (const deadline = Date.now() + 15_000; Date.now() < deadline && counts?.succeeded !== 1; ) {
      if ((await services.store.get(taskId))?.state === 'SUCCEEDED') await worker.stop();
      await new Promise((resolve) => setTimeout(resolve, 100));
      counts = (await services.batches.describe(batchId))?.counts;
    }
    await worker.stop();
    const reportCalls = reports.mock.calls.length;
    reports.mockRestore();

    await services.stop();

    // Assess
    expect(reportCalls).toBeGreaterThan(0);
    expect(counts).toMatchObject({ succeeded: 1, pending: 1 });
  });
});
