/**
 * One configured logger and metrics instance per Lambda execution environment (Powertools).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DEFAULT_SERVICE_NAME, METRICS_NAMESPACE } from '../infra/telemetry.ts';
import type { TaskLogger } from '../task-types/define.ts';

export const logger = new Logger({ serviceName: DEFAULT_SERVICE_NAME });
export const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: DEFAULT_SERVICE_NAME });

/** The task handlers' logger, backed by Powertools (structured JSON with the task's keys). */
export const taskLogger: TaskLogger = {
  info: (message, extra) => logger.info(message, extra ?? {}),
  warn: (message, extra) => logger.warn(message, extra ?? {}),
  error: (message, extra) => logger.error(message, extra ?? {}),
};
