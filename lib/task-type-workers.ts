/**
 * Task types run by the user's own code rather than the scheduler's pools: per type, a Lambda
 * function or a container image that runs the worker library (`serverless-task-scheduler/worker`:
 * `taskWorkerHandler(types)` in a function, `startTaskWorker(types)` as a container's main). Each
 * type gets a queue of its own (`taskTypeQueue`, with a dead-letter queue the redrive drains);
 * the scheduler dispatches that type's attempts there (TASK_TYPE_QUEUES), and this construct
 * wires the consumer: the event source or the ECS service, the environment the library reads and
 * the grants a pool worker has.
 *
 * The type must also be defined in one of the stack's `taskModules`: the API validates payloads
 * and the scheduler reads defaults from the same definition.
 */
import * as path from 'node:path';
import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Construct } from 'constructs';
import { ENV, type QueueDefinition, taskTypeQueue } from '../runtime/infra/resources.ts';
import { FargateWorkers } from './fargate-workers.ts';
import { SQS_ESM_MAX_CONCURRENCY, SQS_ESM_MIN_CONCURRENCY } from './lambda-workers.ts';
import { RuntimeFunction, type RuntimeSettings } from './runtime-function.ts';
import type { DefinedQueue } from './task-queues.ts';

interface TaskTypeWorkerBase {
  /** The task type, as defined in one of the stack's task modules. */
  readonly type: string;
}

/** A function the construct builds from your entry, with the scheduler's own function defaults (nag-clean). */
export interface TaskTypeEntryWorker extends TaskTypeWorkerBase {
  /** Your handler module (absolute, or relative to the project): `export const handler = taskWorkerHandler(types)`. */
  readonly entry: string;
  /** @default 1024 */
  readonly memoryMiB?: number;
  /** The longest attempt. @default Duration.minutes(15) */
  readonly timeout?: Duration;
  /** Concurrent invocations at most. @default pools.lambda.concurrency */
  readonly maxConcurrency?: number;
}

/** A function you build; its handler is `taskWorkerHandler(types)`. */
export interface TaskTypeFunctionWorker extends TaskTypeWorkerBase {
  /**
   * Builds your function in `scope` (inside the scheduler's stack, where its grants and the
   * stack's cdk-nag acknowledgements apply): `(scope) => new NodejsFunction(scope, 'Ocr', {...})`.
   */
  readonly function: (scope: Construct) => lambda.Function;
  /** Concurrent invocations at most. @default pools.lambda.concurrency */
  readonly maxConcurrency?: number;
}

/** A container image whose main is `startTaskWorker(types)`, e.g. `ecs.ContainerImage.fromAsset('worker/')`. */
export interface TaskTypeContainerWorker extends TaskTypeWorkerBase {
  /** Built from your Dockerfile by `cdk deploy` (synth only stages it), or from a registry. */
  readonly image: ecs.ContainerImage;
  /** CPU units of one container. @default 1024 */
  readonly cpu?: number;
  /** @default 2048 */
  readonly memoryMiB?: number;
  /** Attempts one container runs at once (WORKER_CONCURRENCY). @default 4 per vCPU */
  readonly tasksPerWorker?: number;
}

export type TaskTypeWorker = TaskTypeEntryWorker | TaskTypeFunctionWorker | TaskTypeContainerWorker;

/** Lambda's default timeout, for a function that sets none. */
const LAMBDA_DEFAULT_TIMEOUT = Duration.seconds(3);

/**
 * The queue definition a worker's type gets: visibility six times a Lambda consumer's timeout
 * (`adopted`: the function a `function` worker built), 300 s for a container (it extends
 * visibility while it runs, as the Fargate pool does).
 */
export function taskTypeWorkerQueue(worker: TaskTypeWorker, adopted?: lambda.Function): QueueDefinition {
  if ('image' in worker) return taskTypeQueue(worker.type, 300);
  const timeout = 'function' in worker ? (adopted?.timeout ?? LAMBDA_DEFAULT_TIMEOUT) : worker.timeout;
  return taskTypeQueue(worker.type, 6 * (timeout ?? Duration.minutes(15)).toSeconds());
}

/** Refuses a type given two workers (before anything is built for either). */
export function checkTaskTypeWorkers(workers: readonly TaskTypeWorker[]): void {
  const seen = new Set<string>();
  for (const worker of workers) {
    if (seen.has(worker.type)) throw new Error(`TaskTypeWorkers: task type "${worker.type}" has two workers`);
    seen.add(worker.type);
  }
}

export interface TaskTypeWorkersProps {
  readonly workers: readonly TaskTypeWorker[];
  /** The announcing runtime settings (environment with SCHEDULER_FUNCTION): a function worker's. */
  readonly runtime: RuntimeSettings;
  /** The same with every queue's URL and TASK_TYPE_QUEUES: a container worker's (it polls its queue by id). */
  readonly containerRuntime: RuntimeSettings;
  /** Each worker's type → its queue. */
  readonly queues: ReadonlyMap<string, DefinedQueue>;
  /** The functions `function` workers built (before the queues: their timeouts size them), by type. */
  readonly adopted: ReadonlyMap<string, lambda.Function>;
  readonly tasksTable: dynamodb.ITable;
  /** Every scheduler shard's completions queue (one per `scheduler.shards`). */
  readonly completionQueues: readonly DefinedQueue[];
  readonly tierQueues: readonly DefinedQueue[];
  /** `pools.lambda.concurrency`: the default most concurrent invocations of a function worker. */
  readonly lambdaConcurrency: number;
  /** `pools.fargate`: the most a container worker's service may run. */
  readonly fargatePool: { readonly vcpu: number; readonly memoryMiB: number };
  /** The Fargate pool's network, shared by the container workers. */
  readonly vpc: ec2.IVpc;
  /** Whether `vpc` is the stack's own public-subnet VPC (workers then get a public IP). */
  readonly publicSubnets: boolean;
}

