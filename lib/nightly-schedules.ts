import { Duration, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ScheduleConfig } from '../runtime/core/config.ts';
import { handlerProps, RuntimeFunction, type RuntimeSettings } from './runtime-function.ts';
import { schedulerInvokeRole } from './scheduler-invoke-role.ts';
import type { DefinedQueue } from './task-queues.ts';

export interface NightlySchedulesProps {
  readonly runtime: RuntimeSettings;
  readonly tasksTable: dynamodb.ITable;
  readonly controlTable: dynamodb.ITable;
  /** Submitted tasks are enqueued to their tier. */
  readonly tierQueues: readonly DefinedQueue[];
  /** `schedules` from the configuration. */
  readonly schedules: readonly ScheduleConfig[];
  /**
   * Delivery retries after a failed invocation. Safe: the submit is idempotent on the scheduled time.
   * @default 10
   */
  readonly retryAttempts?: number;
  /** Give up on a delivery this long after its scheduled time. @default Duration.hours(2) */
  readonly maxEventAge?: Duration;
}

/** EventBridge Scheduler limits on a target's retry policy. */
const MAX_RETRY_ATTEMPTS = 185;
const MIN_EVENT_AGE_SECONDS = 60;
const MAX_EVENT_AGE_SECONDS = 86_400;

/** The input EventBridge Scheduler passes to scheduled-submit; the placeholder is filled per run. */
export function scheduledSubmitInput(schedule: ScheduleConfig): string {
  return JSON.stringify({
    scheduleName: schedule.name,
    scheduledTime: '<aws.scheduler.scheduled-time>',
    timezone: schedule.timezone,
    task: schedule.task,
  });
}

/**
 * Jobs from `schedules`: one EventBridge Scheduler schedule each (cron, time zone, retry policy,
 * dead-letter queue) whose target, the scheduled-submit function, submits the task template
 * through the API's code path with an idempotency key derived from the scheduled time, so a
 * retried delivery never creates a second task.
 */
export class NightlySchedules extends Construct {
  public readonly handler: RuntimeFunction;
  public readonly deadLetterQueue: sqs.Queue;
  public readonly invokeRole: iam.Role;
  /** Configured schedule name → schedule. */
  public readonly schedules: ReadonlyMap<string, scheduler.CfnSchedule>;

  constructor(scope: Construct, id: string, props: NightlySchedulesProps) {
    super(scope, id);
    const retryAttempts = props.retryAttempts ?? 10;
    if (!Number.isInteger(retryAttempts) || retryAttempts < 0 || retryAttempts > MAX_RETRY_ATTEMPTS) {
      throw new Error(`NightlySchedules: retryAttempts must be an integer from 0 to 185, got ${retryAttempts}`);
    }
    const maxEventAgeSeconds = (props.maxEventAge ?? Duration.hours(2)).toSeconds();
    if (maxEventAgeSeconds < MIN_EVENT_AGE_SECONDS || maxEventAgeSeconds > MAX_EVENT_AGE_SECONDS) {
      throw new Error(`NightlySchedules: maxEventAge must be from 60 to 86400 seconds, got ${maxEventAgeSeconds}`);
    }
    const seen = new Set<string>();
    for (const schedule of props.schedules) {
      if (seen.has(schedule.name)) throw new Error(`Schedule "${schedule.name}" is defined twice`);
      seen.add(schedule.name);
      validateSchedule(schedule);
    }

    this.handler = new RuntimeFunction(this, 'Handler', {
      ...handlerProps(props.runtime, 'scheduled-submit'),
      description: 'Task scheduler submit from EventBridge schedules',
      memorySize: 256,
      timeout: Duration.seconds(30),
    });
    const fn = this.handler.function;
    props.tasksTable.grantReadWriteData(fn);
    props.controlTable.grantReadData(fn);
    for (const tier of props.tierQueues) tier.queue.grantSendMessages(fn);

    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetters', {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    Validations.of(this.deadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself a dead-letter queue: EventBridge Scheduler sends undeliverable schedule runs here (DeadLetterConfig), which the rule does not recognise.',
    });

    this.invokeRole = schedulerInvokeRole(this, 'InvokeRole', fn);
    // Scheduler writes dead letters with the schedule's execution role.
    this.deadLetterQueue.grantSendMessages(this.invokeRole);

    const schedules = new Map<string, scheduler.CfnSchedule>();
    for (const schedule of props.schedules) {
      schedules.set(
        schedule.name,
        new scheduler.CfnSchedule(this, `Schedule-${schedule.name}`, {
          description: `Task scheduler job "${schedule.name}": ${schedule.task.type} for tenant ${schedule.task.tenantId}`,
          scheduleExpression: schedule.cron,
          scheduleExpressionTimezone: schedule.timezone,
          flexibleTimeWindow: { mode: 'OFF' },
          state: schedule.enabled ? 'ENABLED' : 'DISABLED',
          target: {
            arn: fn.functionArn,
            roleArn: this.invokeRole.roleArn,
            input: scheduledSubmitInput(schedule),
            retryPolicy: { maximumRetryAttempts: retryAttempts, maximumEventAgeInSeconds: maxEventAgeSeconds },
            deadLetterConfig: { arn: this.deadLetterQueue.queueArn },
          },
        }),
      );
    }
    this.schedules = schedules;
  }
}

/** Checks EventBridge Scheduler would only make at deploy time, made at synth with the key named. */
function validateSchedule(schedule: ScheduleConfig): void {
  const fields = /^cron\((.*)\)$/.exec(schedule.cron)?.[1]?.trim().split(/\s+/) ?? [];
  if (fields.length !== 6) {
    throw new Error(
      `Schedule "${schedule.name}": cron must have 6 fields (minutes hours day-of-month month day-of-week year), got "${schedule.cron}"`,
    );
  }
  if (fields[2] !== '?' && fields[4] !== '?') {
    throw new Error(
      `Schedule "${schedule.name}": cron must use "?" in day-of-month or day-of-week, got "${schedule.cron}"`,
    );
  }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: schedule.timezone });
  } catch {
    throw new Error(`Schedule "${schedule.name}": unknown time zone "${schedule.timezone}"`);
  }
}
