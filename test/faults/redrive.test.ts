/**
 * Operator redrive against fauxqs: worker messages reach the dead-letter queue after
 * `maxReceiveCount` receives without a delete; `move` puts them back (fauxqs has no
 * StartMessageMoveTask: the receive/send/delete fallback), `settle` decides them now.
 */
import {
  type DeleteMessageBatchCommandInput,
  type ReceiveMessageCommandInput,
  SQSClient,
  type StartMessageMoveTaskCommandInput,
} from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { workerQueue } from '../../runtime/infra/resources.ts';
import { redriveDeadLetters } from '../../runtime/ops/redrive.ts';
import { Harness } from './harness.ts';

const SOURCE = workerQueue('lambda');
const DLQ = SOURCE.deadLetter!.id;

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

async function dispatched(h: Harness, maxAttempts: number): Promise<WorkerMessage> {
  const task = await h.submit({
    tenantId: 'tenant-a',
    type: 'test.record',
    payload: { failTimes: 0, permanent: false, ms: 0 },
    maxAttempts,
    idempotencyKey: `k-${Math.random()}`,
  });
  for (let i = 0; i < 50; i++) {
    await h.tick();
    if ((await h.admin.store.get(task.taskId))!.state === 'DISPATCHED') break;
  }
  return { taskId: task.taskId, fence: 1, tenantId: 'tenant-a', type: 'test.record' };
}

/** A worker that keeps crashing: receive without delete until SQS dead-letters the message. */
async function receiveUntilDeadLettered(h: Harness): Promise<number> {
  let receives = 0;
  for (let i = 0; i < 20; i++) {
    const messages = await h.admin.queues.receive(SOURCE.id, { visibilitySeconds: 0 });
    receives += messages.length;
    const dead = await h.admin.queues.attributes(DLQ, ['ApproximateNumberOfMessages']);
    if (Number(dead.ApproximateNumberOfMessages) > 0) return receives;
  }
  throw new Error('the message never reached the dead-letter queue');
}

const options = (h: Harness) => ({
  sqs: h.emulators.clients.sqs,
  queueUrls: h.emulators.queueUrls,
  store: h.admin.store,
  queues: h.admin.queues,
  config: h.config,
  now: h.clock.now,
  queueIds: [SOURCE.id],
});

