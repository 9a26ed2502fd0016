/**
 * EventBridge Scheduler, played for the schedules of a stack deployed into moto (moto's
 * CloudFormation does not create AWS::Scheduler::Schedule): each enabled schedule of the deployed
 * template invokes its target function asynchronously with its Input, on its rate or cron
 * expression, `<aws.scheduler.scheduled-time>` and `<aws.scheduler.execution-id>` substituted as
 * EventBridge does. `fire` runs one now (the check fires the nightly job instead of waiting for
 * 2 a.m.).
 */
import { randomUUID } from 'node:crypto';
import { parseAwsCron } from '../../runtime/core/cron.ts';
import type { DeployedSchedule } from './deployed-stack.ts';

export interface SchedulePlayer {
  /** Fire one schedule now (its scheduled time: now, to the minute); returns the Input sent. */
  fire(logicalId: string): unknown;
  readonly firings: ReadonlyMap<string, number>;
  stop(): void;
}

const RATE = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/;
const UNIT_MS: Record<string, number> = {
  minute: 60_000,
  minutes: 60_000,
  hour: 3_600_000,
  hours: 3_600_000,
  day: 86_400_000,
  days: 86_400_000,
};

export function startSchedulePlayer(options: {
  readonly schedules: readonly DeployedSchedule[];
  /** The target's physical function name, from its logical id. */
  readonly functionName: (logicalId: string) => string;
  readonly invokeAsync: (functionName: string, event: unknown) => void;
}): SchedulePlayer {
  const firings = new Map<string, number>();
  const timers: NodeJS.Timeout[] = [];
  let stopped = false;
  const byId = new Map(options.schedules.map((schedule) => [schedule.logicalId, schedule]));

  function fireAt(schedule: DeployedSchedule, at: Date): unknown {
    const minute = new Date(Math.floor(at.getTime() / 60_000) * 60_000);
    const input = JSON.parse(
      schedule.input
        .replaceAll('<aws.scheduler.scheduled-time>', minute.toISOString().replace('.000Z', 'Z'))
        .replaceAll('<aws.scheduler.execution-id>', randomUUID())
        .replaceAll('<aws.scheduler.attempt-number>', '1'),
    ) as unknown;
    firings.set(schedule.logicalId, (firings.get(schedule.logicalId) ?? 0) + 1);
    options.invokeAsync(options.functionName(schedule.targetLogicalId), input);
    return input;
  }

  for (const schedule of options.schedules) {
    if (!schedule.enabled) continue;
    const rate = RATE.exec(schedule.expression);
    if (rate) {
      const every = Number(rate[1]) * UNIT_MS[rate[2]!]!;
      const timer = setInterval(() => fireAt(schedule, new Date()), every);
      timer.unref();
      timers.push(timer);
      continue;
    }
    const cron = parseAwsCron(schedule.expression, schedule.timezone);
    const arm = (after: Date) => {
      const next = cron.nextAfter(after);
      if (!next || stopped) return;
      const wait = next.getTime() - Date.now();
      // Beyond setTimeout's range (about 24.8 days) nothing fires during a check.
      if (wait > 2_000_000_000) return;
      const timer = setTimeout(() => {
        fireAt(schedule, next);
        arm(next);
      }, wait);
      timer.unref();
      timers.push(timer);
    };
    arm(new Date());
  }

  return {
    fire(logicalId) {
      const schedule = byId.get(logicalId);
      if (!schedule) throw new Error(`No deployed schedule ${logicalId}`);
      return fireAt(schedule, new Date());
    },
    firings,
    stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
    },
  };
}
