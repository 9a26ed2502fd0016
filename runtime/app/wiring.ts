/**
 * Builds the object graph (stores, queues, services) from resource names and clients. The
 * Lambda handlers build it from their environment; the local runtime from its emulators.
 */
import { readFileSync } from 'node:fs';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { type AwsClients, createAwsClients, onAws } from '../adapters/aws-clients.ts';
import { BatchStore } from '../adapters/batch-store.ts';
import { ControlStore } from '../adapters/control-store.ts';
import { DependentsStore } from '../adapters/dependents-store.ts';
import { LeasePages } from '../adapters/lease-pages.ts';
import { QueueClient, toMessageBody, type WorkerMessage } from '../adapters/queues.ts';
import { TaskStore } from '../adapters/task-store.ts';
import { submitTaskSchema } from '../api/schemas.ts';
import { parseConfig, type SchedulerConfig } from '../core/config.ts';
import { ConfigError } from '../core/errors.ts';
import type { TaskLogger } from '../core/logger.ts';
import type { Task } from '../core/task.ts';
import {
  CONTROL_TABLE,
  ENV,
  LAMBDA_ENTRY_CLASS,
  LEASES_TABLE,
  type QueueDefinition,
  queuesFor,
  TASKS_TABLE,
} from '../infra/resources.ts';
import { type SchedulerEvent, SchedulerWaker } from '../scheduler/activation.ts';
import type { TaskServices, TaskTypeRegistry } from '../task-types/define.ts';
import { exampleResourcesFromEnvironment } from '../task-types/examples/stores.ts';
import { defaultRegistry } from '../task-types/index.ts';
import type { AttemptDeps } from '../worker/run-attempt.ts';
import { BatchService } from './batches.ts';
import { DependencyService } from './dependencies.ts';
import { TaskService } from './task-service.ts';

export interface Resources {
  /** Physical table names by table id. */
  readonly tables: Readonly<Record<string, string>>;
  /** Queue URLs by queue id. */
  readonly queueUrls: Readonly<Record<string, string>>;
  /** Task type → its own queue, for the types the user's own functions or containers run. */
  readonly typeQueues?: Readonly<Record<string, QueueDefinition>> | undefined;
}

export interface Services {
  readonly config: SchedulerConfig;
  readonly clients: AwsClients;
  readonly store: TaskStore;
  readonly control: ControlStore;
  readonly queues: QueueClient;
  readonly registry: TaskTypeRegistry;
  readonly tasks: TaskService;
  /** Settles dependencies from the durable change feed (the local outbox relay, the AWS stream consumer). */
  readonly dependencies: DependencyService;
  readonly batches: BatchService;
  readonly now: () => Date;
}