describe('operator redrive of dead-letter queues', () => {
  it('move: falls back to receive/send/delete where StartMessageMoveTask is missing', async () => {
    harness = await Harness.start();
    const h = harness;
    const message = await dispatched(h, 3);
    expect(await receiveUntilDeadLettered(h)).toBe(SOURCE.deadLetter!.maxReceiveCount);

    const report = await redriveDeadLetters({ ...options(h), mode: 'move' });
    expect(report.queues).toEqual([
      { sourceQueueId: SOURCE.id, deadLetterQueueId: DLQ, method: 'receive-send-delete', moved: 1, errors: 0 },
    ]);
    const back = await h.admin.queues.receive<WorkerMessage>(SOURCE.id);
    expect(back.map((m) => [m.body.taskId, m.body.fence])).toEqual([[message.taskId, message.fence]]);
    expect((await h.admin.queues.attributes(DLQ, ['ApproximateNumberOfMessages'])).ApproximateNumberOfMessages).toBe(
      '0',
    );
    // Moved back, the attempt still runs once: attempts are counted in DynamoDB, not by receives.
    expect((await h.admin.store.get(message.taskId))!).toMatchObject({ state: 'DISPATCHED', attempts: 0 });
  });

  it('settle: a current dead letter becomes a retry, or FAILED with the last error; a stale one is dropped', async () => {
    harness = await Harness.start();
    const h = harness;
    const retried = await dispatched(h, 3);
    const final = await dispatched(h, 1);
    await receiveUntilDeadLettered(h);
    await receiveUntilDeadLettered(h);
    // A dead letter of an attempt that is long over (an older fence).
    await h.admin.queues.sendBatch(DLQ, [{ Id: '0', MessageBody: JSON.stringify({ ...retried, fence: 0 }) }]);

    const report = await redriveDeadLetters({ ...options(h), mode: 'settle' });
    expect(report.queues[0]).toMatchObject({
      method: 'settle',
      settled: { retried: 1, failed: 1, cancelled: 0, stale: 1 },
      errors: 0,
    });
    expect((await h.admin.store.get(retried.taskId))!).toMatchObject({
      state: 'QUEUED',
      attempts: 1,
      error: { name: 'DeadLettered' },
    });
    expect((await h.admin.store.get(final.taskId))!).toMatchObject({
      state: 'FAILED',
      attempts: 1,
      error: { name: 'DeadLettered' },
    });
    // Settling twice changes nothing: the queue is empty, and the transition is fenced anyway.
    const again = await redriveDeadLetters({ ...options(h), mode: 'settle' });
    expect(again.queues[0]!.settled).toEqual({ retried: 0, failed: 0, cancelled: 0, stale: 0 });
  });

  it('settle: a short poll answering empty does not end the drain (SQS samples some servers on a short poll)', async () => {
    harness = await Harness.start();
    const h = harness;
    const message = await dispatched(h, 3);
    await receiveUntilDeadLettered(h);
    const sqs = new SQSClient({
      region: 'us-east-1',
      endpoint: h.emulators.sqsUrl,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    // AWS: a short poll (WaitTimeSeconds 0) queries a subset of the servers and may answer empty
    // while messages wait; a long poll queries all of them. Answer every short poll as the
    // unlucky sample would; long polls go to fauxqs.
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as ReceiveMessageCommandInput;
        if (context.commandName === 'ReceiveMessageCommand' && !(input.WaitTimeSeconds ?? 0)) {
          return { output: { Messages: [], $metadata: {} }, response: {} };
        }
        return next(args);
      },
      { step: 'initialize', name: 'shortPollSamplesNothing' },
    );
    try {
      const report = await redriveDeadLetters({ ...options(h), sqs, mode: 'settle' });
      expect(report.queues[0]).toMatchObject({ method: 'settle', settled: { retried: 1 }, errors: 0 });
      expect((await h.admin.store.get(message.taskId))!).toMatchObject({ state: 'QUEUED', attempts: 1 });
    } finally {
      sqs.destroy();
    }
  });

  it('settle: a dead letter SQS would not delete is reported as an error (it stays, to be seen again)', async () => {
    harness = await Harness.start();
    const h = harness;
    await dispatched(h, 3);
    await receiveUntilDeadLettered(h);
    const sqs = new SQSClient({
      region: 'us-east-1',
      endpoint: h.emulators.sqsUrl,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    // AWS answers a batch delete entry by entry: here every entry failed on SQS's side.
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'DeleteMessageBatchCommand') return next(args);
        const { Entries = [] } = args.input as DeleteMessageBatchCommandInput;
        const Failed = Entries.map(({ Id }) => ({
          Id,
          Code: 'InternalError',
          SenderFault: false,
          Message: 'try again',
        }));
        return { output: { Successful: [], Failed, $metadata: {} }, response: {} };
      },
      { step: 'initialize', name: 'deleteFails' },
    );
    try {
      const report = await redriveDeadLetters({ ...options(h), sqs, mode: 'settle' });
      expect(report.queues[0]).toMatchObject({ method: 'settle', settled: { retried: 1 }, errors: 1 });
      const dead = await h.admin.queues.attributes(DLQ, ['ApproximateNumberOfMessagesNotVisible']);
      expect(dead.ApproximateNumberOfMessagesNotVisible).toBe('1');
    } finally {
      sqs.destroy();
    }
  });

  it('move: uses StartMessageMoveTask (DLQ → source) where SQS has it', async () => {
    harness = await Harness.start();
    const h = harness;
    const sqs = new SQSClient({
      region: 'us-east-1',
      endpoint: h.emulators.sqsUrl,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const moves: StartMessageMoveTaskCommandInput[] = [];
    // Answer the call as AWS would; everything else goes to fauxqs.
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'StartMessageMoveTaskCommand') return next(args);
        moves.push(args.input as StartMessageMoveTaskCommandInput);
        return { output: { TaskHandle: 'task-handle-1', $metadata: {} }, response: {} };
      },
      { step: 'initialize', name: 'fakeMessageMove' },
    );
    try {
      const report = await redriveDeadLetters({ ...options(h), sqs, mode: 'move' });
      expect(report.queues[0]).toMatchObject({ method: 'message-move-task', taskHandle: 'task-handle-1' });
      expect(moves).toHaveLength(1);
      expect(moves[0]!.SourceArn).toMatch(/:worker-lambda-dlq$/);
      expect(moves[0]!.DestinationArn).toMatch(/:worker-lambda$/);
    } finally {
      sqs.destroy();
    }
  });
});
