/**
 * Lambda worker: SQS event source on the `worker-lambda` queue. Each record is one dispatched
 * attempt. A task that fails is recorded in DynamoDB (and retried through the scheduler), so it
 * is NOT a batch item failure; only an infrastructure error (store or queue unreachable) fails
 * the record, which SQS redelivers and finally dead-letters to the redrive drain.
 */
import type { SQSRecord } from 'aws-lambda';
import type { WorkerMessage } from '../adapters/queues.ts';
import { attemptDepsFromEnvironment, servicesFromEnvironment } from '../app/wiring.ts';
import { runAttempt } from '../worker/run-attempt.ts';
import { countOutcome, logger, sqsBatchHandler, taskLogger } from './observability.ts';

async function recordHandler(record: SQSRecord): Promise<void> {
  const services = servicesFromEnvironment();
  const message = JSON.parse(record.body) as WorkerMessage;
  const outcome = await runAttempt(attemptDepsFromEnvironment(services, taskLogger), message);
  if (outcome.kind === 'skipped') logger.info('attempt skipped', { taskId: message.taskId, reason: outcome.reason });
  // The same outcome metrics as the Fargate worker's (one table, in observability.ts).
  countOutcome(outcome);
}

export const handler = sqsBatchHandler(recordHandler);
