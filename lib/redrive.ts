import { Duration, Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { EVENT_QUEUES_ENV } from '../runtime/events/dead-letters.ts';
import { DRAIN_VISIBILITY_SECONDS } from '../runtime/worker/redrive.ts';
import { handlerProps, RuntimeFunction, type RuntimeSettings } from './runtime-function.ts';
import { schedulerInvokeRole } from './scheduler-invoke-role.ts';
import type { DefinedQueue } from './task-queues.ts';

export interface RedriveProps {
  readonly runtime: RuntimeSettings;
  readonly tasksTable: dynamodb.ITable;
  /** Worker queues whose dead-letter queues this function drains. */
  readonly workerQueues: readonly DefinedQueue[];
  /** Retries go back to their tier; dead-lettered tier messages are drained back to it. */
  readonly tierQueues: readonly DefinedQueue[];
  /** A task failed here frees its capacity through a completion. */
  /** Every scheduler shard's completions queue (one per `scheduler.shards`). */
  readonly completionQueues: readonly DefinedQueue[];
  /** How often the dead-letter queues are drained, 1 to 60 minutes. @default Duration.minutes(5) */
  readonly drainEvery?: Duration;
  /** @default Duration.seconds(60) */
  readonly timeout?: Duration;
  /**
   * The task events' failure queues (lib/task-events.ts), read by every drain and counted in
   * DeadLettered: batches the stream gave up on, and webhook deliveries dead-lettered (moved back
   * to the delivery queue, so a webhook is retried until it takes them). @default - none
   */
  readonly eventQueues?: {
    readonly failedRecords: sqs.IQueue;
    readonly deliveries?: sqs.IQueue;
    readonly deliveryDeadLetters?: sqs.IQueue;
  };
}

/**
 * The redrive function, run on a schedule: it drains the worker and tier dead-letter queues
 * (lambda/worker/redrive.ts `drainDeadLetters`). Each worker dead letter becomes a retry (back to
 * QUEUED with backoff) or FAILED when no attempts remain (attempts are counted in DynamoDB, so a
 * delivery that died before running does not use one up); each tier dead letter is announced
 * again while its task is QUEUED, so no waiting task is left to the registry backstop.
 *
 * A schedule, not SQS event source mappings: a mapping long-polls its queue all the time, about
 * $0.26 a month per queue with nothing in it, and dead letters are rare. A drain every 5 minutes
 * costs about $0.03 a month idle; a dead letter waits up to that long (its task is stuck no
 * longer than that beyond the lease the reconciler already watches).
 */
export class Redrive extends Construct {
  public readonly handler: RuntimeFunction;
  public readonly schedule: scheduler.CfnSchedule;
  public readonly drainEvery: Duration;

  constructor(scope: Construct, id: string, props: RedriveProps) {
    super(scope, id);
    const timeout = props.timeout ?? Duration.seconds(60);
    if (timeout.toSeconds() >= DRAIN_VISIBILITY_SECONDS) {
      throw new Error(
        `Redrive: the timeout (${timeout.toSeconds()} s) must be shorter than a drained dead letter's visibility (${DRAIN_VISIBILITY_SECONDS} s)`,
      );
    }
    this.drainEvery = props.drainEvery ?? Duration.minutes(5);
    const minutes = this.drainEvery.toMinutes({ integral: false });
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > 60) {
      throw new Error(`Redrive: drainEvery must be a whole number of minutes from 1 to 60, got ${minutes}`);
    }
    const deadLetterQueues = [...props.workerQueues, ...props.tierQueues].map((source) => {
      if (!source.deadLetterQueue) {
        throw new Error(`Redrive: queue ${source.definition.id} has no dead-letter queue`);
      }
      return source.deadLetterQueue;
    });

    const eventQueues = props.eventQueues;
    const eventQueueUrls = eventQueues
      ? {
          failedRecords: eventQueues.failedRecords.queueUrl,
          ...(eventQueues.deliveries && eventQueues.deliveryDeadLetters
            ? {
                deliveries: eventQueues.deliveries.queueUrl,
                deliveryDeadLetters: eventQueues.deliveryDeadLetters.queueUrl,
              }
            : {}),
        }
      : undefined;
    const base = handlerProps(props.runtime, 'redrive');
    this.handler = new RuntimeFunction(this, 'Handler', {
      ...base,
      environment: {
        ...base.environment,
        ...(eventQueueUrls ? { [EVENT_QUEUES_ENV]: Stack.of(scope).toJsonString(eventQueueUrls) } : {}),
      },
      description: 'Task scheduler redrive: drains the worker and tier dead-letter queues on a schedule',
      memorySize: 256,
      timeout,
    });
    const fn = this.handler.function;
    props.tasksTable.grantReadWriteData(fn);
    for (const queue of deadLetterQueues) queue.grantConsumeMessages(fn);
    if (eventQueues) {
      eventQueues.failedRecords.grantConsumeMessages(fn);
      eventQueues.deliveryDeadLetters?.grantConsumeMessages(fn);
      eventQueues.deliveries?.grantSendMessages(fn);
    }
    for (const tier of props.tierQueues) tier.queue.grantSendMessages(fn);
    for (const completions of props.completionQueues) completions.queue.grantSendMessages(fn);
    // A drain that fails is replaced by the next one; the alarms watch the function's errors
    // and invocations (lib/monitoring.ts).
    fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.seconds(60) });

    this.schedule = new scheduler.CfnSchedule(this, 'Drain', {
      description: 'Drains the task scheduler dead-letter queues back into the scheduler',
      scheduleExpression: minutes === 1 ? 'rate(1 minute)' : `rate(${minutes} minutes)`,
      flexibleTimeWindow: { mode: 'OFF' },
      state: 'ENABLED',
      target: {
        arn: fn.functionArn,
        roleArn: schedulerInvokeRole(this, 'DrainRole', fn).roleArn,
        input: JSON.stringify({ reason: 'drain' }),
        // A missed drain is replaced by the next one.
        retryPolicy: { maximumRetryAttempts: 0, maximumEventAgeInSeconds: 60 },
      },
    });
  }
}