export function buildServices(options: {
  config: SchedulerConfig;
  clients: AwsClients;
  resources: Resources;
  registry?: TaskTypeRegistry | undefined;
  now?: () => Date;
  onChange?: ((task: Task) => void) | undefined;
  /**
   * Starts a scheduler without waiting for it, when tasks are announced and none runs
   * (runtime/scheduler/activation.ts). Undefined: nothing is woken (the scheduler itself).
   */
  wakeScheduler?: ((shard: number) => Promise<void>) | undefined;
  logger?: TaskLogger | undefined;
  /**
   * The task store's event outbox (the local runtime; runtime/events/outbox-relay.ts): every event
   * with webhooks (`outbox`), else those the dependencies need (`dependencyOutbox`).
   */
  events?:
    | {
        readonly outbox: boolean;
        readonly dependencyOutbox?: boolean;
        readonly onOutboxEvent?: (taskId: string) => void;
      }
    | undefined;
  /** How long a read scheduler snapshot is served again (ControlStore; 0, the default: not kept). */
  snapshotCacheMs?: number | undefined;
}): Services {
  const { config, clients, resources } = options;
  const tableName = (id: string) => {
    const name = resources.tables[id];
    if (!name) throw new ConfigError(`No table name for "${id}"`, { problems: [`tables.${id}: missing`] });
    return name;
  };
  const now = options.now ?? (() => new Date());
  const { dependencyOutbox, ...outbox } = options.events ?? { outbox: false };
  // The store counts a batch member's end after the write that ended it (app/batches.ts).
  let batches: BatchService | undefined;
  const store = new TaskStore(clients.documents, tableName(TASKS_TABLE.id), {
    ...(resources.tables[LEASES_TABLE.id]
      ? { leases: new LeasePages(clients.documents, tableName(LEASES_TABLE.id)) }
      : {}),
    ...outbox,
    ...(dependencyOutbox ? { records: DependencyService.concerns } : {}),
    nowMs: () => now().getTime(),
    onBatchMemberEnded: async (task) => {
      try {
        await batches?.memberEnded(task);
      } catch (error) {
        // The sweeper counts it (the scheduler runs it); the write that ended the task stands.
        options.logger?.warn('batch member not counted yet', { taskId: task.taskId, error: String(error) });
      }
    },
  });
  const control = new ControlStore(clients.documents, tableName(CONTROL_TABLE.id), {
    snapshotCacheMs: options.snapshotCacheMs ?? 0,
    nowMs: () => now().getTime(),
  });
  const waker = options.wakeScheduler
    ? new SchedulerWaker({
        control,
        wake: options.wakeScheduler,
        shards: config.scheduler.shards,
        logger: options.logger,
      })
    : undefined;
  const typeQueues = Object.fromEntries(
    Object.entries(resources.typeQueues ?? {}).map(([type, queue]) => [type, queue.id]),
  );
  const queues = new QueueClient(clients.sqs, resources.queueUrls, {
    typeQueues,
    shards: config.scheduler.shards,
    ...(waker ? { afterAnnounce: (tasks, at) => waker.afterAnnounce(tasks, at) } : {}),
  });
  const registry = options.registry ?? defaultRegistry();
  const tasks = new TaskService({
    store,
    control,
    queues,
    registry,
    config,
    now,
    onChange: options.onChange,
  });
  const dependencies = new DependencyService({
    store,
    dependents: new DependentsStore(clients.documents, tableName(TASKS_TABLE.id), () => now().getTime()),
    queues,
    now,
    onChange: options.onChange,
  });
  batches = new BatchService({
    tasks,
    store,
    batches: new BatchStore(clients.documents, store.tableName),
    queues,
    itemSchema: submitTaskSchema,
    now,
    logger: options.logger,
  });
  return { config, clients, store, control, queues, registry, tasks, dependencies, batches, now };
}

/** Configuration for a Lambda or container: inline JSON (set by the stack) or a file path. */
export function configFromEnvironment(env: NodeJS.ProcessEnv = process.env): SchedulerConfig {
  const inline = env[ENV.configJson];
  if (inline) return parseConfig(JSON.parse(inline), `${ENV.configJson}`);
  const path = env[ENV.config];
  if (path) return parseConfig(JSON.parse(readFileSync(path, 'utf8')), path);
  return parseConfig({}, 'default configuration');
}

/** Resource names from the environment the CDK stack sets on every function and container. */
export function resourcesFromEnvironment(env: NodeJS.ProcessEnv = process.env): Resources {
  const missing = [ENV.tasksTable, ENV.controlTable, ENV.queueUrls].filter((name) => !env[name]);
  if (missing.length > 0) {
    throw new ConfigError(`Missing environment: ${missing.join(', ')}`, { problems: missing });
  }
  return {
    tables: {
      [TASKS_TABLE.id]: env[ENV.tasksTable]!,
      [CONTROL_TABLE.id]: env[ENV.controlTable]!,
      // Set where leased tasks are recorded or listed (the scheduler, the API) only.
      ...(env[ENV.leasesTable] ? { [LEASES_TABLE.id]: env[ENV.leasesTable] as string } : {}),
    },
    queueUrls: queueUrlsFromEnvironment(env),
    typeQueues: typeQueuesFromEnvironment(env),
  };
}

/**
 * QUEUE_URLS with every scheduler shard's queues (and dead-letter queues) it lacks, from
 * QUEUE_URL_PREFIX and the configuration's shards: what a function of the stack reaches (the CLI's
 * `tasks redrive` takes a function's environment too).
 */
export function queueUrlsFromEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return withShardQueueUrls(JSON.parse(env[ENV.queueUrls] ?? '{}') as Record<string, string>, env);
}

function withShardQueueUrls(urls: Record<string, string>, env: NodeJS.ProcessEnv): Record<string, string> {
  const prefix = env[ENV.queueUrlPrefix];
  if (!prefix) return urls;
  const all: Record<string, string> = { ...urls };
  for (const queue of queuesFor(configFromEnvironment(env).scheduler.shards)) {
    for (const id of [queue.id, ...(queue.deadLetter ? [queue.deadLetter.id] : [])]) all[id] ??= `${prefix}${id}`;
  }
  return all;
}

