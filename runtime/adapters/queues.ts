/**
 * SQS messaging. Queue ids come from runtime/infra/resources.ts; URLs are resolved once (from
 * the QUEUE_URLS environment on AWS, from the emulator locally). Every call batches (10 a
 * request, the SQS maximum) because SQS bills per request.
 *
 * SQS's limits are kept here, whatever the caller sends:
 * - bodies are JSON with every non-ASCII character escaped (`\uXXXX`), so characters SQS refuses
 *   (U+FFFE, U+FFFF, lone surrogates; the emulator also refuses anything above U+FFFD) survive;
 * - a batch holds at most 10 entries and 1 MiB, a message at most 256 KiB (a larger one is a
 *   typed error before anything is sent);
 * - a batch call's per-entry failures are retried when SQS says they are its own fault, and
 *   otherwise reported: a send throws `QueueBatchError`; a delete or visibility change returns
 *   them (the message only comes back, which every consumer tolerates).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type BatchResultErrorEntry,
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
import { shardOfTenant } from '../core/shards.ts';
import type { PriorityTier, Runtime, Task, TaskState } from '../core/task.ts';
import { completionsQueue, tierQueue, workerQueue } from '../infra/resources.ts';
import { inParallel, sizedChunks } from './in-parallel.ts';

/** SQS limits (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html). */
export const MAX_MESSAGE_BYTES = 256 * 1024;
export const MAX_BATCH_BYTES = 1024 * 1024;
const MAX_BATCH_ENTRIES = 10;
/** Batch calls of one send or delete in flight at once. */
const SEND_CONCURRENCY = 16;
/** A message stays hidden at most 12 h after it was received (SQS refuses more). */
export const MAX_VISIBILITY_SECONDS = 43_200;
/**
 * The dispatched task rides in the worker message (sparing the worker a read) only while the
 * message stays this small; a larger task is read by the worker with a consistent get.
 */
const EMBED_TASK_MAX_BYTES = 32 * 1024;

/** One entry of a batch call that SQS did not carry out. */
export interface BatchEntryFailure {
  readonly operation: 'SendMessageBatch' | 'DeleteMessageBatch' | 'ChangeMessageVisibilityBatch';
  readonly queueId: string;
  readonly code: string;
  readonly message: string;
  /** True when SQS blames the request (bad handle, bad body): retrying the same will not help. */
  readonly senderFault: boolean;
  /** The receipt handle (delete, visibility) or the body's first 200 characters (send). */
  readonly subject: string;
}

/** A send that SQS refused, in part or whole, after retries. Nothing else of the call is undone. */
export class QueueBatchError extends Error {
  readonly failures: readonly BatchEntryFailure[];
  constructor(failures: readonly BatchEntryFailure[]) {
    const first = failures[0];
    super(
      `SQS refused ${failures.length} message(s)` +
        (first ? ` for ${first.queueId} (${first.operation}): ${first.code}: ${first.message}` : ''),
    );
    this.name = 'QueueBatchError';
    this.failures = failures;
  }
}

/**
 * JSON whose every character outside printable ASCII is a `\uXXXX` escape: any string survives
 * SQS's character set, and JSON.parse gives back exactly the value.
 */
