/**
 * The configured schedules on a laptop: what EventBridge Scheduler does on AWS. Each firing
 * submits through the same code path as the scheduled-submit Lambda, with the same idempotency
 * key (schedule + scheduled minute), so a firing is one task however often it is delivered.
 * Like EventBridge, firings missed while the runtime was stopped are not replayed. A submit that
 * fails for want of the store (not one the task service refuses) is retried with backoff, as
 * EventBridge Scheduler retries its target (the stack's retry policy: 10 retries).
 */
import { scheduledSubmitInput } from '../runtime/app/scheduled.ts';
import type { TaskService } from '../runtime/app/task-service.ts';
import type { ScheduleConfig } from '../runtime/core/config.ts';
import { parseAwsCron } from '../runtime/core/cron.ts';
import { SchedulerError } from '../runtime/core/errors.ts';
import type { TaskLogger } from '../runtime/core/logger.ts';

/** setTimeout's ceiling is about 24.8 days; longer waits re-arm in steps. */
const MAX_TIMER_MS = 2_000_000_000;

/** Retries of a firing whose submit failed (NightlySchedules' default retryAttempts). */
const SUBMIT_RETRIES = 10;
/** 1 s, 2 s, 4 s, … up to a minute between retries. */
const defaultRetryDelayMs = (retry: number) => Math.min(60_000, 1000 * 2 ** (retry - 1));

export interface ScheduleRunner {
  /** Next firing per enabled schedule (for logs and tests). */
  nextFirings(): Record<string, string | undefined>;
  stop(): void;
}

export function startScheduleRunner(options: {
  schedules: readonly ScheduleConfig[];
  tasks: TaskService;
  logger: TaskLogger;
  now?: () => Date;
  /** Wait before retry n (1-based) of a failed submit. */
  retryDelayMs?: (retry: number) => number;
}): ScheduleRunner {
  const now = options.now ?? (() => new Date());
  const timers = new Map<string, NodeJS.Timeout>();
  const upcoming = new Map<string, Date | undefined>();
  let stopped = false;

  const arm = (schedule: ScheduleConfig, after: Date) => {
    if (stopped) return;
    const cron = parseAwsCron(schedule.cron, schedule.timezone);
    const next = cron.nextAfter(after);
    upcoming.set(schedule.name, next);
    if (!next) return;
    const wait = next.getTime() - now().getTime();
    const timer = setTimeout(
      () => {
        if (next.getTime() > now().getTime()) return arm(schedule, after); // re-arm a long wait
        fire(schedule, next).finally(() => arm(schedule, next));
      },
      Math.max(0, Math.min(wait, MAX_TIMER_MS)),
    );
    timer.unref();
    timers.set(schedule.name, timer);
  };

  const retryDelayMs = options.retryDelayMs ?? defaultRetryDelayMs;
  const fire = async (schedule: ScheduleConfig, at: Date) => {
    // The idempotency key (schedule + scheduled minute) makes a retry of a submit that did land
    // return that task instead of creating a second.
    for (let retry = 1; ; retry += 1) {
      const error = await submitOnce(schedule, at);
      if (error === undefined) return;
      const refused = error instanceof SchedulerError; // the task service's answer: retrying cannot help
      if (refused || retry > SUBMIT_RETRIES || stopped) {
        options.logger.error(`schedule ${schedule.name} failed to submit`, {
          error: String(error),
          ...(refused ? {} : { attempts: retry }),
        });
        return;
      }
      options.logger.warn(`schedule ${schedule.name} submit failed; retrying`, { retry, error: String(error) });
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs(retry)).unref());
      if (stopped) return;
    }
  };

  const submitOnce = async (schedule: ScheduleConfig, at: Date): Promise<unknown> => {
    try {
      const { created, task } = await options.tasks.submit(
        scheduledSubmitInput({
          scheduleName: schedule.name,
          scheduledTime: at.toISOString(),
          timezone: schedule.timezone,
          task: schedule.task,
        }),
      );
      options.logger.info(`schedule ${schedule.name} fired`, { taskId: task.taskId, created });
      return undefined;
    } catch (error) {
      return error;
    }
  };

  for (const schedule of options.schedules) if (schedule.enabled) arm(schedule, now());

  return {
    nextFirings: () => Object.fromEntries([...upcoming].map(([name, at]) => [name, at?.toISOString()])),
    stop() {
      stopped = true;
      for (const timer of timers.values()) clearTimeout(timer);
    },
  };
}
