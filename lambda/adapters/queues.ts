/**
 * SQS messaging. Queue ids come from lambda/infra/resources.ts; URLs are resolved once (from
 * the QUEUE_URLS environment on AWS, from the emulator locally). Every call batches (10 a
 * request, the SQS maximum) because SQS bills per request.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  type QueueAttributeName,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { PriorityTier, Runtime, Task, TaskState } from '../core/task.ts';
import { COMPLETIONS_QUEUE, tierQueue, workerQueue } from '../infra/resources.ts';

/** A waiting task announced to the scheduler on its tier queue. */
export interface TierMessage {
  readonly taskId: string;
  readonly tenantId: string;
  readonly priority: PriorityTier;
}

/** A dispatched attempt handed to a worker pool. `fence` identifies the attempt. */
export interface WorkerMessage {
  readonly taskId: string;
  readonly fence: number;
  readonly tenantId: string;
  readonly type: string;
  /**
   * The task as the dispatch wrote it, so the worker's start write needs no read first (if it is
   * stale the conditional write fails, and the store reads the current item and decides again).
   */
  readonly task?: Task;
}

/** A worker's report that an attempt ended, so the scheduler frees its capacity at once. */
export interface CompletionMessage {
  readonly taskId: string;
  readonly fence: number;
  readonly tenantId: string;
  readonly state: TaskState;
}

export interface ReceivedMessage<T> {
  readonly body: T;
  readonly receiptHandle: string;
  readonly messageId: string;
  readonly receiveCount: number;
}

/** SQS caps DelaySeconds at 15 minutes; longer waits are re-announced by the scheduler. */
export const MAX_DELAY_SECONDS = 900;

export class QueueClient {
  readonly #sqs: SQSClient;
  readonly #urls: Readonly<Record<string, string>>;

  constructor(sqs: SQSClient, urls: Readonly<Record<string, string>>) {
    this.#sqs = sqs;
    this.#urls = urls;
  }

  urlOf(queueId: string): string {
    const url = this.#urls[queueId];
    if (!url)
      throw new Error(`No URL configured for queue "${queueId}" (known: ${Object.keys(this.#urls).join(', ')})`);
    return url;
  }

  /** Announce waiting tasks on their tier queues, delayed until `runAt` where possible. */
  async announce(tasks: readonly Task[], now: Date): Promise<void> {
    const byTier = new Map<PriorityTier, SendMessageBatchRequestEntry[]>();
    for (const task of tasks) {
      const delay = Math.ceil((Date.parse(task.runAt) - now.getTime()) / 1000);
      const body: TierMessage = { taskId: task.taskId, tenantId: task.tenantId, priority: task.priority };
      const entries = byTier.get(task.priority) ?? [];
      entries.push({
        Id: String(entries.length),
        MessageBody: JSON.stringify(body),
        // SQS fair queues: the tenant is the message group, so a noisy tenant's backlog does not
        // delay quieter tenants' deliveries.
        MessageGroupId: task.tenantId,
        ...(delay > 0 ? { DelaySeconds: Math.min(delay, MAX_DELAY_SECONDS) } : {}),
      });
      byTier.set(task.priority, entries);
    }
    await Promise.all([...byTier].map(([tier, entries]) => this.sendBatch(tierQueue(tier).id, entries)));
  }

  async sendToWorkers(runtime: Runtime, messages: readonly WorkerMessage[]): Promise<void> {
    await this.sendBatch(
      workerQueue(runtime).id,
      messages.map((m, i) => ({ Id: String(i), MessageBody: JSON.stringify(m) })),
    );
  }

  async reportCompletions(messages: readonly CompletionMessage[]): Promise<void> {
    await this.sendBatch(
      COMPLETIONS_QUEUE.id,
      messages.map((m, i) => ({ Id: String(i), MessageBody: JSON.stringify(m) })),
    );
  }

  /** Send in batches of 10; entries SQS rejects are retried, then reported as an error. */
  async sendBatch(queueId: string, entries: readonly SendMessageBatchRequestEntry[]): Promise<void> {
    const url = this.urlOf(queueId);
    for (let offset = 0; offset < entries.length; offset += 10) {
      let batch = entries.slice(offset, offset + 10).map((entry, i) => ({ ...entry, Id: String(i) }));
      for (let round = 0; batch.length > 0; round++) {
        const response = await this.#sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: batch }));
        const failed = new Set((response.Failed ?? []).map((f) => f.Id));
        if (failed.size === 0) break;
        if (round >= 4) {
          const reasons = (response.Failed ?? []).map((f) => `${f.Code}: ${f.Message}`).join('; ');
          throw new Error(`SQS refused ${failed.size} message(s) for ${queueId}: ${reasons}`);
        }
        batch = batch.filter((entry) => failed.has(entry.Id));
        await sleep(50 * 2 ** round);
      }
    }
  }

  async receive<T>(
    queueId: string,
    options: { max?: number; waitSeconds?: number; visibilitySeconds?: number; abortSignal?: AbortSignal } = {},
  ): Promise<ReceivedMessage<T>[]> {
    const response = await this.#sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.urlOf(queueId),
        MaxNumberOfMessages: Math.min(10, options.max ?? 10),
        WaitTimeSeconds: options.waitSeconds ?? 0,
        ...(options.visibilitySeconds === undefined ? {} : { VisibilityTimeout: options.visibilitySeconds }),
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
      options.abortSignal ? { abortSignal: options.abortSignal } : {},
    );
    return (response.Messages ?? []).flatMap((message) => parseMessage<T>(message));
  }

  async delete(queueId: string, receiptHandles: readonly string[]): Promise<void> {
    const url = this.urlOf(queueId);
    for (let offset = 0; offset < receiptHandles.length; offset += 10) {
      const batch = receiptHandles.slice(offset, offset + 10);
      await this.#sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: url,
          Entries: batch.map((handle, i) => ({ Id: String(i), ReceiptHandle: handle })),
        }),
      );
      // A failed delete only means the message comes back; consumers are idempotent on taskId.
    }
  }

  /** Queue attributes such as ApproximateNumberOfMessages (approximate, as SQS says). */
  async attributes(queueId: string, names: readonly QueueAttributeName[]): Promise<Partial<Record<string, string>>> {
    const response = await this.#sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: this.urlOf(queueId), AttributeNames: [...names] }),
    );
    return response.Attributes ?? {};
  }

  async changeVisibility(queueId: string, receiptHandles: readonly string[], seconds: number): Promise<void> {
    const url = this.urlOf(queueId);
    for (let offset = 0; offset < receiptHandles.length; offset += 10) {
      const batch = receiptHandles.slice(offset, offset + 10);
      await this.#sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: url,
          Entries: batch.map((handle, i) => ({ Id: String(i), ReceiptHandle: handle, VisibilityTimeout: seconds })),
        }),
      );
    }
  }
}

function parseMessage<T>(message: Message): ReceivedMessage<T>[] {
  if (!message.Body || !message.ReceiptHandle || !message.MessageId) return [];
  try {
    return [
      {
        body: JSON.parse(message.Body) as T,
        receiptHandle: message.ReceiptHandle,
        messageId: message.MessageId,
        receiveCount: Number(message.Attributes?.ApproximateReceiveCount ?? '1'),
      },
    ];
  } catch {
    // Not ours (malformed): leave it to the queue's redrive policy rather than crash the loop.
    return [];
  }
}

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));
