import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Construct } from 'constructs';
import { LAMBDA_WORKER } from '../runtime/infra/resources.ts';
import { handlerProps, RuntimeFunction, type RuntimeSettings } from './runtime-function.ts';
import type { DefinedQueue } from './task-queues.ts';

export interface LambdaWorkersProps {
  readonly runtime: RuntimeSettings;
  readonly tasksTable: dynamodb.ITable;
  /** The `worker-lambda` queue the scheduler dispatches to. */
  readonly queue: DefinedQueue;
  /** Finished attempts are reported here. */
  readonly completionsQueue: DefinedQueue;
  /** A failed attempt with attempts left is re-enqueued to its tier. */
  readonly tierQueues: readonly DefinedQueue[];
  /** `pools.lambda.concurrency` from the configuration. */
  readonly poolConcurrency: number;
  /** The longest task the Lambda pool runs. @default Duration.minutes(15) */
  readonly timeout?: Duration;
  /**
   * Memory of every Lambda worker (CPU comes in proportion). Submit checks tasks against
   * `LAMBDA_WORKER` (runtime/infra/resources.ts), so change it there, not here.
   * @default LAMBDA_WORKER.memoryMiB
   */
  readonly memorySize?: number;
  /**
   * Messages per invocation. One task per invocation keeps a concurrency slot equal to a task
   * (how the scheduler counts the pool) and never shares a 15-minute budget between tasks.
   * @default 1
   */
  readonly batchSize?: number;
}

/** Limits of MaximumConcurrency on an SQS event source mapping. */
export const SQS_ESM_MIN_CONCURRENCY = 2;
export const SQS_ESM_MAX_CONCURRENCY = 1000;

/**
 * The Lambda worker pool: the worker function on the `worker-lambda` queue, with partial batch
 * responses and the mapping's maximum concurrency set to the pool's capacity, so SQS never
 * delivers to throttled invocations (which would burn receive counts of tasks that never ran).
 */
export class LambdaWorkers extends Construct {
  public readonly handler: RuntimeFunction;
  public readonly eventSource: SqsEventSource;
  /** The pool capacity clamped to what an SQS event source accepts. */
  public readonly maxConcurrency: number;

  constructor(scope: Construct, id: string, props: LambdaWorkersProps) {
    super(scope, id);
    const timeout = props.timeout ?? Duration.minutes(15);
    const timeoutSeconds = timeout.toSeconds();
    const visibility = props.queue.definition.visibilityTimeoutSeconds;
    // AWS guidance for SQS event sources: retries of a throttled batch must not make messages
    // visible again while an invocation still works on them.
    if (visibility < 6 * timeoutSeconds) {
      throw new Error(
        `LambdaWorkers: queue ${props.queue.definition.id} visibility timeout (${visibility} s) must be at least 6 × the function timeout (6 × ${timeoutSeconds} s = ${6 * timeoutSeconds} s)`,
      );
    }
    if (!Number.isInteger(props.poolConcurrency) || props.poolConcurrency < 1) {
      throw new Error(`LambdaWorkers: poolConcurrency must be a positive integer, got ${props.poolConcurrency}`);
    }
    const batchSize = props.batchSize ?? 1;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10) {
      throw new Error(`LambdaWorkers: batchSize must be an integer from 1 to 10, got ${batchSize}`);
    }
    this.maxConcurrency = Math.min(SQS_ESM_MAX_CONCURRENCY, Math.max(SQS_ESM_MIN_CONCURRENCY, props.poolConcurrency));

    this.handler = new RuntimeFunction(this, 'Handler', {
      ...handlerProps(props.runtime, 'worker'),
      description: 'Task scheduler Lambda worker pool',
      memorySize: props.memorySize ?? LAMBDA_WORKER.memoryMiB,
      timeout,
    });
    const fn = this.handler.function;
    props.tasksTable.grantReadWriteData(fn);
    props.completionsQueue.queue.grantSendMessages(fn);
    for (const tier of props.tierQueues) tier.queue.grantSendMessages(fn);

    // Grants receive/delete/change-visibility on this queue only (heartbeats extend visibility).
    this.eventSource = new SqsEventSource(props.queue.queue, {
      batchSize,
      reportBatchItemFailures: true,
      maxConcurrency: this.maxConcurrency,
    });
    fn.addEventSource(this.eventSource);
  }
}
