import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TierMessage, WorkerMessage } from '../../runtime/adapters/queues.ts';
import { createTask } from '../../runtime/core/lifecycle.ts';
import { taskSpec } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;

beforeAll(async () => {
  services = await startTestServices();
});
afterAll(async () => {
  await services.stop();
});

const task = (id: string, priority: 'critical' | 'low', runAt?: Date) =>
  createTask(id, taskSpec({ priority, ...(runAt ? { runAt } : {}) }), new Date());

describe('Class: QueueClient (against fauxqs)', () => {
  it('announces each task on its own tier queue, in batches beyond ten', async () => {
    // Prepare
    const tasks = [...Array.from({ length: 12 }, (_, i) => task(`c${i}`, 'critical')), task('l0', 'low')];

    // Act
    await services.queues.announce(tasks, new Date());
    const critical: string[] = [];
    for (let round = 0; round < 5 && critical.length < 12; round++) {
      const got = await services.queues.receive<TierMessage>('tier-critical', { waitSeconds: 1 });
      critical.push(...got.map((m) => m.body.taskId));
      await services.queues.delete(
        'tier-critical',
        got.map((m) => m.receiptHandle),
      );
    }
    const low = await services.queues.receive<TierMessage>('tier-low', { waitSeconds: 1 });

    // Assess
    expect(critical.sort()).toEqual(
      tasks
        .slice(0, 12)
        .map((t) => t.taskId)
        .sort(),
    );
    expect(low.map((m) => m.body)).toEqual([
      expect.objectContaining({ taskId: 'l0', tenantId: 'acme', priority: 'low' }),
    ]);
  });

  it('delays the message of a task that runs later', async () => {
    await services.queues.announce([task('later', 'low', new Date(Date.now() + 2_000))], new Date());
    expect(await services.queues.receive('tier-low', { waitSeconds: 0 })).toEqual([]);
    const got = await services.queues.receive<TierMessage>('tier-low', { waitSeconds: 5 });
    expect(got.map((m) => m.body.taskId)).toEqual(['later']);
    await services.queues.delete(
      'tier-low',
      got.map((m) => m.receiptHandle),
    );
  });

  it('sends a task too large to ride in its worker message by key, with what it asked for (its memory class)', async () => {
    // Prepare: a task whose payload takes the message past the 32 KB it may embed.
    const big = { ...task('big-payload', 'low'), payload: { blob: 'x'.repeat(40_000) } };
    const small = task('small-payload', 'low');

    // Act
    await services.queues.sendToWorkers('fargate', [
      { taskId: big.taskId, fence: big.fence, tenantId: big.tenantId, type: big.type, task: big },
      { taskId: small.taskId, fence: small.fence, tenantId: small.tenantId, type: small.type, task: small },
    ]);
    const got: WorkerMessage[] = [];
    for (let round = 0; round < 5 && got.length < 2; round++) {
      const received = await services.queues.receive<WorkerMessage>('worker-fargate', { waitSeconds: 1 });
      got.push(...received.map((m) => m.body));
      await services.queues.delete(
        'worker-fargate',
        received.map((m) => m.receiptHandle),
      );
    }

    // Assess
    const byId = new Map(got.map((m) => [m.taskId, m]));
    expect(byId.get(big.taskId)).toEqual({
      taskId: big.taskId,
      fence: big.fence,
      tenantId: big.tenantId,
      type: big.type,
      resources: big.resources,
    });
    expect(byId.get(small.taskId)?.task?.taskId).toBe(small.taskId);
  });

  it('moves a worker message to its dead-letter queue after maxReceiveCount receives', async () => {
    // Prepare
    const message: WorkerMessage = { taskId: 'poison', fence: 1, tenantId: 'acme', type: 'demo.echo' };
    await services.queues.sendToWorkers('fargate', [message]);

    // Act: receive and never delete, as a crashing worker would (maxReceiveCount is 5).
    for (let i = 0; i < 5; i++) {
      const got = await services.queues.receive('worker-fargate', { waitSeconds: 1, visibilitySeconds: 0 });
      expect(got).toHaveLength(1);
    }
    await services.queues.receive('worker-fargate', { waitSeconds: 0, visibilitySeconds: 0 });
    const dead = await services.queues.receive<WorkerMessage>('worker-fargate-dlq', { waitSeconds: 2 });

    // Assess
    expect(dead.map((m) => m.body)).toEqual([message]);
  });
});
