/**
 * Scheduler Lambda: started every minute by EventBridge Scheduler, it takes the scheduler lease
 * and ticks until shortly before its timeout, then hands the lease back. Reserved concurrency 1
 * plus the lease keep one scheduler active; the next invocation resumes from DynamoDB.
 */
import type { Context } from 'aws-lambda';
import { servicesFromEnvironment } from '../app/wiring.ts';
import { METRIC } from '../infra/telemetry.ts';
import { Scheduler } from '../scheduler/scheduler.ts';
import { LAMBDA_POLL_SECONDS, runSchedulerLoop } from '../scheduler/scheduler-loop.ts';
import { logger, metrics, taskLogger } from './observability.ts';

/** Stop this long before the Lambda timeout so the lease and held messages are handed back. */
const SAFETY_MARGIN_MS = 15_000;

/** The configured idle poll, shortened to end within `msLeft`; at least 1 s (SQS whole seconds). */
export function idleWait(configuredSeconds: number, msLeft: number): number {
  return Math.max(1, Math.min(configuredSeconds, Math.floor(msLeft / 1000)));
}

export const handler = async (_event: unknown, context: Context) => {
  logger.addContext(context);
  const services = servicesFromEnvironment();
  const stop = new AbortController();
  let ticks = 0;
  let dispatched = 0;
  try {
    await runSchedulerLoop({
      control: services.control,
      signal: stop.signal,
      ownerId: `lambda-${context.awsRequestId}`,
      keepGoing: () => context.getRemainingTimeInMillis() > SAFETY_MARGIN_MS,
      waitSeconds: LAMBDA_POLL_SECONDS.busy,
      // Every poll ends before the safety margin begins, so handing back never waits on one.
      idleWaitSeconds: () => idleWait(LAMBDA_POLL_SECONDS.idle, context.getRemainingTimeInMillis() - SAFETY_MARGIN_MS),
      logger: taskLogger,
      createScheduler: () =>
        new Scheduler({
          store: services.store,
          control: services.control,
          queues: services.queues,
          config: services.config,
          logger: taskLogger,
        }),
      onTick: (result) => {
        ticks++;
        dispatched += result.dispatched;
      },
      onLease: (event, lease) => logger.info(`scheduler lease ${event}`, { token: lease.token }),
    });
    metrics.addMetric(METRIC.tasksDispatched, 'Count', dispatched);
    metrics.addMetric(METRIC.schedulerLoopCompleted, 'Count', 1);
  } catch (error) {
    metrics.addMetric(METRIC.schedulerErrors, 'Count', 1);
    throw error;
  } finally {
    metrics.publishStoredMetrics();
  }
  return { ticks, dispatched };
};
