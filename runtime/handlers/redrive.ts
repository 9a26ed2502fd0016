/**
 * Redrive handler on the dead-letter queues. A dead-lettered worker message becomes a retry (back
 * to QUEUED with backoff, announced on its tier queue) or a final FAILED with the last error,
 * decided by the core (`deadLetter`) from the attempts counted in DynamoDB. A dead-lettered tier
 * message is announced again if its task is still QUEUED, and dropped otherwise.
 */
import type { SQSRecord } from 'aws-lambda';
import type { WorkerMessage } from '../adapters/queues.ts';
import { servicesFromEnvironment } from '../app/wiring.ts';
import { METRIC } from '../infra/telemetry.ts';
import { isTierMessage, redriveDeadLetter, redriveTierDeadLetter } from '../worker/redrive.ts';
import { logger, metrics, sqsBatchHandler } from './observability.ts';

async function recordHandler(record: SQSRecord): Promise<void> {
  const services = servicesFromEnvironment();
  const body: unknown = JSON.parse(record.body);
  // Counted on arrival, before handling, so the alarm on it fires even when handling keeps failing.
  metrics.addMetric(METRIC.deadLettered, 'Count', 1);
  if (isTierMessage(body)) {
    const outcome = await redriveTierDeadLetter(services, body);
    logger.warn(`tier dead letter ${outcome}`, { taskId: body.taskId, priority: body.priority });
    return;
  }
  const task = await redriveDeadLetter(services, body as WorkerMessage);
  if (task) logger.info(`dead letter settled: task ${task.state}`, { taskId: task.taskId, attempts: task.attempts });
}

export const handler = sqsBatchHandler(recordHandler);
