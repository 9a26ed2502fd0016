/**
 * Stopping a queue worker while its long poll is out. SQS may already have handed a message to
 * that poll: an abort strands it, hidden for its visibility (60 s and more on a worker queue; the
 * fauxqs emulator kept such a ghost poll taking the next test's message, every run). So stop()
 * lets the poll end and hands what it brought back at once.
 */
import { describe, expect, it } from 'vitest';
import type { QueueClient, ReceivedMessage, WorkerMessage } from '../../runtime/adapters/queues.ts';
import { QueueWorker } from '../../runtime/worker/queue-worker.ts';

describe('Class: QueueWorker, stop()', () => {
  it('does not abort a long poll under way; what it brings comes back to the queue at once, nothing is run', async () => {
    // Prepare: the first poll brings a message 50 ms after stop() is called
    let aborted = false;
    let polls = 0;
    let release: (() => void) | undefined;
    const handedBack: { handles: readonly string[]; seconds: number }[] = [];
    const message: ReceivedMessage<WorkerMessage> = {
      body: { taskId: 'tsk_1', fence: 1, tenantId: 'a', type: 'demo.echo' },
      receiptHandle: 'rh-1',
      receiveCount: 1,
    } as ReceivedMessage<WorkerMessage>;
    const queues = {
      async receive(_queueId: string, options: { abortSignal?: AbortSignal }) {
        polls++;
        options.abortSignal?.addEventListener('abort', () => {
          aborted = true;
        });
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return [message];
      },
      async changeVisibility(_queueId: string, handles: readonly string[], seconds: number) {
        handedBack.push({ handles, seconds });
      },
      async delete() {
        return [];
      },
      async reportCompletions() {},
    } as unknown as QueueClient;
    let ran = 0;
    const worker = new QueueWorker({
      queues,
      queueId: 'worker-fargate',
      maxConcurrent: 2,
      waitSeconds: 20,
      attempt: {} as never,
      run: async () => {
        ran++;
        return undefined;
      },
    });
    worker.start();
    await new Promise((resolve) => setTimeout(resolve, 10));

    // Act
    const stopped = worker.stop();
    await new Promise((resolve) => setTimeout(resolve, 50));
    release?.();
    await stopped;

    // Assess
    expect(polls).toBe(1);
    expect(aborted).toBe(false);
    expect(ran).toBe(0);
    expect(handedBack).toEqual([{ handles: ['rh-1'], seconds: 0 }]);
  });
});
