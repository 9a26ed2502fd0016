import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startDeadLetterConsumer } from '../../local/dead-letter-consumer.ts';
import { dispatch, start } from '../../runtime/core/lifecycle.ts';
import { DRAINED_DEAD_LETTER_QUEUES, drainDeadLetters, redriveDeadLetter } from '../../runtime/worker/redrive.ts';
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

describe('Function: redriveDeadLetter', () => {
  it('backs a dead-lettered RUNNING attempt off as a failed attempt n: random(0, base · 2^(n−1))', async () => {
    // Before: the retry of a RUNNING attempt 1 was backed off as attempt 2's (a ceiling of
    // base · 2, twice the documented one); a DISPATCHED one, counted on dead-lettering, was right.
    const { task } = await services.tasks.submit({ tenantId: 'dlq-backoff', type: 'demo.echo', maxAttempts: 3 });
    const dispatched = await services.store.apply(dispatch(task, new Date(), 60));
    const running = await services.store.apply(start(dispatched, dispatched.fence, new Date(), 60));
    const at = new Date();
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.999);
    let retried: Awaited<ReturnType<typeof redriveDeadLetter>>;
    try {
      retried = await redriveDeadLetter(
        { store: services.store, queues: services.queues, config: services.config, now: () => at },
        { taskId: task.taskId, fence: running.fence, tenantId: 'dlq-backoff', type: 'demo.echo' },
      );
    } finally {
      random.mockRestore();
    }
    const { baseDelaySeconds, maxDelaySeconds } = services.config.retry;
    expect(retried).toMatchObject({ state: 'QUEUED', attempts: 1, error: { name: 'DeadLettered' } });
    expect(Date.parse(retried!.runAt) - at.getTime()).toBe(
      Math.floor(0.999 * Math.min(maxDelaySeconds, baseDelaySeconds) * 1000),
    );
  });
});

describe('Function: drainDeadLetters (the scheduled redrive Lambda)', () => {
  // Its own queues: the consumer above, once stopped, can leave long polls open on the emulator
  // that would still take messages sent here.
  let drain: TestServices;
  beforeAll(async () => {
    drain = await startTestServices();
  });
  afterAll(async () => {
    await drain.stop();
  });

  it('settles worker dead letters and announces tier ones again, emptying every dead-letter queue', async () => {
    // Prepare: a dispatched attempt dead-lettered from its worker queue, and a QUEUED task whose
    // tier message was dead-lettered.
    const { task: worker } = await drain.tasks.submit({ tenantId: 'drain', type: 'demo.echo', maxAttempts: 1 });
    const dispatched = await drain.store.apply(dispatch(worker, new Date(), 60));
    const { task: waiting } = await drain.tasks.submit({ tenantId: 'drain', type: 'demo.echo', priority: 'low' });
    await takeAll('tier-low'); // the submit's own announcement: only the redrive's counts below
    await drain.queues.sendBatch('worker-lambda-dlq', [
      {
        Id: '0',
        MessageBody: JSON.stringify({ taskId: worker.taskId, fence: dispatched.fence, tenantId: 'drain', type: 'x' }),
      },
    ]);
    await drain.queues.sendBatch('tier-low-dlq', [
      { Id: '0', MessageBody: JSON.stringify({ taskId: waiting.taskId, tenantId: 'drain', priority: 'low' }) },
    ]);
    const received: string[] = [];

    // Act
    const report = await drainDeadLetters(drain, {
      onReceived: (queueId, count) => received.push(`${queueId}:${count}`),
    });

    // Assess: the attempt's only try is used up (FAILED); the waiting task is announced again.
    expect(report).toEqual({ received: 2, outcomes: { failed: 1, announced: 1 }, errors: 0 });
    expect(received.sort()).toEqual(['tier-low-dlq:1', 'worker-lambda-dlq:1']);
    expect(await drain.store.get(worker.taskId)).toMatchObject({ state: 'FAILED', error: { name: 'DeadLettered' } });
    expect(await takeAll('tier-low')).toEqual([waiting.taskId]);
    for (const queueId of DRAINED_DEAD_LETTER_QUEUES) {
      expect(await drain.queues.receive(queueId, { waitSeconds: 0 }), queueId).toEqual([]);
    }
  });

  it('leaves a dead letter whose handling failed in its queue, and the next drain handles it', async () => {
    // Prepare: a dead letter, and a store that cannot be read during the first drain.
    const { task } = await drain.tasks.submit({ tenantId: 'drain-fail', type: 'demo.echo' });
    await drain.queues.sendBatch('worker-fargate-dlq', [
      { Id: '0', MessageBody: JSON.stringify({ taskId: task.taskId, fence: 7, tenantId: 'drain-fail', type: 'x' }) },
    ]);
    const unreachable = Object.create(drain.store, {
      get: { value: () => Promise.reject(new Error('DynamoDB unreachable')) },
    }) as typeof drain.store;
    const warnings: string[] = [];
    const options = { queueIds: ['worker-fargate-dlq'], visibilitySeconds: 1 };

    // Act: one drain that fails, one after the dead letter's visibility lapsed.
    const failed = await drainDeadLetters(
      { ...drain, store: unreachable },
      { ...options, logger: { info() {}, warn: (message) => warnings.push(message), error() {} } },
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const next = await drainDeadLetters(drain, options);

    // Assess: not deleted the first time; the second drain finds it stale (fence 7 never ran) and drops it.
    expect(failed).toEqual({ received: 1, outcomes: {}, errors: 1 });
    expect(warnings).toEqual(['dead letter not handled; left for the next drain']);
    expect(next).toEqual({ received: 1, outcomes: { stale: 1 }, errors: 0 });
    expect(await drain.queues.receive('worker-fargate-dlq', { waitSeconds: 0 })).toEqual([]);
  });

  /** Receive and delete what a queue holds now; the task ids. */
  async function takeAll(queueId: string): Promise<string[]> {
    const messages = await drain.queues.receive<{ taskId: string }>(queueId, { waitSeconds: 0 });
    await drain.queues.delete(
      queueId,
      messages.map((message) => message.receiptHandle),
    );
    return messages.map((message) => message.body.taskId);
  }
});