/** What one worker became. */
export interface TaskTypeWorkerResources {
  readonly type: string;
  readonly queue: DefinedQueue;
  /** The function (built from your entry, or yours). */
  readonly function?: lambda.Function;
  /** The container worker's service. */
  readonly service?: FargateWorkers;
  /** Functions and task roles the stack lets wake the scheduler. */
  readonly grantees: readonly iam.IGrantable[];
}

export class TaskTypeWorkers extends Construct {
  public readonly workers: readonly TaskTypeWorkerResources[];

  constructor(scope: Construct, id: string, props: TaskTypeWorkersProps) {
    super(scope, id);
    checkTaskTypeWorkers(props.workers);
    this.workers = props.workers.map((worker) => {
      const queue = props.queues.get(worker.type);
      if (!queue) throw new Error(`TaskTypeWorkers: no queue for task type "${worker.type}"`);
      const name = queue.definition.id.replace(/^worker-type-/, '');
      if ('image' in worker) return this.#container(worker, name, queue, props);
      const fn = 'function' in worker ? this.#adopted(worker, props) : this.#built(worker, name, props);
      const visibility = queue.definition.visibilityTimeoutSeconds;
      const timeoutSeconds = (fn.timeout ?? LAMBDA_DEFAULT_TIMEOUT).toSeconds();
      if (visibility < 6 * timeoutSeconds) {
        throw new Error(
          `TaskTypeWorkers: queue ${queue.definition.id} visibility timeout (${visibility} s) must be at least 6 × the function timeout (${timeoutSeconds} s)`,
        );
      }
      const wanted = worker.maxConcurrency ?? props.lambdaConcurrency;
      fn.addEventSource(
        new SqsEventSource(queue.queue, {
          batchSize: 1,
          reportBatchItemFailures: true,
          maxConcurrency: Math.min(SQS_ESM_MAX_CONCURRENCY, Math.max(SQS_ESM_MIN_CONCURRENCY, wanted)),
        }),
      );
      props.tasksTable.grantReadWriteData(fn);
      for (const completions of props.completionQueues) completions.queue.grantSendMessages(fn);
      for (const tier of props.tierQueues) tier.queue.grantSendMessages(fn);
      return { type: worker.type, queue, function: fn, grantees: [fn] };
    });
  }

  #built(worker: TaskTypeEntryWorker, name: string, props: TaskTypeWorkersProps): lambda.Function {
    const built = new RuntimeFunction(this, `Function-${name}`, {
      entry: path.resolve(props.runtime.code.projectRoot, worker.entry),
      projectRoot: props.runtime.code.projectRoot,
      depsLockFilePath: props.runtime.code.depsLockFilePath,
      description: `Task scheduler worker for task type ${worker.type}`,
      memorySize: worker.memoryMiB ?? 1024,
      timeout: worker.timeout ?? Duration.minutes(15),
      environment: props.runtime.environment,
      logRetention: props.runtime.logRetention,
    });
    return built.function;
  }

  #adopted(worker: TaskTypeFunctionWorker, props: TaskTypeWorkersProps): lambda.Function {
    const fn = props.adopted.get(worker.type);
    if (!fn) throw new Error(`TaskTypeWorkers: the function for task type "${worker.type}" was not built`);
    // What the worker library reads (runtime/app/wiring.ts), as the stack's own workers get it.
    for (const [key, value] of Object.entries(props.runtime.environment)) fn.addEnvironment(key, value);
    return fn;
  }

  #container(
    worker: TaskTypeContainerWorker,
    name: string,
    queue: DefinedQueue,
    props: TaskTypeWorkersProps,
  ): TaskTypeWorkerResources {
    const service = new FargateWorkers(this, `Service-${name}`, {
      runtime: {
        ...props.containerRuntime,
        environment: { ...props.containerRuntime.environment, [ENV.workerQueue]: queue.definition.id },
      },
      tasksTable: props.tasksTable,
      queue,
      completionQueues: props.completionQueues,
      tierQueues: props.tierQueues,
      pool: props.fargatePool,
      vpc: props.vpc,
      publicSubnets: props.publicSubnets,
      image: worker.image,
      ...(worker.cpu ? { workerCpu: worker.cpu } : {}),
      ...(worker.memoryMiB ? { workerMemoryMiB: worker.memoryMiB } : {}),
      ...(worker.tasksPerWorker ? { tasksPerWorker: worker.tasksPerWorker } : {}),
    });
    return { type: worker.type, queue, service, grantees: [service.taskDefinition.taskRole] };
  }
}
