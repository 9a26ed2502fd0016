import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDeadLetterConsumer } from '../../local/dead-letter-consumer.ts';
import { dispatch } from '../../runtime/core/lifecycle.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
beforeAll(async () => {
  services = await startTestServices();
});
afterAll(async () => {
  await services.stop();
});

describe('Function: startDeadLetterConsumer', () => {
  it('settles a dead-lettered current attempt as the redrive Lambda would', async () => {
    // Prepare: a dispatched attempt whose worker message ended in the dead-letter queue.
    const { task } = await services.tasks.submit({ tenantId: 'dlq', type: 'demo.echo', maxAttempts: 1 });
    const dispatched = await services.store.apply(dispatch(task, new Date(), 60));
    const message = { taskId: task.taskId, fence: dispatched.fence, tenantId: 'dlq', type: 'demo.echo' };
    await services.queues.sendBatch('worker-lambda-dlq', [{ Id: '0', MessageBody: JSON.stringify(message) }]);
    const logs: string[] = [];

    // Act
    const consumer = startDeadLetterConsumer({
      store: services.store,
      queues: services.queues,
      config: services.config,
      logger: { info: () => {}, warn: (m) => logs.push(m), error: () => {} },
    });
    const deadline = Date.now() + 10_000;
    while ((await services.store.get(task.taskId))?.state === 'DISPATCHED' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await consumer.stop();

    // Assess: its only attempt is used up, so it fails with the dead-letter error; the DLQ is empty.
    expect(await services.store.get(task.taskId)).toMatchObject({
      state: 'FAILED',
      attempts: 1,
      error: { name: 'DeadLettered' },
    });
    expect(logs).toContain('dead letter settled: task FAILED');
    expect(await services.queues.receive('worker-lambda-dlq', { waitSeconds: 0 })).toEqual([]);
  });
});
