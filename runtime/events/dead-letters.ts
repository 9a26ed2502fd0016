/**
 * What the task events leave for an operator on AWS, read by the scheduled redrive drain
 * (runtime/handlers/redrive.ts) so the existing DeadLettered alarm covers them:
 * - batches of stream records the events function gave up on (they left the stream after 24 h):
 *   left in their queue and counted on every drain, so the alarm stays on until someone looks;
 *   their events are lost, and consumers see the gap in `sequence`;
 * - webhook deliveries refused for about two days: moved back to the delivery queue (the webhook
 *   is retried until it takes them), and counted.
 */
import { randomUUID } from 'node:crypto';
import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { TaskLogger } from '../core/logger.ts';

/** Environment variable (JSON) with the queues' URLs, set by the stack on the redrive function. */
export const EVENT_QUEUES_ENV = 'EVENT_QUEUES';

export interface EventQueueUrls {
  readonly failedRecords: string;
  readonly deliveries?: string;
  readonly deliveryDeadLetters?: string;
}

export function eventQueuesFromEnvironment(env: NodeJS.ProcessEnv = process.env): EventQueueUrls | undefined {
  const raw = env[EVENT_QUEUES_ENV];
  return raw ? (JSON.parse(raw) as EventQueueUrls) : undefined;
}

export async function drainEventDeadLetters(
  sqs: SQSClient,
  urls: EventQueueUrls,
  options: { onReceived?: (count: number) => void; logger?: TaskLogger } = {},
): Promise<{ failedRecords: number; redelivered: number }> {
  const failed = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: urls.failedRecords, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
  );
  for (const message of failed.Messages ?? []) {
    options.logger?.error('task events lost: the stream function gave up on a batch', { record: message.Body });
  }
  let redelivered = 0;
  if (urls.deliveries && urls.deliveryDeadLetters) {
    // Until a receive brings nothing (at most 10 rounds a drain): SQS brings fewer than asked
    // while the queue holds few, and a short poll can bring none while messages wait, so neither
    // a short batch nor a short poll's empty answer says the queue is empty.
    for (let round = 0; round < 10; round++) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: urls.deliveryDeadLetters,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ['MessageGroupId'],
        }),
      );
      for (const message of Messages) {
        await sqs.send(
          new SendMessageCommand({
            QueueUrl: urls.deliveries,
            MessageBody: message.Body ?? '',
            MessageGroupId: message.Attributes?.MessageGroupId ?? 'redriven',
            // A new id: the original's may still be inside the queue's de-duplication window.
            MessageDeduplicationId: randomUUID(),
          }),
        );
        await sqs.send(
          new DeleteMessageCommand({ QueueUrl: urls.deliveryDeadLetters, ReceiptHandle: message.ReceiptHandle }),
        );
        redelivered++;
      }
      if (Messages.length === 0) break;
    }
  }
  const count = (failed.Messages ?? []).length + redelivered;
  if (count > 0) options.onReceived?.(count);
  return { failedRecords: (failed.Messages ?? []).length, redelivered };
}
