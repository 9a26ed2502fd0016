/**
 * Redrive handler on the worker dead-letter queues: a dead-lettered worker message becomes a
 * retry (back to QUEUED with backoff, announced on its tier queue) or a final FAILED with the
 * last error, decided by the core (`deadLetter`) from the attempts counted in DynamoDB.
 */
import type { SQSRecord } from 'aws-lambda';
import type { WorkerMessage } from '../adapters/queues.ts';
import { servicesFromEnvironment } from '../app/wiring.ts';
import { METRIC } from '../infra/telemetry.ts';
import { redriveDeadLetter } from '../worker/redrive.ts';
import { logger, metrics, sqsBatchHandler } from './observability.ts';

async function recordHandler(record: SQSRecord): Promise<void> {
  const services = servicesFromEnvironment();
  const task = await redriveDeadLetter(services, JSON.parse(record.body) as WorkerMessage);
  metrics.addMetric(METRIC.deadLettered, 'Count', 1);
  if (task) logger.info(`dead letter settled: task ${task.state}`, { taskId: task.taskId, attempts: task.attempts });
}

export const handler = sqsBatchHandler(recordHandler);
