import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Construct } from 'constructs';
import { handlerProps, RuntimeFunction, type RuntimeSettings } from './runtime-function.ts';
import { DEAD_LETTER_VISIBILITY_SECONDS, type DefinedQueue } from './task-queues.ts';

export interface RedriveProps {
  readonly runtime: RuntimeSettings;
  readonly tasksTable: dynamodb.ITable;
  /** Worker queues whose dead-letter queues this function drains. */
  readonly workerQueues: readonly DefinedQueue[];
  /** Retries go back to their tier; dead-lettered tier messages are drained back to it. */
  readonly tierQueues: readonly DefinedQueue[];
  /** A task failed here frees its capacity through a completion. */
  readonly completionsQueue: DefinedQueue;
  /** @default Duration.seconds(5) (dead-letter visibility is 30 s, and 6 × 5 s = 30 s) */
  readonly timeout?: Duration;
}

/**
 * The redrive function on the worker and tier dead-letter queues: each worker dead letter becomes
 * a retry (back to QUEUED with backoff) or FAILED when no attempts remain (attempts are counted in
 * DynamoDB, so a delivery that died before running does not use one up); each tier dead letter is
 * announced again while its task is QUEUED, so no waiting task is left to the stale sweep.
 */
export class Redrive extends Construct {
  public readonly handler: RuntimeFunction;
  public readonly eventSources: readonly SqsEventSource[];

  constructor(scope: Construct, id: string, props: RedriveProps) {
    super(scope, id);
    const timeout = props.timeout ?? Duration.seconds(5);
    const timeoutSeconds = timeout.toSeconds();
    if (DEAD_LETTER_VISIBILITY_SECONDS < 6 * timeoutSeconds) {
      throw new Error(
        `Redrive: dead-letter visibility timeout (${DEAD_LETTER_VISIBILITY_SECONDS} s) must be at least 6 × the function timeout (6 × ${timeoutSeconds} s = ${6 * timeoutSeconds} s)`,
      );
    }
    const sources = [...props.workerQueues, ...props.tierQueues].map((source) => {
      if (!source.deadLetterQueue) {
        throw new Error(`Redrive: queue ${source.definition.id} has no dead-letter queue`);
      }
      return source.deadLetterQueue;
    });

    this.handler = new RuntimeFunction(this, 'Handler', {
      ...handlerProps(props.runtime, 'redrive'),
      description: 'Task scheduler redrive of worker and tier dead letters',
      memorySize: 256,
      timeout,
    });
    const fn = this.handler.function;
    props.tasksTable.grantReadWriteData(fn);
    for (const tier of props.tierQueues) tier.queue.grantSendMessages(fn);
    props.completionsQueue.queue.grantSendMessages(fn);

    this.eventSources = sources.map((queue) => {
      const source = new SqsEventSource(queue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        // Dead letters are rare; two at a time keeps a burst from hammering the task table.
        maxConcurrency: 2,
      });
      fn.addEventSource(source);
      return source;
    });
  }
}
