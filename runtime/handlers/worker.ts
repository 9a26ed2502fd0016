/**
 * Lambda worker: SQS event source on the `worker-lambda` queue. Each record is one dispatched
 * attempt. A task that fails is recorded in DynamoDB (and retried through the scheduler), so it
 * is NOT a batch item failure; only an infrastructure error (store or queue unreachable) fails
 * the record, which SQS redelivers and finally dead-letters to the redrive handler.
 */
import type { SQSRecord } from 'aws-lambda';
import type { WorkerMessage } from '../adapters/queues.ts';
import { attemptDepsFromEnvironment, servicesFromEnvironment } from '../app/wiring.ts';
import type { TaskState } from '../core/task.ts';
import { METRIC, type MetricName } from '../infra/telemetry.ts';
import { runAttempt } from '../worker/run-attempt.ts';
import { logger, metrics, sqsBatchHandler, taskLogger } from './observability.ts';

async function recordHandler(record: SQSRecord): Promise<void> {
  const services = servicesFromEnvironment();
  const message = JSON.parse(record.body) as WorkerMessage;
  const outcome = await runAttempt(attemptDepsFromEnvironment(services, taskLogger), message);
  if (outcome.kind === 'skipped') {
    logger.info('attempt skipped', { taskId: message.taskId, reason: outcome.reason });
    return;
  }
  const metric = OUTCOME_METRIC[outcome.task.state];
  if (metric) metrics.addMetric(metric, 'Count', 1);
}

export const handler = sqsBatchHandler(recordHandler);

/** Settled states of an attempt and the metric each counts toward. */
const OUTCOME_METRIC: Partial<Record<TaskState, MetricName>> = {
  SUCCEEDED: METRIC.tasksSucceeded,
  FAILED: METRIC.tasksFailed,
  QUEUED: METRIC.tasksRetried,
};
