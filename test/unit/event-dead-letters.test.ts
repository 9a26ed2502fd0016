/**
 * The redrive Lambda's drain of the task events' dead letters (runtime/events/dead-letters.ts)
 * against a fake SQS that answers as AWS documents it: a receive brings fewer messages than
 * asked while the queue holds few ("If the number of messages in the queue is small (fewer
 * than 1,000), you most likely get fewer messages than you requested per ReceiveMessage call"),
 * and a short poll samples some servers and may bring none while messages wait.
 */
import {
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { drainEventDeadLetters } from '../../runtime/events/dead-letters.ts';

const URLS = { failedRecords: 'q/failed', deliveries: 'q/deliveries.fifo', deliveryDeadLetters: 'q/dlq.fifo' };

/** Queues by URL; a receive hands out at most `perReceive` visible messages, none on a short poll. */
function fakeSqs(queues: Record<string, Message[]>, perReceive: number) {
  const hidden = new Set<string>();
  const sent: { url: string; body: string; groupId: string | undefined }[] = [];
  const sqs = {
    async send(command: unknown) {
      if (command instanceof ReceiveMessageCommand) {
        const { QueueUrl, MaxNumberOfMessages = 1, WaitTimeSeconds = 0 } = command.input;
        if (WaitTimeSeconds === 0) return { Messages: [] };
        const visible = (queues[QueueUrl!] ?? []).filter((m) => !hidden.has(m.ReceiptHandle!));
        const taken = visible.slice(0, Math.min(MaxNumberOfMessages, perReceive));
        for (const m of taken) hidden.add(m.ReceiptHandle!);
        return { Messages: taken };
      }
      if (command instanceof SendMessageCommand) {
        const { QueueUrl, MessageBody, MessageGroupId } = command.input;
        sent.push({ url: QueueUrl!, body: MessageBody!, groupId: MessageGroupId });
        return { MessageId: `m${sent.length}` };
      }
      if (command instanceof DeleteMessageCommand) {
        const { QueueUrl, ReceiptHandle } = command.input;
        queues[QueueUrl!] = (queues[QueueUrl!] ?? []).filter((m) => m.ReceiptHandle !== ReceiptHandle);
        return {};
      }
      throw new Error(`unexpected command ${(command as object).constructor.name}`);
    },
  };
  return { sqs: sqs as unknown as SQSClient, sent, queues };
}

const deadDelivery = (i: number): Message => ({
  MessageId: `d${i}`,
  ReceiptHandle: `rh-d${i}`,
  Body: JSON.stringify({ webhook: 0, event: { id: `evt_${i}` } }),
  Attributes: { MessageGroupId: `0:tsk_${i}` },
});

describe('drainEventDeadLetters', () => {
  it('moves every dead webhook delivery back, however few each receive brings', async () => {
    // Prepare: 25 dead deliveries; SQS hands out 3 a receive.
    const fake = fakeSqs({ [URLS.deliveryDeadLetters]: Array.from({ length: 25 }, (_, i) => deadDelivery(i)) }, 3);

    // Act
    const report = await drainEventDeadLetters(fake.sqs, URLS);

    // Assess
    expect(report).toEqual({ failedRecords: 0, redelivered: 25 });
    expect(fake.sent.map((m) => m.url)).toEqual(Array(25).fill(URLS.deliveries));
    expect(fake.sent[7]).toMatchObject({ body: deadDelivery(7).Body, groupId: '0:tsk_7' });
    expect(fake.queues[URLS.deliveryDeadLetters]).toEqual([]);
  });
});
