import { createHash } from 'node:crypto';
import { ArnFormat, Duration, Stack, Token } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import { Construct } from 'constructs';
import type { SchedulerEvent } from '../runtime/scheduler/activation.ts';
import { handlerProps, RuntimeFunction, type RuntimeSettings } from './runtime-function.ts';
import { schedulerInvokeRole } from './scheduler-invoke-role.ts';
import type { DefinedQueue } from './task-queues.ts';

/** What a scheduler reads and writes, wherever it runs (the Lambda, the long-lived service). */
export interface SchedulerResources {
  readonly tasksTable: dynamodb.ITable;
  readonly controlTable: dynamodb.ITable;
  /** The lease ledger: a page written before each dispatch round, deleted once its attempts ended. */
  readonly leasesTable: dynamodb.ITable;
  /** Read (candidates) and written (reconciliation re-enqueues). */
  readonly tierQueues: readonly DefinedQueue[];
  /** Dispatch targets. */
  readonly workerQueues: readonly DefinedQueue[];
  /** Finished attempts free capacity through here: every shard's (one per `scheduler.shards`). */
  readonly completionQueues: readonly DefinedQueue[];
}

/** Grant a scheduler what it reads and writes. */
export function grantSchedulerAccess(resources: SchedulerResources, grantee: iam.IGrantable): void {
  resources.tasksTable.grantReadWriteData(grantee);
  resources.controlTable.grantReadWriteData(grantee);
  resources.leasesTable.grantReadWriteData(grantee);
  for (const tier of resources.tierQueues) {
    tier.queue.grantConsumeMessages(grantee);
    tier.queue.grantSendMessages(grantee);
  }
  for (const worker of resources.workerQueues) worker.queue.grantSendMessages(grantee);
  for (const completions of resources.completionQueues) completions.queue.grantConsumeMessages(grantee);
}

export interface SchedulerLoopProps extends SchedulerResources {
  readonly runtime: RuntimeSettings;
  /**
   * How long one invocation may loop. The handler stops 15 s before it and, with work left,
   * invokes a fresh one to take over; idle, it stops long before (scale to zero).
   * @default Duration.minutes(5)
   */
  readonly timeout?: Duration;
  /** @default 512 */
  readonly memorySize?: number;
}

/**
 * The scheduler Lambda, scaled to zero (runtime/scheduler/activation.ts): it runs only while there
 * is something to hold or run. Whatever announces a task (the API, workers retrying, redrive,
 * schedules) wakes it with an asynchronous invoke when its lease shows no live scheduler; an
 * invocation out of time hands over to a fresh one; and EventBridge Scheduler ticks it every
 * minute as a safety net that exits at once when a scheduler runs or nothing is due. No reserved
 * concurrency (a new account's quota may not allow any): the DynamoDB lease keeps one scheduler
 * active, and an invocation that finds it taken exits.
 */
export class SchedulerLoop extends Construct {
  public readonly handler: RuntimeFunction;
  public readonly schedule: scheduler.CfnSchedule;
  public readonly invokeRole: iam.Role;
  /** Physical name: other functions wake the scheduler by it (SCHEDULER_FUNCTION). */
  public readonly functionName: string;

  constructor(scope: Construct, id: string, props: SchedulerLoopProps) {
    super(scope, id);
    const timeout = props.timeout ?? Duration.minutes(5);
    const timeoutSeconds = timeout.toSeconds();
    if (timeoutSeconds < 60 || timeoutSeconds > 900) {
      throw new Error(
        `SchedulerLoop: timeout must be from 60 seconds (the tick interval) to 900 seconds, got ${timeoutSeconds}`,
      );
    }
    const stack = Stack.of(this);
    if (Token.isUnresolved(stack.stackName)) {
      throw new Error('SchedulerLoop: the stack name must be known at synth time (it names the scheduler function)');
    }
    // A known name lets the function be granted invoking itself (a handover) without a cycle.
    this.functionName = schedulerFunctionName(stack.stackName);

    this.handler = new RuntimeFunction(this, 'Handler', {
      ...handlerProps(props.runtime, 'scheduler'),
      functionName: this.functionName,
      description: 'Task scheduler loop (one at a time, by its lease)',
      memorySize: props.memorySize ?? 512,
      timeout,
      // No reserved concurrency: a new account's quota (10) cannot grant any. The lease is the
      // fence: dispatch writes carry its token and are refused once a newer holder wrote.
    });
    const fn = this.handler.function;
    // A wake or tick that fails is replaced by the next announce or tick: retrying only stacks
    // invocations that would find the lease taken.
    fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.seconds(60) });

    grantSchedulerAccess(props, fn);
    this.grantWake(fn);

    this.invokeRole = schedulerInvokeRole(this, 'TickRole', fn);
    const tick: SchedulerEvent = { reason: 'tick' };
    this.schedule = new scheduler.CfnSchedule(this, 'Tick', {
      description: 'Safety net: starts the task scheduler every minute when work is due and none runs',
      scheduleExpression: 'rate(1 minute)',
      flexibleTimeWindow: { mode: 'OFF' },
      state: 'ENABLED',
      target: {
        arn: fn.functionArn,
        roleArn: this.invokeRole.roleArn,
        input: JSON.stringify(tick),
        // A missed tick is replaced by the next one: retrying it only stacks invocations.
        retryPolicy: { maximumRetryAttempts: 0, maximumEventAgeInSeconds: 60 },
      },
    });
  }

  /** Let a function or role wake the scheduler (lambda:InvokeFunction on its unqualified ARN). */
  public grantWake(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [
          Stack.of(this).formatArn({
            service: 'lambda',
            resource: 'function',
            resourceName: this.functionName,
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        ],
      }),
    );
  }
}

/** Lambda's limit on a function name. */
const MAX_FUNCTION_NAME = 64;
const SUFFIX = '-scheduler';

/**
 * `<stack name>-scheduler`; a stack name too long for that keeps its start and ends in a hash of
 * the whole name, so two stacks whose names share their first 54 characters (`…-blue`,
 * `…-green`) do not ask for the same function in one account and region.
 */
export function schedulerFunctionName(stackName: string): string {
  const room = MAX_FUNCTION_NAME - SUFFIX.length;
  if (stackName.length <= room) return `${stackName}${SUFFIX}`;
  const hash = createHash('sha256').update(stackName).digest('hex').slice(0, 8);
  return `${stackName.slice(0, room - hash.length - 1)}-${hash}${SUFFIX}`;
}
