import { Duration, SecretValue, Stack, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { WebhookConfig } from '../runtime/core/config.ts';
import type { DeployedWebhook } from '../runtime/events/webhooks.ts';
import { ENV, WEBHOOK_DELIVERY_QUEUE } from '../runtime/infra/resources.ts';
import { handlerProps, RuntimeFunction, type RuntimeSettings } from './runtime-function.ts';

export interface TaskEventsProps {
  readonly runtime: RuntimeSettings;
  /** The task table, with its stream (NEW_AND_OLD_IMAGES) on. */
  readonly tasksTable: dynamodb.ITable;
  /**
   * The tier queues: the stream function settles task dependencies (app/dependencies.ts) and
   * announces the tasks it releases. @default - none (a stack without dependencies' settling)
   */
  readonly tierQueues?: readonly { readonly queue: sqs.IQueue }[];
  /** `events.webhooks` from the configuration. @default - none: no delivery queue or function */
  readonly webhooks?: readonly WebhookConfig[];
  /** Queue names start with this (the stack name). */
  readonly namePrefix: string;
}

/**
 * Task events on AWS (docs/events.md): the task table's stream read by a function that puts each
 * state change on a custom event bus and, for configured webhooks, on a FIFO delivery queue read
 * by a function that signs and POSTs. Nothing of it is on a request path, and idle it costs
 * nothing: Lambda's reads of a DynamoDB stream are not billed, and no SQS queue is long-polled
 * unless webhooks are configured.
 *
 * Records that still fail when they leave the stream (24 h) are described on `failedRecords`;
 * webhook deliveries refused for about two days move to `deliveryDeadLetters`. The redrive drain
 * reads both every few minutes and counts them in `DeadLettered`, whose alarm already exists
 * (lib/redrive.ts, lib/monitoring.ts): no new alarm, so the idle month stays under $3.
 */
export class TaskEvents extends Construct {
  public readonly bus: events.EventBus;
  public readonly streamFunction: RuntimeFunction;
  /** Where the stream's event source mapping describes batches it gave up on. */
  public readonly failedRecords: sqs.Queue;
  public readonly deliveryQueue?: sqs.Queue;
  public readonly deliveryDeadLetters?: sqs.Queue;
  public readonly deliveryFunction?: RuntimeFunction;
  /** One secret per webhook, in the order of `events.webhooks`. */
  public readonly secrets: readonly secretsmanager.ISecret[];

  constructor(scope: Construct, id: string, props: TaskEventsProps) {
    super(scope, id);
    const webhooks = props.webhooks ?? [];
    const stackName = Stack.of(this).stackName;
    this.bus = new events.EventBus(this, 'Bus', {
      eventBusName: `${stackName}-task-events`,
      description: 'Task state changes of the task scheduler (source task-scheduler, detail-type Task State Change)',
    });

    this.failedRecords = new sqs.Queue(this, 'FailedRecords', {
      queueName: `${props.namePrefix}-task-events-failed`,
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    Validations.of(this.failedRecords).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'It is itself the dead-letter destination of the task event stream (batches given up on after 24 h).',
    });

    this.secrets = webhooks.map((webhook, index) =>
      typeof webhook.secret === 'string'
        ? new secretsmanager.Secret(this, `WebhookSecret${index}`, {
            description: `HMAC key of webhook ${index} (${webhook.url})`,
            secretStringValue: SecretValue.unsafePlainText(webhook.secret),
          })
        : /-[A-Za-z0-9]{6}$/.test(webhook.secret.secretArn)
          ? secretsmanager.Secret.fromSecretCompleteArn(this, `WebhookSecret${index}`, webhook.secret.secretArn)
          : secretsmanager.Secret.fromSecretPartialArn(this, `WebhookSecret${index}`, webhook.secret.secretArn),
    );
    for (const secret of this.secrets) {
      if (secret instanceof secretsmanager.Secret) {
        Validations.of(secret).acknowledge({
          id: 'AwsSolutions-SMG4',
          reason:
            'A webhook signing key is shared with the receiver, who must change it at the same time: rotated by hand (docs/events.md), not by a rotation Lambda.',
        });
      }
    }
    const deployed: DeployedWebhook[] = webhooks.map((webhook, index) => ({
      index,
      url: webhook.url,
      secretArn: this.secrets[index]!.secretArn,
      ...(webhook.filters ? { filters: webhook.filters } : {}),
    }));

    if (webhooks.length > 0) {
      const definition = WEBHOOK_DELIVERY_QUEUE;
      this.deliveryDeadLetters = new sqs.Queue(this, 'DeliveryDeadLetters', {
        queueName: `${props.namePrefix}-${definition.deadLetter.id}.fifo`,
        fifo: true,
        retentionPeriod: Duration.seconds(definition.deadLetter.retentionSeconds),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
      });
      this.deliveryQueue = new sqs.Queue(this, 'DeliveryQueue', {
        queueName: `${props.namePrefix}-${definition.id}.fifo`,
        fifo: true,
        // High throughput: without it a FIFO queue takes 300 calls a second per action (3,000
        // messages batched), for every webhook together, and a busy stack's stream function is
        // throttled on its sends. The groups (webhook + task) are many; an event's de-duplication
        // id and its group go together, so de-duplicating within the group loses nothing.
        deduplicationScope: sqs.DeduplicationScope.MESSAGE_GROUP,
        fifoThroughputLimit: sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
        visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
        retentionPeriod: Duration.seconds(definition.retentionSeconds),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        deadLetterQueue: { queue: this.deliveryDeadLetters, maxReceiveCount: definition.deadLetter.maxReceiveCount },
      });
      Validations.of(this.deliveryDeadLetters).acknowledge({
        id: 'AwsSolutions-SQS3',
        reason: 'It is itself the dead-letter queue of the webhook delivery queue.',
      });
      this.deliveryFunction = new RuntimeFunction(this, 'Delivery', {
        ...handlerProps(props.runtime, 'webhook-delivery'),
        environment: {
          ...props.runtime.environment,
          [ENV.webhooks]: Stack.of(this).toJsonString(deployed),
          [ENV.webhookQueueUrl]: this.deliveryQueue.queueUrl,
        },
        description: 'Task scheduler webhooks: signs and POSTs each task event, in order per webhook and task',
        memorySize: 256,
        // A sixth of the queue's visibility (Lambda's guidance for SQS event sources): 30 s. A POST
        // starts only while one can finish (runtime/handlers/webhook-delivery.ts), the rest go back.
        timeout: Duration.seconds(definition.visibilityTimeoutSeconds / 6),
      });
      this.deliveryFunction.function.addEventSource(
        new SqsEventSource(this.deliveryQueue, { batchSize: 10, reportBatchItemFailures: true }),
      );
      this.deliveryQueue.grantConsumeMessages(this.deliveryFunction.function);
      for (const secret of this.secrets) secret.grantRead(this.deliveryFunction.function);
    }

    this.streamFunction = new RuntimeFunction(this, 'Stream', {
      ...handlerProps(props.runtime, 'task-events'),
      environment: {
        ...props.runtime.environment,
        [ENV.eventBus]: this.bus.eventBusName,
        ...(this.deliveryQueue
          ? {
              [ENV.webhookQueueUrl]: this.deliveryQueue.queueUrl,
              [ENV.webhooks]: Stack.of(this).toJsonString(deployed),
            }
          : {}),
      },
      description:
        'Task scheduler events: the task table stream to the event bus and the webhook queue; settles task dependencies',
      memorySize: 256,
      timeout: Duration.seconds(60),
    });
    this.streamFunction.function.addEventSource(
      new DynamoEventSource(props.tasksTable, {
        startingPosition: lambda.StartingPosition.LATEST,
        batchSize: 100,
        maxBatchingWindow: Duration.seconds(1),
        // Resume from the first record not sent, in order: no bisecting, which would reorder.
        reportBatchItemFailures: true,
        bisectBatchOnError: false,
        onFailure: new SqsDlq(this.failedRecords),
        // TTL's deletions are no state changes; lease renewals are told apart in code (images).
        filters: [lambda.FilterCriteria.filter({ eventName: lambda.FilterRule.or('INSERT', 'MODIFY') })],
      }),
    );
    this.bus.grantPutEventsTo(this.streamFunction.function);
    this.deliveryQueue?.grantSendMessages(this.streamFunction.function);
    if (props.tierQueues) {
      // Dependencies: reads and conditional writes of task items and their dependents buckets,
      // and the announcement of a released task.
      props.tasksTable.grantReadWriteData(this.streamFunction.function);
      for (const tier of props.tierQueues) tier.queue.grantSendMessages(this.streamFunction.function);
    }
  }
}
