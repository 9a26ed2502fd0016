/**
 * Scheduled submits (EventBridge Scheduler on AWS, the local schedule runner on a laptop) share
 * this: the idempotency key is the schedule name plus the scheduled instant, so however often a
 * firing is delivered, one task exists per firing. `{{date}}` in string payload values becomes the
 * scheduled date (YYYY-MM-DD) in the schedule's time zone, so a nightly job knows which night it
 * covers.
 */
import type { ScheduleConfig } from '../core/config.ts';
import { parseAwsCron } from '../core/cron.ts';
import { ConfigError, SchedulerError } from '../core/errors.ts';
import type { PriorityTier } from '../core/task.ts';
import type { SubmitInput, TaskService } from './task-service.ts';

export interface ScheduledFiring {
  readonly scheduleName: string;
  readonly scheduledTime: string;
  /** The schedule's IANA time zone: `{{date}}` is the scheduled date there. @default 'UTC' */
  readonly timezone?: string | undefined;
  readonly task: {
    readonly tenantId: string;
    readonly type: string;
    readonly payload?: unknown;
    readonly priority?: PriorityTier | undefined;
    readonly timeoutSeconds?: number | undefined;
    readonly maxAttempts?: number | undefined;
  };
}

export function scheduledSubmitInput(firing: ScheduledFiring): SubmitInput {
  const at = new Date(firing.scheduledTime);
  // Minute granularity (EventBridge Scheduler's): redeliveries of one firing share the key.
  const minute = at.toISOString().slice(0, 16);
  const date = calendarDate(at, firing.timezone ?? 'UTC');
  return {
    ...firing.task,
    payload: substitute(firing.task.payload ?? {}, date),
    idempotencyKey: `schedule:${firing.scheduleName}:${minute}`,
  };
}

/** `at`'s date (YYYY-MM-DD) on the calendar of `timeZone`. */
function calendarDate(at: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(at);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('year').padStart(4, '0')}-${part('month')}-${part('day')}`;
}

function substitute(value: unknown, date: string): unknown {
  if (typeof value === 'string') return value.replaceAll('{{date}}', date);
  if (Array.isArray(value)) return value.map((item) => substitute(item, date));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, date)]));
  }
  return value;
}

/**
 * Every schedule's task as its next firing would submit it (type known, payload valid, fits a
 * pool; `{{date}}` the date of that firing, so a Monday-only payload of a Monday schedule passes
 * on a Thursday), checked once at start (`npm start`, `tasks dev`) and at synth (the CDK stack):
 * a mistake is refused before the runtime serves or anything deploys, not logged at the first
 * firing, maybe at 2 a.m. Disabled schedules are checked too: enabling one should not be what
 * reveals it.
 */
export function validateSchedules(
  schedules: readonly ScheduleConfig[],
  tasks: Pick<TaskService, 'resolveSpec'>,
  now: Date,
  /** Which schedules to check (the others are left out; the messages keep their indexes). @default all */
  only: (schedule: ScheduleConfig) => boolean = () => true,
): void {
  const problems: string[] = [];
  for (const [index, schedule] of schedules.entries()) {
    if (!only(schedule)) continue;
    try {
      // (A cron that never fires again, such as a past year's, is checked as if it fired now.)
      const firing = parseAwsCron(schedule.cron, schedule.timezone).nextAfter(now) ?? now;
      tasks.resolveSpec(
        scheduledSubmitInput({
          scheduleName: schedule.name,
          scheduledTime: firing.toISOString(),
          timezone: schedule.timezone,
          task: schedule.task,
        }),
        now,
      );
    } catch (error) {
      if (!(error instanceof SchedulerError)) throw error;
      const details = error.details === undefined ? '' : ` ${JSON.stringify(error.details)}`;
      problems.push(`schedules[${index}] "${schedule.name}": ${error.code}: ${error.message}${details}`);
    }
  }
  if (problems.length > 0) {
    throw new ConfigError(`Invalid schedules:\n  ${problems.join('\n  ')}`, { problems });
  }
}
