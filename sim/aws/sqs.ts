/**
 * In-memory SQS standard queues answering the JSON wire protocol (AmazonSQS.*) as AWS documents
 * them, including what the emulators never do:
 * - at-least-once delivery: a received message can stay visible and be received again at once
 *   (a concurrent duplicate), or come back before its visibility timeout ends (early redelivery);
 * - approximate order: a receive picks among the oldest visible messages, not strictly the
 *   oldest; a short poll (WaitTimeSeconds 0) samples a subset of servers and can come back empty;
 * - every receive counts toward the queue's maxReceiveCount, and a message received that many
 *   times moves to the dead-letter queue at its next receive;
 * - visibility can be extended at most 12 hours from the receive; 256 KiB per message,
 *   1 MiB per batch, 10 entries per batch, SQS's allowed characters; per-entry batch failures
 *   (including, by chance, an internal error on one entry).
 * StartMessageMoveTask answers UnsupportedOperation, so the redrive code takes its
 * receive → send → delete path (the one it uses on the emulators).
 */
import { createHash } from 'node:crypto';
import type { QueueDefinition } from '../../runtime/infra/resources.ts';
import { MinHeap } from './heap.ts';

/** SQS's documented limits (the message limit is the one this project designs for). */
export const SQS_LIMITS = {
  messageBytes: 262_144,
  batchBytes: 1_048_576,
  batchEntries: 10,
  maxDelaySeconds: 900,
  maxVisibilitySeconds: 43_200,
  maxWaitSeconds: 20,
} as const;

/** #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF, whole code points. */
const ALLOWED_CHARACTERS = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u;

export function sqsAllows(body: string): boolean {
  return ALLOWED_CHARACTERS.test(body);
}

export class SqsError extends Error {
  readonly code: string;
  readonly senderFault: boolean;
  constructor(code: string, message: string, senderFault = true) {
    super(message);
    this.name = code;
    this.code = code;
    this.senderFault = senderFault;
  }
}

export interface SqsBehaviour {
  readonly random: () => number;
  readonly now: () => number;
  /** Chance that a received message stays visible (another receiver gets it concurrently). */
  readonly duplicateDeliveryRate: number;
  /** Chance that a received message comes back before its visibility timeout ends. */
  readonly earlyRedeliveryRate: number;
  /** Chance that a short poll misses the messages on the servers it did not sample. */
  readonly shortPollMissRate: number;
  /** Chance that one entry of a batch call fails with an internal error (retry it). */
  readonly batchEntryFailureRate: number;
}

interface StoredMessage {
  /** Send order (approximate FIFO picks among the lowest). */
  readonly seq: number;
  readonly messageId: string;
  readonly body: string;
  readonly md5: string;
  readonly sentAtMs: number;
  visibleAtMs: number;
  receiveCount: number;
  /** The latest receive: its handle and when, for the 12-hour visibility cap. */
  receipt?: { handle: string; atMs: number };
  deleted: boolean;
  /** Its entry in the queue's `hidden` heap while it is hidden; undefined while visible. */
  hiddenEntry?: HiddenEntry | undefined;
}

/** A hidden message and when it becomes visible; stale once the message's `hiddenEntry` moves on. */
interface HiddenEntry {
  readonly atMs: number;
  readonly message: StoredMessage;
}

/**
 * Every message not deleted is either visible (in `visible`, by send order) or hidden (its
 * `hiddenEntry` in `hidden`, by the time it becomes visible). Both heaps drop deleted and stale
 * entries lazily, when they reach the top.
 */
interface Queue {
  readonly definition: QueueDefinition;
  readonly url: string;
  /** Messages not deleted, by message id, in send order. */
  readonly byId: Map<string, StoredMessage>;
  readonly visible: MinHeap<StoredMessage>;
  readonly hidden: MinHeap<HiddenEntry>;
  /** Hidden messages never received (delayed) and received (in flight), for the attributes. */
  hiddenDelayed: number;
  hiddenInFlight: number;
  /** Long polls waiting for a message. */
  readonly waiters: Set<() => void>;
}

