/**
 * Webhook delivery on AWS: consumes the FIFO delivery queue (group = webhook + task), POSTs each
 * event signed with its webhook's secret (read from Secrets Manager, cached for five minutes), the
 * same request the local relay sends (runtime/events/webhooks.ts). A refused or unanswered POST
 * backs off (the message's visibility, 1 s doubling to 5 minutes by its receive count) and fails
 * the rest of its group in this batch, so a task's later events never overtake it; about two
 * days of failures move it to the dead-letter queue (alarmed).
 */
import { processPartialResponse, SqsFifoPartialProcessorAsync } from '@aws-lambda-powertools/batch';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ChangeMessageVisibilityCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { webhookRetryDelayMs } from '../core/events.ts';
import { deployedWebhooksFromEnvironment, postWebhook } from '../events/webhooks.ts';
import { ENV } from '../infra/resources.ts';
import { logger } from './observability.ts';
import type { WebhookDelivery } from './task-events.ts';

const secrets = new SecretsManagerClient({});
const sqs = new SQSClient({});
const webhooks = deployedWebhooksFromEnvironment();
const queueUrl = process.env[ENV.webhookQueueUrl];
const SECRET_CACHE_MS = 300_000;
const cached = new Map<string, { secret: string; atMs: number }>();
const processor = new SqsFifoPartialProcessorAsync();

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
    if (queueUrl) {
      await sqs
        .send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: queueUrl,
            ReceiptHandle: record.receiptHandle,
            VisibilityTimeout: delaySeconds,
          }),
        )
        .catch(() => undefined);
    }
    logger.warn('webhook delivery failed; retrying', { url: target.url, eventId: event.id, receives, delaySeconds });
    throw error;
  }
}

export const handler = async (event: SQSEvent, context: Context) => {
  logger.addContext(context);
  return processPartialResponse(event, deliver, processor, { context, skipGroupOnError: true });
};
