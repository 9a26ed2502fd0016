/**
 * Lambda worker, one function per memory class (runtime/infra/resources.ts). The entry class's
 * function has an SQS event source on `worker-lambda`: each record is one dispatched attempt,
 * run here when it fits this class, else handed to its class's function with an asynchronous
 * invoke whose event is the worker message itself (runtime/worker/lambda-classes.ts).
 *
 * A task that fails is recorded in DynamoDB (and retried through the scheduler), so it is NOT a
 * batch item failure; only an infrastructure error (store, queue or invoke unreachable) fails
 * the record, which SQS redelivers and finally dead-letters to the redrive drain. On the invoke
 * path such an error fails the invocation, which Lambda retries (twice); past that the task's
 * dispatch lease runs out and the reconciler dispatches it again.
 */
import type { PartialItemFailureResponse } from '@aws-lambda-powertools/batch/types';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { WorkerMessage } from '../adapters/queues.ts';
import { attemptDepsFromEnvironment, lambdaWorkerFromEnvironment, servicesFromEnvironment } from '../app/wiring.ts';
import { flushTraces } from '../telemetry/tracing.ts';
import { type LambdaWorkerOutcome, runLambdaWorkerMessage } from '../worker/lambda-classes.ts';
import { countOutcome, invocationRemainingMs, logger, metrics, sqsBatchHandler, taskLogger } from './observability.ts';

async function runMessage(message: WorkerMessage, context: Context | undefined): Promise<void> {
  const services = servicesFromEnvironment();
  const remainingMs = invocationRemainingMs(context);
  const attempt = attemptDepsFromEnvironment(services, taskLogger);
  const outcome = await runLambdaWorkerMessage(
    { attempt: remainingMs ? { ...attempt, remainingMs } : attempt, ...lambdaWorkerFromEnvironment() },
    message,
  );
  logOutcome(message, outcome);
}

function logOutcome(message: WorkerMessage, outcome: LambdaWorkerOutcome): void {
  if (outcome.kind === 'handed-off') {
    logger.info('attempt handed to its memory class', { taskId: message.taskId, memoryMiB: outcome.memoryMiB });
    return;
  }
  if (outcome.kind === 'skipped') logger.info('attempt skipped', { taskId: message.taskId, reason: outcome.reason });
  // The same outcome metrics as the Fargate worker's (one table, in observability.ts).
  countOutcome(outcome);
}

const batchHandler = sqsBatchHandler((record: SQSRecord, context) =>
  runMessage(JSON.parse(record.body) as WorkerMessage, context),
);

const isSqsEvent = (event: SQSEvent | WorkerMessage): event is SQSEvent => 'Records' in event;

/** The entry class's event source delivers an SQS batch; the entry invokes a class function with one message. */
export function handler(event: SQSEvent, context: Context): Promise<PartialItemFailureResponse>;
export function handler(event: WorkerMessage, context: Context): Promise<undefined>;
export async function handler(event: SQSEvent | WorkerMessage, context: Context) {
  if (isSqsEvent(event)) return batchHandler(event, context);
  // Invoked by the entry worker with one message for this class.
  logger.addContext(context);
  try {
    await runMessage(event, context);
  } finally {
    metrics.publishStoredMetrics();
    await flushTraces();
  }
  return undefined;
}
