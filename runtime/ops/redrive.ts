/**
 * Operator redrive of the dead-letter queues (`tasks redrive`).
 *
 * - `move`: put dead letters back on their source queue. On AWS this is one
 *   `StartMessageMoveTask` per dead-letter queue (SQS moves them, ≤ 500 msg/s, with new
 *   message ids); where that API is missing (fauxqs, some emulators) it falls back to
 *   receive → send to the source → delete, in batches of 10. Moving back is safe: a worker
 *   message whose attempt is no longer current is skipped by its fence, and a tier message for
 *   a task that is no longer QUEUED is dropped.
 * - `settle`: decide each worker dead letter now, through the same transition as the redrive
 *   Lambda (`redriveDeadLetter`): a retry (back to QUEUED with backoff) or a final FAILED with
 *   the last error, from the attempts counted in DynamoDB. Tier dead letters are moved back.
 */
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import type { QueueClient, WorkerMessage } from '../adapters/queues.ts';
import type { TaskStore } from '../adapters/task-store.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { type QueueDefinition, queuesFor, WORKER_QUEUES } from '../infra/resources.ts';
import { redriveDeadLetter } from '../worker/redrive.ts';

export type RedriveMode = 'move' | 'settle';

export interface RedriveOptions {
  readonly sqs: SQSClient;
  /** Queue URLs by queue id (the QUEUE_URLS map the stack sets, or the emulators'). */
  readonly queueUrls: Readonly<Record<string, string>>;
  readonly mode: RedriveMode;
  /** Source queue ids whose dead-letter queues to redrive; default every queue that has one. */
  readonly queueIds?: readonly string[] | undefined;
  /** The queues of the types the user's own code runs (TASK_TYPE_QUEUES): worker queues too. */
  readonly typeQueues?: readonly QueueDefinition[] | undefined;
  /** Needed by `settle`. */
  readonly store?: TaskStore | undefined;
  readonly queues?: QueueClient | undefined;
  readonly config?: SchedulerConfig | undefined;
  readonly now?: (() => Date) | undefined;
  /** `move` on AWS: SQS's rate limit for the move task (default: SQS's own, up to 500/s). */
  readonly maxMessagesPerSecond?: number;
  /** Stop after this many messages per queue (fallback and settle paths). */
  readonly limit?: number | undefined;
}

export interface QueueRedrive {
  readonly sourceQueueId: string;
  readonly deadLetterQueueId: string;
  readonly method: 'message-move-task' | 'receive-send-delete' | 'settle';
  /** Messages moved back (fallback) or handed to SQS (move task: counted by SQS, see taskHandle). */
  readonly moved: number;
  readonly taskHandle?: string | undefined;
  /** `settle`: outcome counts. */
  readonly settled?: {
    readonly retried: number;
    readonly failed: number;
    readonly cancelled: number;
    readonly stale: number;
  };
  /**
   * Messages left in the dead-letter queue because handling them failed, or SQS did not delete
   * them once handled (seen again next run).
   */
  readonly errors: number;
}

export interface RedriveReport {
  readonly mode: RedriveMode;
  readonly queues: QueueRedrive[];
}

export async function redriveDeadLetters(options: RedriveOptions): Promise<RedriveReport> {
  const wanted = options.queueIds ? new Set(options.queueIds) : undefined;
  const typeQueues = options.typeQueues ?? [];
  const redrivable = [...queuesFor(options.config?.scheduler.shards ?? 1), ...typeQueues].filter(
    (queue) => queue.deadLetter,
  );
  const sources = redrivable.filter((queue) => !wanted || wanted.has(queue.id));
  if (wanted) {
    const unknown = [...wanted].filter((id) => !sources.some((queue) => queue.id === id));
    if (unknown.length > 0) {
      // A dead-letter queue's own id (worker-lambda-dlq) is the likely mistake: say what is taken.
      throw new Error(
        `No dead-letter queue for: ${unknown.join(', ')} (--queues takes source queue ids: ${redrivable.map((queue) => queue.id).join(', ')})`,
      );
    }
  }
  const workerIds = new Set([...WORKER_QUEUES, ...typeQueues].map((queue) => queue.id));
  const report: QueueRedrive[] = [];
  for (const source of sources) {
    if (options.mode === 'settle' && workerIds.has(source.id)) report.push(await settleQueue(options, source));
    else report.push(await moveQueue(options, source));
  }
  return { mode: options.mode, queues: report };
}

function urlOf(options: RedriveOptions, queueId: string): string {
  const url = options.queueUrls[queueId];
  if (!url) throw new Error(`No URL for queue "${queueId}"`);
  return url;
}

async function arnOf(sqs: SQSClient, url: string): Promise<string> {
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  if (!Attributes?.QueueArn) throw new Error(`Queue ${url} reports no ARN`);
  return Attributes.QueueArn;
}