const bySendOrder = (a: StoredMessage, b: StoredMessage) => a.seq < b.seq;
const byVisibleAt = (a: HiddenEntry, b: HiddenEntry) =>
  a.atMs < b.atMs || (a.atMs === b.atMs && a.message.seq < b.message.seq);

/** What the checker reads: every receive of every message, by queue. */
export interface ReceiveRecord {
  readonly queueId: string;
  readonly messageId: string;
  readonly body: string;
  readonly atMs: number;
  readonly receiveCount: number;
}

const ACCOUNT = '000000000000';

export class InMemorySqs {
  readonly #queues = new Map<string, Queue>();
  readonly #byUrl = new Map<string, Queue>();
  readonly #behaviour: SqsBehaviour;
  readonly receives: ReceiveRecord[] = [];
  /** Every message sent (not counting moves to a dead-letter queue), by queue id. */
  readonly sends: { queueId: string; body: string; atMs: number }[] = [];
  /** Messages moved to a dead-letter queue: source queue id and body. */
  readonly deadLettered: { queueId: string; body: string; atMs: number }[] = [];
  #nextId = 0;

  constructor(queues: readonly QueueDefinition[], behaviour: SqsBehaviour) {
    this.#behaviour = behaviour;
    const all = [...queues];
    for (const queue of queues) {
      if (queue.deadLetter && !all.some((q) => q.id === queue.deadLetter!.id)) {
        all.push({
          id: queue.deadLetter.id,
          visibilityTimeoutSeconds: 30,
          retentionSeconds: queue.deadLetter.retentionSeconds,
        });
      }
    }
    for (const definition of all) {
      const url = `https://sqs.us-east-1.amazonaws.com/${ACCOUNT}/${definition.id}`;
      const queue: Queue = {
        definition,
        url,
        byId: new Map(),
        visible: new MinHeap(bySendOrder),
        hidden: new MinHeap(byVisibleAt),
        hiddenDelayed: 0,
        hiddenInFlight: 0,
        waiters: new Set(),
      };
      this.#queues.set(definition.id, queue);
      this.#byUrl.set(url, queue);
    }
  }

  /** Queue URLs by queue id, as the stack's QUEUE_URLS map gives them. */
  get queueUrls(): Record<string, string> {
    return Object.fromEntries([...this.#queues].map(([id, queue]) => [id, queue.url]));
  }

  /** Messages not yet deleted, by queue id (visible, delayed or in flight). */
  pending(queueId: string): { body: string; receiveCount: number }[] {
    const queue = this.#queues.get(queueId);
    return [...(queue?.byId.values() ?? [])].map((m) => ({ body: m.body, receiveCount: m.receiveCount }));
  }

  /** Messages a receive could get now (ApproximateNumberOfMessages, exactly). */
  visibleCount(queueId: string): number {
    const queue = this.#queues.get(queueId);
    if (!queue) return 0;
    this.#reveal(queue, this.#behaviour.now());
    return queue.byId.size - queue.hiddenDelayed - queue.hiddenInFlight;
  }

  async handle(
    operation: string,
    input: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    switch (operation) {
      case 'SendMessage':
        return this.#sendOne(input);
      case 'SendMessageBatch':
        return this.#sendBatch(input);
      case 'ReceiveMessage':
        return this.#receive(input, signal);
      case 'DeleteMessage':
        this.#deleteEntry(this.#queue(input.QueueUrl), String(input.ReceiptHandle));
        return {};
      case 'DeleteMessageBatch':
        return this.#batch(input, (queue, entry) => this.#deleteEntry(queue, String(entry.ReceiptHandle)));
      case 'ChangeMessageVisibility':
        this.#changeVisibility(
          this.#queue(input.QueueUrl),
          String(input.ReceiptHandle),
          Number(input.VisibilityTimeout),
        );
        return {};
      case 'ChangeMessageVisibilityBatch':
        return this.#batch(input, (queue, entry) =>
          this.#changeVisibility(queue, String(entry.ReceiptHandle), Number(entry.VisibilityTimeout)),
        );
      case 'GetQueueAttributes':
        return this.#attributes(input);
      case 'GetQueueUrl': {
        const queue = this.#queues.get(String(input.QueueName));
        if (!queue) throw new SqsError('QueueDoesNotExist', 'The specified queue does not exist.');
        return { QueueUrl: queue.url };
      }
      case 'ListQueues':
        return { QueueUrls: [...this.#byUrl.keys()] };
      default:
        throw new SqsError('UnsupportedOperation', `The simulated SQS does not implement ${operation}`);
    }
  }

  #queue(url: unknown): Queue {
    const queue = this.#byUrl.get(String(url));
    if (!queue) throw new SqsError('QueueDoesNotExist', 'The specified queue does not exist.');
    return queue;
  }

  #enqueue(queue: Queue, body: string, delaySeconds: number): StoredMessage {
    const nowMs = this.#behaviour.now();
    const seq = this.#nextId++;
    const message: StoredMessage = {
      seq,
      messageId: `m-${seq.toString(36).padStart(8, '0')}`,
      body,
      md5: createHash('md5').update(body, 'utf8').digest('hex'),
      sentAtMs: nowMs,
      visibleAtMs: nowMs + delaySeconds * 1000,
      receiveCount: 0,
      deleted: false,
    };
    queue.byId.set(message.messageId, message);
    this.#place(queue, message, nowMs);
    this.#wake(queue);
    return message;
  }

