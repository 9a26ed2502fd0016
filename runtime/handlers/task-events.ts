/**
 * The task table's stream consumer (AWS): each state change becomes an event on the task event
 * bus (source `task-scheduler`, detail-type `Task State Change`, detail = the event), and, for each
 * configured webhook whose filters it passes, a message on the FIFO delivery queue (group
 * webhook + task, de-duplicated on webhook + event id). No request path pays for any of it.
 * It is also the durable step of task dependencies: a held task's creation and a marked
 * dependency's end are settled here (app/dependencies.ts), retried with the record until done.
 *
 * A failure answers with the first record not fully sent (partial batch response): Lambda retries
 * from there, in order, so nothing is skipped and a task's events stay in order; what was sent
 * again is at least once (the bus) or dropped by the queue's de-duplication (five minutes). So
 * does an invocation running out of time (STEP_RESERVE_MS).
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  EventBridgeClient,
  PutEventsCommand,
  type PutEventsCommandOutput,
  type PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { AWS_CALL_TIMEOUTS, onAws } from '../adapters/aws-clients.ts';
import { DependencyService } from '../app/dependencies.ts';
import { servicesFromEnvironment } from '../app/wiring.ts';
import { TASK_EVENT_DETAIL_TYPE, TASK_EVENT_SOURCE, type TaskEvent } from '../core/events.ts';
import { changesOfStream, type StreamChange } from '../events/stream.ts';
import { type DeployedWebhook, deployedWebhooksFromEnvironment, webhookTakes } from '../events/webhooks.ts';
import { ENV } from '../infra/resources.ts';
import { logger } from './observability.ts';

const eventBridge = new EventBridgeClient(onAws());
const sqs = new SQSClient(onAws(AWS_CALL_TIMEOUTS.sqsMs));
const busName = process.env[ENV.eventBus];
const queueUrl = process.env[ENV.webhookQueueUrl];
const webhooks = deployedWebhooksFromEnvironment();

/** A delivery queue message: which webhook, and the event. */
export interface WebhookDelivery {
  readonly webhook: number;
  readonly event: TaskEvent;
}

/**
 * Left of the invocation when a chunk or a change's dependency step starts (a held task's
 * registration on 100 dependencies is 400 calls one after another). Lambda stops an invocation at
 * its timeout and retries the whole batch from its start: past it, the changes left go to the next
 * invocation from the first one not done (partial batch response), so a batch whose steps outlast
 * one invocation is not begun again and again.
 */
const STEP_RESERVE_MS = 15_000;

export const handler = async (stream: DynamoDBStreamEvent, context?: Context): Promise<DynamoDBBatchResponse> => {
  const outOfTime = () =>
    typeof context?.getRemainingTimeInMillis === 'function' && context.getRemainingTimeInMillis() < STEP_RESERVE_MS;
  const retryFrom = (change: StreamChange): DynamoDBBatchResponse => {
    logger.info('task events: out of time, the next invocation goes on', { sequenceNumber: change.sequenceNumber });
    return { batchItemFailures: [{ itemIdentifier: change.sequenceNumber }] };
  };
  const changes = changesOfStream(stream.Records);
  // In chunks of 10 (PutEvents' and SendMessageBatch's limit), in stream order.
  for (let start = 0; start < changes.length; start += 10) {
    const chunk = changes.slice(start, start + 10);
    if (outOfTime()) return retryFrom(chunk[0]!);
    try {
      await putOnBus(chunk);
      await queueDeliveries(chunk, webhooks);
      const left = await settleDependencies(chunk, outOfTime);
      // Its events were sent: the next invocation sends them again (at least once, as on any retry).
      if (left) return retryFrom(left);
    } catch (error) {
      logger.warn('task events: retrying from a record', {
        error: String(error),
        sequenceNumber: chunk[0]!.sequenceNumber,
      });
      return { batchItemFailures: [{ itemIdentifier: chunk[0]!.sequenceNumber }] };
    }
  }
  return { batchItemFailures: [] };
};

/**
 * The dependencies' step of the change feed (app/dependencies.ts): a held task's creation
 * registers it on its dependencies, a marked dependency's end settles its dependents. A failure
 * answers with the chunk's first record, so Lambda retries it (the step is idempotent); the
 * services are built only when a change needs them. Returns the first change not begun, when
 * the invocation ran out of time for it.
 */
async function settleDependencies(
  chunk: readonly StreamChange[],
  outOfTime: () => boolean,
): Promise<StreamChange | undefined> {
  for (const change of chunk) {
    const { event, task } = change;
    if (!DependencyService.concerns(task, event)) continue;
    if (outOfTime()) return change;
    await servicesFromEnvironment().dependencies.onChange(event.taskId, event);
  }
  return undefined;
}

/** PutEvents rounds for the entries it failed (throttled, an internal failure) before the record is retried. */
export const PUT_EVENTS_ROUNDS = 3;

/**
 * Put the chunk's events on the bus, again for the entries EventBridge failed, backing off between
 * rounds (100 ms, then 200 ms, each with up to as much again at random): a failed entry is mostly
 * the bus throttling (its PutEvents quota is per account and Region), which an immediate retry meets again.
 */
export async function putOnBus(
  chunk: readonly StreamChange[],
  bus = busName,
  send: (command: PutEventsCommand) => Promise<PutEventsCommandOutput> = (command) => eventBridge.send(command),
  pause: (ms: number) => Promise<unknown> = sleep,
): Promise<void> {
  if (!bus) return;
  let entries: PutEventsRequestEntry[] = chunk.map(({ event }) => ({
    EventBusName: bus,
    Source: TASK_EVENT_SOURCE,
    DetailType: TASK_EVENT_DETAIL_TYPE,
    Time: new Date(event.time),
    Detail: JSON.stringify(event),
  }));
  for (let round = 0; entries.length > 0; round++) {
    if (round === PUT_EVENTS_ROUNDS) {
      throw new Error(`PutEvents refused ${entries.length} entries ${PUT_EVENTS_ROUNDS} times`);
    }
    if (round > 0) await pause(100 * 2 ** (round - 1) * (1 + Math.random()));
    const response = await send(new PutEventsCommand({ Entries: entries }));
    // Entries answer in request order; a failed one has an ErrorCode.
    entries = entries.filter((_, i) => response.Entries?.[i]?.ErrorCode !== undefined);
  }
}

/** One message per event and webhook that takes it, on the FIFO queue. */
export async function queueDeliveries(
  chunk: readonly StreamChange[],
  targets: readonly DeployedWebhook[],
): Promise<void> {
  if (!queueUrl || targets.length === 0) return;
  const messages = chunk.flatMap(({ event }) =>
    targets.filter((target) => webhookTakes(target, event)).map((target) => ({ webhook: target.index, event })),
  );
  for (let start = 0; start < messages.length; start += 10) {
    const batch = messages.slice(start, start + 10);
    const response = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: batch.map((delivery, i) => ({
          Id: String(i),
          MessageBody: JSON.stringify(delivery satisfies WebhookDelivery),
          MessageGroupId: `${delivery.webhook}:${delivery.event.taskId}`,
          MessageDeduplicationId: createHash('sha256').update(`${delivery.webhook}:${delivery.event.id}`).digest('hex'),
        })),
      }),
    );
    if ((response.Failed ?? []).length > 0) {
      throw new Error(
        `SendMessageBatch refused ${response.Failed!.length} webhook deliveries: ${response.Failed![0]!.Code}`,
      );
    }
  }
}
