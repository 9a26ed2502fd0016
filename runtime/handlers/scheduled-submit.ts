/**
 * Target of the EventBridge Scheduler schedules in the configuration (nightly jobs). It submits
 * through the same code path as the API, with an idempotency key derived from the schedule and
 * its scheduled time, so a retried or duplicated invocation creates the task once.
 */
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { scheduledSubmitInput } from '../app/scheduled.ts';
import { servicesFromEnvironment } from '../app/wiring.ts';
import { PRIORITY_TIERS } from '../core/task.ts';
import { METRIC } from '../infra/telemetry.ts';
import { logger, metrics } from './observability.ts';

const eventSchema = z.strictObject({
  scheduleName: z.string().min(1),
  /** `<aws.scheduler.scheduled-time>`: the instant the schedule fired (ISO 8601). */
  scheduledTime: z.iso.datetime({ offset: true }),
  /** The schedule's time zone: `{{date}}` is the scheduled date there (absent: UTC). */
  timezone: z.string().min(1).optional(),
  task: z.strictObject({
    tenantId: z.string().min(1),
    type: z.string().min(1),
    payload: z.unknown().optional(),
    priority: z.enum(PRIORITY_TIERS).optional(),
    timeoutSeconds: z.number().int().positive().optional(),
    maxAttempts: z.number().int().positive().optional(),
  }),
});

export const handler = async (event: unknown, context: Context) => {
  logger.addContext(context);
  const parsed = eventSchema.parse(event);
  const services = servicesFromEnvironment();
  const { created, task } = await services.tasks.submit(scheduledSubmitInput(parsed));
  metrics.addMetric(METRIC.tasksSubmitted, 'Count', created ? 1 : 0);
  metrics.publishStoredMetrics();
  logger.info(created ? 'scheduled task submitted' : 'scheduled task already submitted', {
    taskId: task.taskId,
    schedule: parsed.scheduleName,
  });
  return { taskId: task.taskId, created };
};