  /** File a message under visible or hidden after its `visibleAtMs` was set. */
  #place(queue: Queue, message: StoredMessage, nowMs: number): void {
    this.#unhide(queue, message);
    if (message.visibleAtMs <= nowMs) {
      queue.visible.push(message);
      return;
    }
    const entry: HiddenEntry = { atMs: message.visibleAtMs, message };
    message.hiddenEntry = entry;
    if (message.receiveCount === 0) queue.hiddenDelayed++;
    else queue.hiddenInFlight++;
    queue.hidden.push(entry);
  }

  /** Forget a message's hidden entry (it became visible, was deleted or re-hidden). */
  #unhide(queue: Queue, message: StoredMessage): void {
    if (!message.hiddenEntry) return;
    message.hiddenEntry = undefined;
    if (message.receiveCount === 0) queue.hiddenDelayed--;
    else queue.hiddenInFlight--;
  }

  #remove(queue: Queue, message: StoredMessage): void {
    message.deleted = true;
    this.#unhide(queue, message);
    queue.byId.delete(message.messageId);
  }

  /** Move the hidden messages whose time has come to the visible ones. */
  #reveal(queue: Queue, nowMs: number): void {
    for (let entry = queue.hidden.peek(); entry !== undefined && entry.atMs <= nowMs; entry = queue.hidden.peek()) {
      queue.hidden.pop();
      if (entry.message.hiddenEntry !== entry) continue;
      this.#unhide(queue, entry.message);
      queue.visible.push(entry.message);
    }
  }

  /** The earliest time a hidden message becomes visible (dropping stale entries on the way). */
  #nextReveal(queue: Queue): number | undefined {
    for (let entry = queue.hidden.peek(); entry !== undefined; entry = queue.hidden.peek()) {
      if (entry.message.hiddenEntry === entry) return entry.atMs;
      queue.hidden.pop();
    }
    return undefined;
  }

  /** A problem with one message, or undefined (SQS checks each entry of a batch on its own). */
  #messageProblem(body: unknown, delay: unknown): SqsError | undefined {
    if (typeof body !== 'string' || body.length === 0) {
      return new SqsError('MissingParameter', 'The request must contain the parameter MessageBody.');
    }
    if (Buffer.byteLength(body, 'utf8') > SQS_LIMITS.messageBytes) {
      return new SqsError(
        'InvalidParameterValue',
        `One or more parameters are invalid. Reason: Message must be shorter than ${SQS_LIMITS.messageBytes} bytes.`,
      );
    }
    if (!sqsAllows(body)) {
      return new SqsError(
        'InvalidMessageContents',
        'Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF',
      );
    }
    if (delay !== undefined && (typeof delay !== 'number' || delay < 0 || delay > SQS_LIMITS.maxDelaySeconds)) {
      return new SqsError('InvalidParameterValue', `Value ${delay} for parameter DelaySeconds is invalid.`);
    }
    return undefined;
  }

  #sendOne(input: Record<string, unknown>): Record<string, unknown> {
    const queue = this.#queue(input.QueueUrl);
    const problem = this.#messageProblem(input.MessageBody, input.DelaySeconds);
    if (problem) throw problem;
    const message = this.#enqueue(queue, String(input.MessageBody), Number(input.DelaySeconds ?? 0));
    this.sends.push({ queueId: queue.definition.id, body: message.body, atMs: message.sentAtMs });
    return { MessageId: message.messageId, MD5OfMessageBody: message.md5 };
  }

  #checkBatch(entries: unknown): Record<string, unknown>[] {
    if (!Array.isArray(entries) || entries.length === 0) {
      throw new SqsError(
        'EmptyBatchRequest',
        'There should be at least one SendMessageBatchRequestEntry in the request.',
      );
    }
    if (entries.length > SQS_LIMITS.batchEntries) {
      throw new SqsError(
        'TooManyEntriesInBatchRequest',
        `Maximum number of entries per request are ${SQS_LIMITS.batchEntries}.`,
      );
    }
    const ids = new Set(entries.map((entry) => String((entry as Record<string, unknown>).Id)));
    if (ids.size !== entries.length)
      throw new SqsError('BatchEntryIdsNotDistinct', 'Two or more batch entries have the same Id.');
    return entries as Record<string, unknown>[];
  }

  #sendBatch(input: Record<string, unknown>): Record<string, unknown> {
    const queue = this.#queue(input.QueueUrl);
    const entries = this.#checkBatch(input.Entries);
    const total = entries.reduce((sum, entry) => sum + Buffer.byteLength(String(entry.MessageBody ?? ''), 'utf8'), 0);
    if (total > SQS_LIMITS.batchBytes) {
      throw new SqsError(
        'BatchRequestTooLong',
        `Batch requests cannot be longer than ${SQS_LIMITS.batchBytes} bytes. You have sent ${total} bytes.`,
      );
    }
    const successful: Record<string, unknown>[] = [];
    const failed: Record<string, unknown>[] = [];
    for (const entry of entries) {
      const problem =
        this.#messageProblem(entry.MessageBody, entry.DelaySeconds) ??
        (this.#behaviour.random() < this.#behaviour.batchEntryFailureRate
          ? new SqsError('InternalError', 'We encountered an internal error. Please try again.', false)
          : undefined);
      if (problem) {
        failed.push({ Id: entry.Id, SenderFault: problem.senderFault, Code: problem.code, Message: problem.message });
        continue;
      }
      const message = this.#enqueue(queue, String(entry.MessageBody), Number(entry.DelaySeconds ?? 0));
      this.sends.push({ queueId: queue.definition.id, body: message.body, atMs: message.sentAtMs });
      successful.push({ Id: entry.Id, MessageId: message.messageId, MD5OfMessageBody: message.md5 });
    }
    return { Successful: successful, Failed: failed };
  }

  #batch(
    input: Record<string, unknown>,
    apply: (queue: Queue, entry: Record<string, unknown>) => void,
  ): Record<string, unknown> {
    const queue = this.#queue(input.QueueUrl);
    const entries = this.#checkBatch(input.Entries);
    const successful: Record<string, unknown>[] = [];
    const failed: Record<string, unknown>[] = [];
    for (const entry of entries) {
      try {
        if (this.#behaviour.random() < this.#behaviour.batchEntryFailureRate) {
          throw new SqsError('InternalError', 'We encountered an internal error. Please try again.', false);
        }
        apply(queue, entry);
        successful.push({ Id: entry.Id });
      } catch (error) {
        if (!(error instanceof SqsError)) throw error;
        failed.push({ Id: entry.Id, SenderFault: error.senderFault, Code: error.code, Message: error.message });
      }
    }
    return { Successful: successful, Failed: failed };
  }

  #byHandle(queue: Queue, handle: string): { message: StoredMessage | undefined; current: boolean } {
    const messageId = handle.split(':')[1];
    if (!handle.startsWith('rh:') || !messageId)
      throw new SqsError(
        'ReceiptHandleIsInvalid',
        `The input receipt handle "${handle}" is not a valid receipt handle.`,
      );
    const message = queue.byId.get(messageId);
    return { message, current: message?.receipt?.handle === handle };
  }

  #deleteEntry(queue: Queue, handle: string): void {
    // An older receipt handle still deletes here; AWS says it "might not": the checker's bound
    // on receives covers a message that came back.
    const { message } = this.#byHandle(queue, handle);
    if (message) this.#remove(queue, message);
  }

  #changeVisibility(queue: Queue, handle: string, seconds: number): void {
    const { message } = this.#byHandle(queue, handle);
    const nowMs = this.#behaviour.now();
    if (!message || message.deleted || !message.receipt || message.visibleAtMs <= nowMs) {
      throw new SqsError('MessageNotInflight', 'The message referred to is not in flight.');
    }
    if (!Number.isInteger(seconds) || seconds < 0 || seconds > SQS_LIMITS.maxVisibilitySeconds) {
      throw new SqsError('InvalidParameterValue', `Value ${seconds} for parameter VisibilityTimeout is invalid.`);
    }
    if (nowMs + seconds * 1000 > message.receipt.atMs + SQS_LIMITS.maxVisibilitySeconds * 1000) {
      throw new SqsError(
        'InvalidParameterValue',
        `Value ${seconds} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [${SQS_LIMITS.maxVisibilitySeconds} seconds]`,
      );
    }
    message.visibleAtMs = nowMs + seconds * 1000;
    this.#place(queue, message, nowMs);
    if (seconds === 0) this.#wake(queue);
  }

  #attributes(input: Record<string, unknown>): Record<string, unknown> {
    const queue = this.#queue(input.QueueUrl);
    this.#reveal(queue, this.#behaviour.now());
    const delayed = queue.hiddenDelayed;
    const inFlight = queue.hiddenInFlight;
    const visible = queue.byId.size - delayed - inFlight;
    const { definition } = queue;
    return {
      Attributes: {
        ApproximateNumberOfMessages: String(visible),
        ApproximateNumberOfMessagesDelayed: String(delayed),
        ApproximateNumberOfMessagesNotVisible: String(inFlight),
        QueueArn: `arn:aws:sqs:us-east-1:${ACCOUNT}:${definition.id}`,
        VisibilityTimeout: String(definition.visibilityTimeoutSeconds),
        ...(definition.deadLetter
          ? {
              RedrivePolicy: JSON.stringify({
                deadLetterTargetArn: `arn:aws:sqs:us-east-1:${ACCOUNT}:${definition.deadLetter.id}`,
                maxReceiveCount: definition.deadLetter.maxReceiveCount,
              }),
            }
          : {}),
      },
    };
  }

  async #receive(input: Record<string, unknown>, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const queue = this.#queue(input.QueueUrl);
    const max = Number(input.MaxNumberOfMessages ?? 1);
    const waitSeconds = Number(input.WaitTimeSeconds ?? 0);
    const visibility = Number(input.VisibilityTimeout ?? queue.definition.visibilityTimeoutSeconds);
    if (!Number.isInteger(max) || max < 1 || max > 10) {
      throw new SqsError('InvalidParameterValue', `Value ${max} for parameter MaxNumberOfMessages is invalid.`);
    }
    if (waitSeconds < 0 || waitSeconds > SQS_LIMITS.maxWaitSeconds) {
      throw new SqsError('InvalidParameterValue', `Value ${waitSeconds} for parameter WaitTimeSeconds is invalid.`);
    }
    if (visibility < 0 || visibility > SQS_LIMITS.maxVisibilitySeconds) {
      throw new SqsError('InvalidParameterValue', `Value ${visibility} for parameter VisibilityTimeout is invalid.`);
    }
    const deadline = this.#behaviour.now() + waitSeconds * 1000;
    for (;;) {
      const messages = this.#take(queue, max, visibility, waitSeconds === 0);
      if (messages.length > 0 || this.#behaviour.now() >= deadline) return { Messages: messages };
      await this.#waitForMessage(queue, deadline, signal);
    }
  }

  /** Until a message may be visible, the deadline passes, or the request is aborted. */
  #waitForMessage(queue: Queue, deadline: number, signal?: AbortSignal): Promise<void> {
    const nowMs = this.#behaviour.now();
    this.#reveal(queue, nowMs);
    const nextReveal = this.#nextReveal(queue);
    const wakeAt = nextReveal !== undefined && nextReveal < deadline ? nextReveal : deadline;
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        queue.waiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      // Reject without resolving first: a resolved wait would loop the receive forever once aborted.
      const onAbort = () => {
        clearTimeout(timer);
        queue.waiters.delete(done);
        reject(Object.assign(new Error('The operation was aborted'), { name: 'AbortError' }));
      };
      const timer = setTimeout(done, Math.max(0, wakeAt - nowMs));
      queue.waiters.add(done);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #wake(queue: Queue): void {
    for (const waiter of [...queue.waiters]) waiter();
  }

  #take(queue: Queue, max: number, visibilitySeconds: number, shortPoll: boolean): Record<string, unknown>[] {
    const { random, now } = this.#behaviour;
    const nowMs = now();
    this.#reveal(queue, nowMs);
    // Approximate order: pick among the oldest few visible, not strictly the oldest.
    const window: StoredMessage[] = [];
    while (window.length < max * 3) {
      const message = queue.visible.pop();
      if (message === undefined) break;
      if (!message.deleted) window.push(message);
    }
    const picked: StoredMessage[] = [];
    while (picked.length < max && window.length > 0) {
      // A short poll asks a sample of servers: it may miss what the others hold.
      if (shortPoll && random() < this.#behaviour.shortPollMissRate) break;
      const [message] = window.splice(Math.floor(random() * Math.min(window.length, 3)), 1);
      picked.push(message!);
    }
    for (const message of window) queue.visible.push(message);
    const out: Record<string, unknown>[] = [];
    const redrive = queue.definition.deadLetter;
    for (const message of picked) {
      if (redrive && message.receiveCount >= redrive.maxReceiveCount) {
        this.#remove(queue, message);
        const target = this.#queues.get(redrive.id)!;
        this.#enqueue(target, message.body, 0);
        this.deadLettered.push({ queueId: queue.definition.id, body: message.body, atMs: nowMs });
        continue;
      }
      message.receiveCount++;
      const handle = `rh:${message.messageId}:${message.receiveCount}`;
      message.receipt = { handle, atMs: nowMs };
      const roll = random();
      if (roll < this.#behaviour.duplicateDeliveryRate) {
        // Delivered, and still visible: the next receive (any consumer) gets it too.
        message.visibleAtMs = nowMs;
      } else if (roll < this.#behaviour.duplicateDeliveryRate + this.#behaviour.earlyRedeliveryRate) {
        message.visibleAtMs = nowMs + Math.floor(random() * visibilitySeconds * 1000);
      } else {
        message.visibleAtMs = nowMs + visibilitySeconds * 1000;
      }
      this.#place(queue, message, nowMs);
      this.receives.push({
        queueId: queue.definition.id,
        messageId: message.messageId,
        body: message.body,
        atMs: nowMs,
        receiveCount: message.receiveCount,
      });
      out.push({
        MessageId: message.messageId,
        ReceiptHandle: handle,
        MD5OfBody: message.md5,
        Body: message.body,
        Attributes: {
          ApproximateReceiveCount: String(message.receiveCount),
          SentTimestamp: String(message.sentAtMs),
        },
      });
    }
    return out;
  }
}
