/**
 * Webhook delivery on AWS: consumes the FIFO delivery queue (group = webhook + task), POSTs each
 * event signed with its webhook's secret (read from Secrets Manager, cached for five minutes), the
 * same request the local relay sends (runtime/events/webhooks.ts). A refused or unanswered POST
 * backs off (the message's visibility, 1 s doubling to 5 minutes by its receive count) and fails
 * the rest of its group in this batch, so a task's later events never overtake it; about two
 * days of failures move it to the dead-letter queue (alarmed).
 *
 * A POST starts only while one can finish within the invocation (POST_NEEDS_MS left): Lambda
 * stops an invocation at its timeout and takes the whole batch as failed, so every message of it
 * comes back, those already delivered too, and a batch of slow deliveries would time out again
 * and again without getting past its first few. The deliveries left are reported as batch item
 * failures and made visible again at once; what was delivered is deleted.
 */
import { processPartialResponse, SqsFifoPartialProcessorAsync } from '@aws-lambda-powertools/batch';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ChangeMessageVisibilityBatchCommand, ChangeMessageVisibilityCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { AWS_CALL_TIMEOUTS, onAws } from '../adapters/aws-clients.ts';
import { webhookRetryDelayMs } from '../core/events.ts';
import { deployedWebhooksFromEnvironment, postWebhook, WEBHOOK_TIMEOUT_MS } from '../events/webhooks.ts';
import { ENV } from '../infra/resources.ts';
import { logger } from './observability.ts';
import type { WebhookDelivery } from './task-events.ts';

const secrets = new SecretsManagerClient(onAws());
const sqs = new SQSClient(onAws(AWS_CALL_TIMEOUTS.sqsMs));
const webhooks = deployedWebhooksFromEnvironment();
const queueUrl = process.env[ENV.webhookQueueUrl];
const SECRET_CACHE_MS = 300_000;
const cached = new Map<string, { secret: string; atMs: number }>();
const processor = new SqsFifoPartialProcessorAsync();
/** What a POST may take (its timeout), with a margin for the secret's read and a visibility call. */
const POST_NEEDS_MS = WEBHOOK_TIMEOUT_MS + 2_000;

/** A delivery not tried in this invocation: too little of it was left for one more POST. */
class OutOfTimeError extends Error {
  constructor(remainingMs: number) {
    super(`Not tried: ${remainingMs} ms left in the invocation, a POST may take ${WEBHOOK_TIMEOUT_MS} ms`);
    this.name = 'OutOfTimeError';
  }
}

async function secretOf(secretArn: string): Promise<string> {
  const hit = cached.get(secretArn);
  if (hit && Date.now() - hit.atMs < SECRET_CACHE_MS) return hit.secret;
  const { SecretString } = await secrets.send(new GetSecretValueCommand({ SecretId: secretArn }));
  if (!SecretString) throw new Error(`Secret ${secretArn} has no string value`);
  cached.set(secretArn, { secret: SecretString, atMs: Date.now() });
  return SecretString;
}

async function deliver(record: SQSRecord): Promise<void> {
  const { webhook, event } = JSON.parse(record.body) as WebhookDelivery;
  const target = webhooks.find((candidate) => candidate.index === webhook);
  // A webhook removed from the configuration since: nothing to deliver to.
  if (!target) return;
  try {
    await postWebhook({ url: target.url, secret: await secretOf(target.secretArn) }, event);
  } catch (error) {
    const receives = Number(record.attributes.ApproximateReceiveCount ?? 1);
    const delaySeconds = Math.ceil(webhookRetryDelayMs(receives) / 1000);
    await setVisibility(record, delaySeconds);
    logger.warn('webhook delivery failed; retrying', { url: target.url, eventId: event.id, receives, delaySeconds });
    throw error;
  }
}

/** When the record comes back (best effort: unchanged, it comes back after the queue's visibility). */
async function setVisibility(record: SQSRecord, seconds: number): Promise<void> {
  if (!queueUrl) return;
  await sqs
    .send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: record.receiptHandle,
        VisibilityTimeout: seconds,
      }),
    )
    .catch(() => undefined);
}

/**
 * Make messages visible again at once. For the deliveries Powertools did not try (later ones of a
 * group whose delivery failed, `skipGroupOnError`): SQS hands out no message of a FIFO group while
 * one of its messages is in flight, so left hidden for the queue's visibility timeout they would
 * hold the group, and the failed one's retry would wait that long whatever its backoff.
 */
async function visibleAgain(records: readonly SQSRecord[]): Promise<void> {
  if (!queueUrl || records.length === 0) return;
  await sqs
    .send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: records.map((record, i) => ({
          Id: String(i),
          ReceiptHandle: record.receiptHandle,
          VisibilityTimeout: 0,
        })),
      }),
    )
    .catch(() => undefined);
}

export const handler = async (event: SQSEvent, context: Context) => {
  logger.addContext(context);
  // The records this invocation tried, each of which set its own visibility if it failed.
  const tried = new Set<string>();
  const deliverInTime = async (record: SQSRecord): Promise<void> => {
    tried.add(record.messageId);
    const remainingMs = context.getRemainingTimeInMillis();
    if (remainingMs < POST_NEEDS_MS) {
      // Back at once for the next invocation (it was not tried, so no backoff).
      await setVisibility(record, 0);
      throw new OutOfTimeError(remainingMs);
    }
    await deliver(record);
  };
  const untried = (ids: ReadonlySet<string>) =>
    event.Records.filter((record) => ids.has(record.messageId) && !tried.has(record.messageId));
  let response: Awaited<ReturnType<typeof processPartialResponse>>;
  try {
    response = await processPartialResponse(event, deliverInTime, processor, { context, skipGroupOnError: true });
  } catch (error) {
    // Every delivery failed (Powertools throws): those not tried go back at once all the same.
    await visibleAgain(untried(new Set(event.Records.map((record) => record.messageId))));
    throw error;
  }
  await visibleAgain(untried(new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier))));
  return response;
};
