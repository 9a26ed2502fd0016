import { Duration, Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Construct } from 'constructs';
import type { LambdaWorkerSize } from '../runtime/core/task.ts';
import { ENV, LAMBDA_WORKER_CLASSES } from '../runtime/infra/resources.ts';
import { handlerProps, RuntimeFunction, type RuntimeSettings } from './runtime-function.ts';
import type { DefinedQueue } from './task-queues.ts';

export interface LambdaWorkersProps {
  readonly runtime: RuntimeSettings;
  readonly tasksTable: dynamodb.ITable;
  /** The `worker-lambda` queue the scheduler dispatches to. */
  readonly queue: DefinedQueue;
  /** Finished attempts are reported here. */
  /** Every scheduler shard's completions queue (one per `scheduler.shards`). */
  readonly completionQueues: readonly DefinedQueue[];
  /** A failed attempt with attempts left is re-enqueued to its tier. */
  readonly tierQueues: readonly DefinedQueue[];
  /** `pools.lambda.concurrency` from the configuration. */
  readonly poolConcurrency: number;
  /** The longest task the Lambda pool runs. @default Duration.minutes(15) */
  readonly timeout?: Duration;
  /**
   * Memory classes, smallest first: one worker function each, the first on the queue. Submit and
   * the workers read `LAMBDA_WORKER_CLASSES` (runtime/infra/resources.ts): change them there.
   * @default LAMBDA_WORKER_CLASSES
   */
  readonly classes?: readonly LambdaWorkerSize[];
  /**
   * Messages per invocation. One task per invocation keeps a concurrency slot equal to a task
   * (how the scheduler counts the pool), gives each task its class's memory and vCPU, and never
   * shares a 15-minute budget between tasks (docs/benchmarks.md, "Batching the Lambda pool").
   * @default 1
   */
  readonly batchSize?: number;
}

/** Limits of MaximumConcurrency on an SQS event source mapping. */
export const SQS_ESM_MIN_CONCURRENCY = 2;
export const SQS_ESM_MAX_CONCURRENCY = 1000;

/** One memory class's worker function. */
export interface LambdaWorkerClass {
  readonly memoryMiB: number;
  readonly handler: RuntimeFunction;
}

/**
 * The Lambda worker pool: a worker function per memory class. The smallest (the entry) consumes
 * the `worker-lambda` queue, with partial batch responses and the mapping's maximum concurrency
 * set to the pool's capacity, so SQS never delivers to throttled invocations (which would burn
 * receive counts of tasks that never ran). It runs the tasks that fit it and hands each bigger
 * one to its class's function by an asynchronous invoke (runtime/worker/lambda-classes.ts): the
 * other classes have no event source mapping, so they cost nothing idle.
 */
export class LambdaWorkers extends Construct {
  /** The entry class's function: the one on the queue. */
  public readonly handler: RuntimeFunction;
  /** Every class, smallest (the entry) first. */
  public readonly classes: readonly LambdaWorkerClass[];
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
    const sizes = (props.classes ?? LAMBDA_WORKER_CLASSES).map((size) => size.memoryMiB);
    if (sizes.length === 0 || sizes.some((size, i) => i > 0 && size <= sizes[i - 1]!)) {
      throw new Error(`LambdaWorkers: classes must be at least one, in increasing memory, got [${sizes.join(', ')}]`);
    }
    this.maxConcurrency = Math.min(SQS_ESM_MAX_CONCURRENCY, Math.max(SQS_ESM_MIN_CONCURRENCY, props.poolConcurrency));

    // Bigger classes first: the entry's environment names their functions.
    const bigger = sizes.slice(1).map((memoryMiB) => ({
      memoryMiB,
      handler: this.#workerFunction(props, `Class${memoryMiB}`, memoryMiB, timeout, {}),
    }));
    for (const { handler } of bigger) {
      // A failed invocation (the store or a queue unreachable) is tried twice more by Lambda; past
      // that the task's dispatch lease runs out and the reconciler dispatches it again.
      handler.function.configureAsyncInvoke({ retryAttempts: 2, maxEventAge: Duration.hours(6) });
    }
    const classFunctions = Object.fromEntries(
      bigger.map((c) => [String(c.memoryMiB), c.handler.function.functionName]),
    );
    // The entry keeps the construct id the single worker function had, so an update keeps it.
    this.handler = this.#workerFunction(props, 'Handler', sizes[0]!, timeout, {
      [ENV.workerClassFunctions]: Stack.of(this).toJsonString(classFunctions),
    });
    this.classes = [{ memoryMiB: sizes[0]!, handler: this.handler }, ...bigger];
    for (const { handler } of bigger) {
      // The unqualified ARN only: the entry invokes $LATEST, never a version or alias.
      this.handler.function.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [handler.function.functionArn] }),
      );
    }

    // Grants receive/delete/change-visibility on this queue only (heartbeats extend visibility).
    this.eventSource = new SqsEventSource(props.queue.queue, {
      batchSize,
      reportBatchItemFailures: true,
      maxConcurrency: this.maxConcurrency,
    });
    this.handler.function.addEventSource(this.eventSource);
  }

  /** Every class's function. */
  get functions(): readonly RuntimeFunction[] {
    return this.classes.map((c) => c.handler);
  }

  #workerFunction(
    props: LambdaWorkersProps,
    id: string,
    memoryMiB: number,
    timeout: Duration,
    extra: Record<string, string>,
  ): RuntimeFunction {
    const base = handlerProps(props.runtime, 'worker');
    const worker = new RuntimeFunction(this, id, {
      ...base,
      description: `Task scheduler Lambda worker pool, ${memoryMiB} MiB class`,
      memorySize: memoryMiB,
      timeout,
      environment: { ...base.environment, [ENV.workerMemoryMiB]: String(memoryMiB), ...extra },
    });
    const fn = worker.function;
    props.tasksTable.grantReadWriteData(fn);
    for (const completions of props.completionQueues) completions.queue.grantSendMessages(fn);
    for (const tier of props.tierQueues) tier.queue.grantSendMessages(fn);
    return worker;
  }
}