/** TASK_TYPE_QUEUES: the types the user's own functions or containers run, and their queues. */
export function typeQueuesFromEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, QueueDefinition> {
  const raw = env[ENV.taskTypeQueues];
  if (!raw) return {};
  try {
    return JSON.parse(raw) as Record<string, QueueDefinition>;
  } catch (error) {
    throw new ConfigError(`${ENV.taskTypeQueues} is not JSON: ${(error as Error).message}`, {
      problems: [`${ENV.taskTypeQueues}: invalid JSON`],
    });
  }
}

let cached: Services | undefined;
let lambdaClient: LambdaClient | undefined;

/**
 * Module-scope services for Lambda handlers and the Fargate worker (built once per execution
 * environment). Where the stack names the scheduler function, announcing tasks wakes it.
 */
export function servicesFromEnvironment(env: NodeJS.ProcessEnv = process.env): Services {
  cached ??= buildServicesFromEnvironment(env);
  return cached;
}

/** {@link servicesFromEnvironment}, built anew (the worker library runs its own task types). */
export function buildServicesFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  options: { registry?: TaskTypeRegistry } = {},
): Services {
  const schedulerFunction = env[ENV.schedulerFunction];
  return buildServices({
    config: configFromEnvironment(env),
    clients: createAwsClients(),
    resources: resourcesFromEnvironment(env),
    registry: options.registry,
    wakeScheduler: schedulerFunction
      ? (shard) => invokeScheduler(schedulerFunction, shard === 0 ? { reason: 'wake' } : { reason: 'wake', shard })
      : undefined,
    // Each environment reads the snapshot at most once a second (it is written every 2 s):
    // a thousand API environments cannot make its item hot.
    snapshotCacheMs: 1_000,
  });
}

/**
 * Start the scheduler Lambda asynchronously (InvocationType Event): Lambda queues the event and
 * answers at once, so the caller does not wait for the scheduler to start.
 */
export async function invokeScheduler(functionName: string, event: SchedulerEvent): Promise<void> {
  await invokeAsync(functionName, JSON.stringify(event));
}

/** An asynchronous invoke (InvocationType Event): Lambda queues the event and answers at once. */
async function invokeAsync(functionName: string, payload: string): Promise<void> {
  lambdaClient ??= new LambdaClient(onAws());
  await lambdaClient.send(
    new InvokeCommand({
      FunctionName: functionName,
      InvocationType: 'Event',
      Payload: new TextEncoder().encode(payload),
    }),
  );
}

/** The entry worker's class functions (WORKER_CLASS_FUNCTIONS) is missing the class a task needs. */
export class WorkerClassFunctionMissingError extends ConfigError {
  constructor(memoryMiB: number, known: readonly string[]) {
    super(
      `No Lambda worker function for the ${memoryMiB} MiB class in ${ENV.workerClassFunctions} (known: ${known.join(', ') || 'none'})`,
      { problems: [`${ENV.workerClassFunctions}: no function for ${memoryMiB} MiB`] },
    );
    this.name = 'WorkerClassFunctionMissingError';
  }
}

/**
 * This Lambda worker's memory class and how it hands a task to a bigger class: an asynchronous
 * invoke of the class function the stack names in WORKER_CLASS_FUNCTIONS, with the worker message.
 */
export function lambdaWorkerFromEnvironment(env: NodeJS.ProcessEnv = process.env) {
  const own = Number(env[ENV.workerMemoryMiB] ?? LAMBDA_ENTRY_CLASS.memoryMiB);
  const functions = JSON.parse(env[ENV.workerClassFunctions] ?? '{}') as Record<string, string>;
  return {
    ownMemoryMiB: own,
    handOff: async (memoryMiB: number, message: WorkerMessage): Promise<void> => {
      const functionName = functions[String(memoryMiB)];
      if (!functionName) throw new WorkerClassFunctionMissingError(memoryMiB, Object.keys(functions));
      await invokeAsync(functionName, toMessageBody(message));
    },
  };
}

/** What task handlers get on AWS: the SDK clients and the example stores' names (when deployed). */
export function taskServicesFromEnvironment(services: Services): TaskServices {
  const resources = exampleResourcesFromEnvironment();
  return { aws: services.clients, resources };
}

/** What a worker needs to run attempts on AWS (the Lambda pool and the Fargate service). */
export function attemptDepsFromEnvironment(services: Services, logger: TaskLogger): AttemptDeps {
  return {
    store: services.store,
    queues: services.queues,
    registry: services.registry,
    config: services.config,
    services: taskServicesFromEnvironment(services),
    logger,
  };
}
