/**
 * Redrive handler: a scheduled drain of the worker and tier dead-letter queues (EventBridge
 * Scheduler invokes it every few minutes; no event source mapping long-polls the empty queues,
 * which cost about $0.26 a month each). A dead-lettered worker message becomes a retry (back to
 * QUEUED with backoff, announced on its tier queue) or a final FAILED with the last error,
 * decided by the core (`deadLetter`) from the attempts counted in DynamoDB. A dead-lettered tier
 * message is announced again if its task is still QUEUED, and dropped otherwise.
 */
import type { Context } from 'aws-lambda';
import { servicesFromEnvironment, typeQueuesFromEnvironment } from '../app/wiring.ts';
import { drainEventDeadLetters, eventQueuesFromEnvironment } from '../events/dead-letters.ts';
import { METRIC } from '../infra/telemetry.ts';
import { type DrainReport, drainDeadLetters, drainedDeadLetterQueues } from '../worker/redrive.ts';
import { logger, metrics, taskLogger } from './observability.ts';

/** Stop receiving this long before the timeout, so every received dead letter is handled. */
const STOP_BEFORE_TIMEOUT_MS = 15_000;

export async function handler(_event: unknown, context: Context): Promise<DrainReport> {
  logger.addContext(context);
  try {
    const services = servicesFromEnvironment();
    const report = await drainDeadLetters(services, {
      // The pools' and tiers' dead-letter queues, and those of the types the user's own code runs.
      queueIds: [
        ...drainedDeadLetterQueues(services.config.scheduler.shards),
        ...Object.values(typeQueuesFromEnvironment()).map((queue) => queue.deadLetter!.id),
      ],
      outOfTime: () => context.getRemainingTimeInMillis() < STOP_BEFORE_TIMEOUT_MS,
      // Counted on arrival, before handling, so the alarm on it fires even when handling keeps
      // failing (a dead letter left in its queue is counted again by every drain).
      onReceived: (_queueId, count) => metrics.addMetric(METRIC.deadLettered, 'Count', count),
      logger: taskLogger,
    });
    if (report.received > 0) logger.warn('dead letters drained', { ...report });
    const eventQueues = eventQueuesFromEnvironment();
    if (eventQueues) {
      const events = await drainEventDeadLetters(servicesFromEnvironment().clients.sqs, eventQueues, {
        onReceived: (count) => metrics.addMetric(METRIC.deadLettered, 'Count', count),
        logger: taskLogger,
      });
      if (events.failedRecords + events.redelivered > 0) logger.warn('task event dead letters', { ...events });
    }
    return report;
  } finally {
    metrics.publishStoredMetrics();
  }
}
