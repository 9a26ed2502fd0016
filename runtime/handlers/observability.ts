/**
 * One configured logger and metrics instance per Lambda execution environment (Powertools).
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { TaskLogger } from '../core/logger.ts';
import type { TaskState } from '../core/task.ts';
import { DEFAULT_SERVICE_NAME, METRIC, METRICS_NAMESPACE, type MetricName } from '../infra/telemetry.ts';
import type { AttemptOutcome } from '../worker/run-attempt.ts';

export const logger = new Logger({ serviceName: DEFAULT_SERVICE_NAME });
export const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: DEFAULT_SERVICE_NAME });

/**
 * The time left in a Lambda invocation, for an attempt it runs (run-attempt.ts `remainingMs`);
 * undefined for a context without it (tests' stand-ins).
 */
export function invocationRemainingMs(context: Context | undefined): (() => number) | undefined {
  return typeof context?.getRemainingTimeInMillis === 'function' ? () => context.getRemainingTimeInMillis() : undefined;
}

/** The task handlers' logger, backed by Powertools (structured JSON with the task's keys). */
export const taskLogger: TaskLogger = {
  // Each attempt's QUEUED/DISPATCHED/RUNNING lines: shown with POWERTOOLS_LOG_LEVEL=DEBUG.
  debug: (message, extra) => logger.debug(message, extra ?? {}),
  info: (message, extra) => logger.info(message, extra ?? {}),
  warn: (message, extra) => logger.warn(message, extra ?? {}),
  error: (message, extra) => logger.error(message, extra ?? {}),
};

/**
 * An SQS-triggered handler with partial batch responses: each record goes to `recordHandler`,
 * a record that throws is reported as a batch item failure (SQS redelivers it), and the
 * metrics the records added are published once per invocation.
 */
export function sqsBatchHandler(recordHandler: (record: SQSRecord, context: Context) => Promise<void>) {
  const processor = new BatchProcessor(EventType.SQS);
  return async (event: SQSEvent, context: Context) => {
    logger.addContext(context);
    try {
      return await processPartialResponse(event, (record: SQSRecord) => recordHandler(record, context), processor, {
        context,
      });
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}

/** Settled states of an attempt and the metric each counts toward. */
const OUTCOME_METRIC: Partial<Record<TaskState, MetricName>> = {
  SUCCEEDED: METRIC.tasksSucceeded,
  FAILED: METRIC.tasksFailed,
  QUEUED: METRIC.tasksRetried,
};

/** Count a settled attempt (Lambda and Fargate workers alike); skipped deliveries count nothing. */
export function countOutcome(outcome: AttemptOutcome): void {
  if (outcome.kind === 'skipped') return;
  const metric = OUTCOME_METRIC[outcome.task.state];
  if (metric) metrics.addMetric(metric, 'Count', 1);
}