export function toMessageBody(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/**
 * A waiting task announced to the scheduler on its tier queue. It names the tenant-tier to read
 * and carries the task's ref (what the policy engine needs), so a new task enters its tenant's
 * window before the index shows it. Messages sent before the ref was added carry only the first three.
 */
export interface TierMessage {
  readonly taskId: string;
  readonly tenantId: string;
  readonly priority: PriorityTier;
  readonly runtime?: Task['runtime'];
  readonly resources?: Task['resources'];
  readonly agingFrom?: string;
  readonly runAt?: string;
  readonly fence?: number;
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
  /**
   * What the task asked for, so the Lambda pool's entry worker picks its memory class without a
   * read when the task is too large to ride along (absent from messages of older schedulers).
   */
  readonly resources?: Task['resources'];
}

/** A worker's report that an attempt ended, so the scheduler frees its capacity at once. */
export interface CompletionMessage {
  readonly taskId: string;
  readonly fence: number;
  readonly tenantId: string;
  readonly state: TaskState;
  /**
   * A batch member's end that its worker left to the scheduler to count (app/batches.ts
   * `membersEnded`): the member's batch and index. Absent otherwise, and from older workers,
   * which count it themselves.
   */
  readonly batchId?: string;
  readonly batchIndex?: number;
}

export interface ReceivedMessage<T> {
  readonly body: T;
  readonly receiptHandle: string;
  readonly messageId: string;
  readonly receiveCount: number;
  /** When SQS first handed this message out (its 12-hour visibility cap counts from there). */
  readonly firstReceivedAtMs: number;
}

/** A waiting task's announcement: what the intake needs to admit it without reading the item. */
export const tierMessageOf = (task: Task): TierMessage => ({
  taskId: task.taskId,
  tenantId: task.tenantId,
  priority: task.priority,
  runtime: task.runtime,
  resources: task.resources,
  agingFrom: task.agingFrom,
  runAt: task.runAt,
  fence: task.fence,
});

/** SQS caps DelaySeconds at 15 minutes; longer waits are re-announced by the scheduler. */
export const MAX_DELAY_SECONDS = 900;
/**
 * A task delayed longer than this is announced this long before it is due: with no scheduler
 * running, only the minute tick finds an announcement nobody took (runtime/scheduler/activation.ts,
 * whose DUE_HORIZON_MS this is), so one that turned visible when due made its task start up to a
 * tick late (the chaos `delayed` scenario: 61 s). The scheduler holds a ref announced early until
 * it is due (docs/intake.md), as it does one SQS delivers early. A shorter delay (a retry's
 * backoff) is announced when due.
 */
export const ANNOUNCE_AHEAD_SECONDS = 90;

export interface QueueClientOptions {
  /**
   * Told after tasks are announced (sent first, so the scheduler it may wake finds them): wakes
   * a scaled-to-zero scheduler (runtime/scheduler/activation.ts).
   */
  readonly afterAnnounce?: (tasks: readonly Task[], now: Date) => Promise<void>;
  /**
   * `scheduler.shards`: announcements go to the tier queue, and completions to the completions
   * queue, of the shard that owns the task's tenant (runtime/core/shards.ts). Default 1.
   */
  readonly shards?: number;
  /**
   * Task type → the queue its attempts go to instead of their pool's (types the user's own
   * functions or containers run: `taskTypeQueue`). Default: none.
   */
  readonly typeQueues?: Readonly<Record<string, string>>;
}

export class QueueClient {
  readonly #sqs: SQSClient;
  readonly #urls: Readonly<Record<string, string>>;
  readonly #afterAnnounce: QueueClientOptions['afterAnnounce'];
  readonly #typeQueues: Readonly<Record<string, string>>;
  readonly #shards: number;

  constructor(sqs: SQSClient, urls: Readonly<Record<string, string>>, options: QueueClientOptions = {}) {
    this.#sqs = sqs;
    this.#urls = urls;
    this.#afterAnnounce = options.afterAnnounce;
    this.#typeQueues = options.typeQueues ?? {};
    this.#shards = options.shards ?? 1;
  }

  urlOf(queueId: string): string {
    const url = this.#urls[queueId];
    if (!url)
      throw new Error(`No URL configured for queue "${queueId}" (known: ${Object.keys(this.#urls).join(', ')})`);
    return url;
  }

  /** Announce waiting tasks on their tier queues, delayed until `runAt` where possible. */
  async announce(tasks: readonly Task[], now: Date): Promise<void> {
    // By queue: the tier's, of the shard that owns the tenant.
    const byQueue = new Map<string, SendMessageBatchRequestEntry[]>();
    for (const task of tasks) {
      const dueIn = Math.ceil((Date.parse(task.runAt) - now.getTime()) / 1000);
      const delay = dueIn > ANNOUNCE_AHEAD_SECONDS ? dueIn - ANNOUNCE_AHEAD_SECONDS : dueIn;
      const body = tierMessageOf(task);
      const queueId = tierQueue(task.priority, shardOfTenant(task.tenantId, this.#shards)).id;
      const entries = byQueue.get(queueId) ?? [];
      entries.push({
        Id: String(entries.length),
        MessageBody: toMessageBody(body),
        // SQS fair queues: the tenant is the message group, so a noisy tenant's backlog does not
        // delay quieter tenants' deliveries.
        MessageGroupId: task.tenantId,
        ...(delay > 0 ? { DelaySeconds: Math.min(delay, MAX_DELAY_SECONDS) } : {}),
      });
      byQueue.set(queueId, entries);
    }
    await Promise.all([...byQueue].map(([queueId, entries]) => this.sendBatch(queueId, entries)));
    if (tasks.length > 0) await this.#afterAnnounce?.(tasks, now);
  }

  /** Hand dispatched attempts to their pool's queue, or to their type's own queue when it has one. */
  async sendToWorkers(runtime: Runtime, messages: readonly WorkerMessage[]): Promise<void> {
    const byQueue = Map.groupBy(messages, (m) =>
      Object.hasOwn(this.#typeQueues, m.type) ? this.#typeQueues[m.type]! : workerQueue(runtime).id,
    );
    await Promise.all(
      [...byQueue].map(([queueId, batch]) =>
        this.sendBatch(
          queueId,
          batch.map((m, i) => {
            const body = toMessageBody(m);
            if (m.task === undefined || utf8Bytes(body) <= EMBED_TASK_MAX_BYTES)
              return { Id: String(i), MessageBody: body };
            const { task, ...keyOnly } = m;
            return { Id: String(i), MessageBody: toMessageBody({ ...keyOnly, resources: task.resources }) };
          }),
        ),
      ),
    );
  }

  /** To the completions queue of the shard that owns each attempt's tenant. */
  async reportCompletions(messages: readonly CompletionMessage[]): Promise<void> {
    const byQueue = Map.groupBy(messages, (m) => completionsQueue(shardOfTenant(m.tenantId, this.#shards)).id);
    await Promise.all(
      [...byQueue].map(([queueId, batch]) =>
        this.sendBatch(
          queueId,
          batch.map((m, i) => ({ Id: String(i), MessageBody: toMessageBody(m) })),
        ),
      ),
    );
  }

  /**
   * Send in batches of at most 10 entries and 1 MiB. Entries SQS fails on its side are retried;
   * what is still refused is thrown as one QueueBatchError after every batch was tried.
   */
  async sendBatch(queueId: string, entries: readonly SendMessageBatchRequestEntry[]): Promise<void> {
    const url = this.urlOf(queueId);
    const refused: BatchEntryFailure[] = [];
    for (const entry of entries) {
      const bytes = entryBytes(entry);
      if (bytes > MAX_MESSAGE_BYTES) {
        refused.push({
          operation: 'SendMessageBatch',
          queueId,
          code: 'MessageTooLong',
          message: `${bytes} bytes, SQS allows ${MAX_MESSAGE_BYTES}`,
          senderFault: true,
          subject: (entry.MessageBody ?? '').slice(0, 200),
        });
      }
    }
    if (refused.length > 0) throw new QueueBatchError(refused);
    // The batches side by side: a dispatch round of 1,000 picks is 100 calls, and one after
    // another they cost a second at SQS's latency (docs/benchmarks.md §4).
    const outcomes = await inParallel(sizedBatches(entries), SEND_CONCURRENCY, (batch) =>
      this.#withRetries(batch, async (pending) => {
        const response = await this.#sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: pending }));
        return response.Failed ?? [];
      }),
    );
    for (const { entry, failure } of outcomes.flat()) {
      refused.push({
        operation: 'SendMessageBatch',
        queueId,
        code: failure.Code ?? 'Unknown',
        message: failure.Message ?? '',
        senderFault: failure.SenderFault ?? false,
        subject: (entry.MessageBody ?? '').slice(0, 200),
      });
    }
    if (refused.length > 0) throw new QueueBatchError(refused);
  }

  /**
   * One batch call with its entries renumbered, retried (up to 4 more rounds, backing off) for
   * the entries SQS failed on its own side. Returns the entries that still failed.
   */
  async #withRetries<E extends { Id: string | undefined }>(
    entries: readonly E[],
    call: (pending: E[]) => Promise<readonly BatchResultErrorEntry[]>,
  ): Promise<{ entry: E; failure: BatchResultErrorEntry }[]> {
    let pending: E[] = entries.map((entry, i) => ({ ...entry, Id: String(i) }));
    const final: { entry: E; failure: BatchResultErrorEntry }[] = [];
    for (let round = 0; pending.length > 0; round++) {
      const failed = await call(pending);
      if (failed.length === 0) break;
      const byId = new Map(failed.map((f) => [f.Id, f]));
      const retry: E[] = [];
      for (const entry of pending) {
        const failure = byId.get(entry.Id);
        if (!failure) continue;
        if (failure.SenderFault || round >= 4) final.push({ entry, failure });
        else retry.push(entry);
      }
      pending = retry;
      if (pending.length > 0) await sleep(50 * 2 ** round);
    }
    return final;
  }

  async receive<T>(
    queueId: string,
    options: {
      max?: number;
      waitSeconds?: number;
      visibilitySeconds?: number | undefined;
      abortSignal?: AbortSignal;
    } = {},
  ): Promise<ReceivedMessage<T>[]> {
    const response = await this.#sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.urlOf(queueId),
        MaxNumberOfMessages: Math.min(10, options.max ?? 10),
        WaitTimeSeconds: options.waitSeconds ?? 0,
        VisibilityTimeout: options.visibilitySeconds,
        MessageSystemAttributeNames: ['ApproximateReceiveCount', 'ApproximateFirstReceiveTimestamp'],
      }),
      options.abortSignal ? { abortSignal: options.abortSignal } : {},
    );
    const receivedAtMs = Date.now();
    return (response.Messages ?? []).flatMap((message) => parseMessage<T>(message, receivedAtMs));
  }

  /**
   * Delete received messages. Returns the entries SQS would not delete (an expired receipt
   * handle, say): those messages come back, and every consumer is idempotent on taskId + fence.
   */
  async delete(queueId: string, receiptHandles: readonly string[]): Promise<BatchEntryFailure[]> {
    const url = this.urlOf(queueId);
    const batches: { Id: string; ReceiptHandle: string }[][] = [];
    for (let offset = 0; offset < receiptHandles.length; offset += MAX_BATCH_ENTRIES) {
      batches.push(
        receiptHandles.slice(offset, offset + MAX_BATCH_ENTRIES).map((handle) => ({ Id: '', ReceiptHandle: handle })),
      );
    }
    const outcomes = await inParallel(batches, SEND_CONCURRENCY, (batch) =>
      this.#withRetries(batch, async (pending) => {
        const response = await this.#sqs.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: pending }));
        return response.Failed ?? [];
      }),
    );
    return outcomes
      .flat()
      .map(({ entry, failure }) => entryFailure('DeleteMessageBatch', queueId, failure, entry.ReceiptHandle));
  }

  /** Queue attributes such as ApproximateNumberOfMessages (approximate, as SQS says). */
  async attributes(queueId: string, names: readonly QueueAttributeName[]): Promise<Partial<Record<string, string>>> {
    const response = await this.#sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: this.urlOf(queueId), AttributeNames: [...names] }),
    );
    return response.Attributes ?? {};
  }

  /**
   * Hide received messages for `seconds` from now (at most 12 h: SQS counts its cap from the
   * receipt, so callers holding a message long pass what is left of it). Returns the entries SQS
   * refused (an expired receipt handle, say): those messages become visible when they would have.
   */
  async changeVisibility(
    queueId: string,
    receiptHandles: readonly string[],
    seconds: number,
  ): Promise<BatchEntryFailure[]> {
    const url = this.urlOf(queueId);
    const timeout = Math.max(0, Math.min(MAX_VISIBILITY_SECONDS, Math.floor(seconds)));
    const refused: BatchEntryFailure[] = [];
    for (let offset = 0; offset < receiptHandles.length; offset += MAX_BATCH_ENTRIES) {
      const batch = receiptHandles.slice(offset, offset + MAX_BATCH_ENTRIES).map((handle) => ({
        Id: '',
        ReceiptHandle: handle,
        VisibilityTimeout: timeout,
      }));
      const failures = await this.#withRetries(batch, async (pending) => {
        const response = await this.#sqs.send(
          new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: pending }),
        );
        return response.Failed ?? [];
      });
      for (const { entry, failure } of failures) {
        refused.push(entryFailure('ChangeMessageVisibilityBatch', queueId, failure, entry.ReceiptHandle));
      }
    }
    return refused;
  }
}