/** The API does not exist here (emulators answer with an unknown-action error). */
export function isUnsupported(error: unknown): boolean {
  const name = (error as { name?: string })?.name ?? '';
  const message = (error as { message?: string })?.message ?? '';
  return (
    ['InvalidAction', 'UnsupportedOperation', 'UnknownOperationException', 'NotImplemented'].includes(name) ||
    /unknown action|not (supported|implemented)/i.test(message)
  );
}

async function moveQueue(options: RedriveOptions, source: QueueDefinition): Promise<QueueRedrive> {
  const { sqs } = options;
  const deadLetterQueueId = source.deadLetter!.id;
  const dlqUrl = urlOf(options, deadLetterQueueId);
  const sourceUrl = urlOf(options, source.id);
  try {
    const [dlqArn, sourceArn] = await Promise.all([arnOf(sqs, dlqUrl), arnOf(sqs, sourceUrl)]);
    const { TaskHandle } = await sqs.send(
      new StartMessageMoveTaskCommand({
        SourceArn: dlqArn,
        DestinationArn: sourceArn,
        ...(options.maxMessagesPerSecond ? { MaxNumberOfMessagesPerSecond: options.maxMessagesPerSecond } : {}),
      }),
    );
    return {
      sourceQueueId: source.id,
      deadLetterQueueId,
      method: 'message-move-task',
      moved: 0,
      taskHandle: TaskHandle,
      errors: 0,
    };
  } catch (error) {
    if (!isUnsupported(error)) throw error;
  }
  let moved = 0;
  let errors = 0;
  // Moved but not deleted: moved again by the next run (a duplicate the fence skips).
  errors += await drain(options, dlqUrl, async (messages) => {
    const response = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: sourceUrl,
        Entries: messages.map((message, i) => ({
          Id: String(i),
          MessageBody: message.Body!,
          MessageAttributes: message.MessageAttributes,
        })),
      }),
    );
    // Delete only what the source accepted; the rest stays dead-lettered for the next run.
    const sent = new Set((response.Successful ?? []).map((entry) => Number(entry.Id)));
    moved += sent.size;
    errors += messages.length - sent.size;
    return messages.filter((_, i) => sent.has(i));
  });
  return { sourceQueueId: source.id, deadLetterQueueId, method: 'receive-send-delete', moved, errors };
}

async function settleQueue(options: RedriveOptions, source: QueueDefinition): Promise<QueueRedrive> {
  const { store, queues, config } = options;
  if (!store || !queues || !config) throw new Error('redrive mode "settle" needs store, queues and config');
  const deadLetterQueueId = source.deadLetter!.id;
  const counts = { retried: 0, failed: 0, cancelled: 0, stale: 0 };
  let errors = 0;
  // Settled but not deleted: found stale and dropped by the next run.
  errors += await drain(options, urlOf(options, deadLetterQueueId), async (messages) => {
    const done: Message[] = [];
    for (const message of messages) {
      let body: WorkerMessage;
      try {
        body = JSON.parse(message.Body ?? '') as WorkerMessage;
      } catch {
        counts.stale++; // not a worker message: nothing to settle, drop it
        done.push(message);
        continue;
      }
      try {
        const task = await redriveDeadLetter({ store, queues, config, now: options.now }, body);
        if (!task) counts.stale++;
        else if (task.state === 'QUEUED') counts.retried++;
        else if (task.state === 'FAILED') counts.failed++;
        else counts.cancelled++;
        done.push(message);
      } catch {
        errors++;
      }
    }
    return done;
  });
  return { sourceQueueId: source.id, deadLetterQueueId, method: 'settle', moved: 0, settled: counts, errors };
}

/**
 * Receive the dead-letter queue in batches until it is empty (or `limit`); `handle` returns
 * the messages to delete. A message received once by this run is not received again (it is
 * hidden for the run), so a message that cannot be handled does not loop. Long polls of 1 s, as
 * the redrive Lambda's drain: a short poll samples only some SQS servers and can answer empty
 * while messages wait, which would end the run early. Returns how many handled messages SQS did
 * not delete (a batch delete answers entry by entry): they stay, and are seen again next run.
 */
async function drain(
  options: RedriveOptions,
  url: string,
  handle: (messages: Message[]) => Promise<Message[]>,
): Promise<number> {
  let notDeleted = 0;
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  for (let seen = 0; seen < limit; ) {
    const { Messages } = await options.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: Math.min(10, limit - seen),
        WaitTimeSeconds: 1,
        VisibilityTimeout: 300,
        MessageAttributeNames: ['All'],
      }),
    );
    const messages = (Messages ?? []).filter((m) => m.Body !== undefined && m.ReceiptHandle);
    if (messages.length === 0) return notDeleted;
    seen += messages.length;
    const done = await handle(messages);
    if (done.length > 0) {
      const { Failed = [] } = await options.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: url,
          Entries: done.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle! })),
        }),
      );
      notDeleted += Failed.length;
    }
  }
  return notDeleted;
}
