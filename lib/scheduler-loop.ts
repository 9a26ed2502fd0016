import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import { Construct } from 'constructs';
import { handlerProps, RuntimeFunction, type RuntimeSettings } from './runtime-function.ts';
import { schedulerInvokeRole } from './scheduler-invoke-role.ts';
import type { DefinedQueue } from './task-queues.ts';

export interface SchedulerLoopProps {
  readonly runtime: RuntimeSettings;
  readonly tasksTable: dynamodb.ITable;
  readonly controlTable: dynamodb.ITable;
  /** Read (candidates) and written (reconciliation re-enqueues). */
  readonly tierQueues: readonly DefinedQueue[];
  /** Dispatch targets. */
  readonly workerQueues: readonly DefinedQueue[];
  /** Finished attempts free capacity through here. */
  readonly completionsQueue: DefinedQueue;
  /**
   * How long one invocation may loop. The handler stops 15 s before it, so 75 s makes each loop
   * outlast the one-minute tick: the next tick arrives while the loop still runs, is throttled
   * (reserved concurrency 1), and Lambda's async retry starts it within seconds of the loop
   * handing back its lease. With 60 s, every minute would have a ~15 s gap with no scheduler.
   * @default Duration.seconds(75)
   */
  readonly timeout?: Duration;
  /** @default 512 */
  readonly memorySize?: number;
}

/**
 * The scheduler: a Lambda started every minute by EventBridge Scheduler that loops until shortly
 * before its timeout. Reserved concurrency 1 keeps it single (its DynamoDB lease is the second
 * guard); a tick that arrives while a loop still runs is throttled, retried by Lambda's async
 * queue for at most a minute, then dropped, since the next tick replaces it.
 */
export class SchedulerLoop extends Construct {
  public readonly handler: RuntimeFunction;
  public readonly schedule: scheduler.CfnSchedule;
  public readonly invokeRole: iam.Role;

  constructor(scope: Construct, id: string, props: SchedulerLoopProps) {
    super(scope, id);
    const timeout = props.timeout ?? Duration.seconds(75);
    const timeoutSeconds = timeout.toSeconds();
    if (timeoutSeconds < 60 || timeoutSeconds > 900) {
      throw new Error(
        `SchedulerLoop: timeout must be from 60 seconds (the tick interval) to 900 seconds, got ${timeoutSeconds}`,
      );
    }

    this.handler = new RuntimeFunction(this, 'Handler', {
      ...handlerProps(props.runtime, 'scheduler'),
      description: 'Task scheduler loop (one at a time)',
      memorySize: props.memorySize ?? 512,
      timeout,
      reservedConcurrentExecutions: 1,
    });
    const fn = this.handler.function;
    fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.seconds(60) });

    props.tasksTable.grantReadWriteData(fn);
    props.controlTable.grantReadWriteData(fn);
    for (const tier of props.tierQueues) {
      tier.queue.grantConsumeMessages(fn);
      tier.queue.grantSendMessages(fn);
    }
    for (const worker of props.workerQueues) worker.queue.grantSendMessages(fn);
    props.completionsQueue.queue.grantConsumeMessages(fn);

    this.invokeRole = schedulerInvokeRole(this, 'TickRole', fn);
    this.schedule = new scheduler.CfnSchedule(this, 'Tick', {
      description: 'Starts the task scheduler loop every minute',
      scheduleExpression: 'rate(1 minute)',
      flexibleTimeWindow: { mode: 'OFF' },
      state: 'ENABLED',
      target: {
        arn: fn.functionArn,
        roleArn: this.invokeRole.roleArn,
        // A missed tick is replaced by the next one: retrying it only stacks invocations.
        retryPolicy: { maximumRetryAttempts: 0, maximumEventAgeInSeconds: 60 },
      },
    });
  }
}