function entryFailure(
  operation: BatchEntryFailure['operation'],
  queueId: string,
  failure: BatchResultErrorEntry,
  subject: string | undefined,
): BatchEntryFailure {
  return {
    operation,
    queueId,
    code: failure.Code ?? 'Unknown',
    message: failure.Message ?? '',
    senderFault: failure.SenderFault ?? false,
    subject: subject ?? '',
  };
}

/** Size SQS counts for an entry: its body plus its attributes' names and values. */
function entryBytes(entry: SendMessageBatchRequestEntry): number {
  let bytes = utf8Bytes(entry.MessageBody ?? '');
  for (const [name, value] of Object.entries(entry.MessageAttributes ?? {})) {
    bytes += utf8Bytes(name) + utf8Bytes(value.DataType ?? '') + utf8Bytes(value.StringValue ?? '');
    bytes += value.BinaryValue?.byteLength ?? 0;
  }
  return bytes;
}

/** Consecutive batches of at most 10 entries and 1 MiB (each entry already within 256 KiB). */
function sizedBatches(entries: readonly SendMessageBatchRequestEntry[]): SendMessageBatchRequestEntry[][] {
  return sizedChunks(entries, entryBytes, MAX_BATCH_ENTRIES, MAX_BATCH_BYTES);
}

function parseMessage<T>(message: Message, receivedAtMs: number): ReceivedMessage<T>[] {
  if (!message.Body || !message.ReceiptHandle || !message.MessageId) return [];
  try {
    return [
      {
        body: JSON.parse(message.Body) as T,
        receiptHandle: message.ReceiptHandle,
        messageId: message.MessageId,
        receiveCount: Number(message.Attributes?.ApproximateReceiveCount ?? '1'),
        firstReceivedAtMs: Number(message.Attributes?.ApproximateFirstReceiveTimestamp ?? receivedAtMs),
      },
    ];
  } catch {
    // Not ours (malformed): leave it to the queue's redrive policy rather than crash the loop.
    return [];
  }
}
