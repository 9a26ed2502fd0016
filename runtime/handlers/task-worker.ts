/**
 * The worker library (`serverless-task-scheduler/worker`): run task types in your own Lambda
 * function or container image, speaking the scheduler's protocol through the same code as its
 * own workers instead of a copy of it. The CDK construct gives a type its own queue
 * (`taskTypeWorkers`), dispatches its attempts there and sets the environment this reads
 * (TASKS_TABLE, QUEUE_URLS, SCHEDULER_CONFIG_JSON, WORKER_QUEUE, ...). For each message:
 *
 *   lease   the fenced DISPATCHED → RUNNING write (a duplicate or stale delivery runs nothing)
 *   beat    heartbeats renew the lease every third of it (`ctx.heartbeat()` marks progress)
 *   stop    `ctx.signal` aborts on cancel, timeout or a lost lease
 *   result  what the handler returns (or throws: retried with backoff, NonRetryableError fails)
 *           recorded by one fenced conditional write; the scheduler is told the slot is free
 *
 *   // Lambda, with an SQS event source on the type's queue (the construct adds it):
 *   export const handler = taskWorkerHandler(myTypes);
 *   // a container (CMD node worker.mjs):
 *   startTaskWorker(myTypes);
 */
import { availableParallelism } from 'node:os';
import type { PartialItemFailureResponse } from '@aws-lambda-powertools/batch/types';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { WorkerMessage } from '../adapters/queues.ts';
import { attemptDepsFromEnvironment, buildServicesFromEnvironment, type Services } from '../app/wiring.ts';
import { ConfigError } from '../core/errors.ts';
import { ENV } from '../infra/resources.ts';
import { type AnyTaskTypeDefinition, TaskTypeRegistry } from '../task-types/define.ts';
import { BUILT_IN_TASK_TYPE_NAMES } from '../task-types/index.ts';
import { checkTaskModules } from '../task-types/modules.ts';
import { QueueWorker } from '../worker/queue-worker.ts';
import { type AttemptOutcome, handlerErrorListener, runAttempt } from '../worker/run-attempt.ts';
import { ScaleInProtection } from '../worker/scale-in-protection.ts';
import { countOutcome, invocationRemainingMs, logger, metrics, sqsBatchHandler, taskLogger } from './observability.ts';

/** A task module's default export: the types this worker runs. */
export type TaskTypes = readonly AnyTaskTypeDefinition[];

/** The types, checked as a task module is (made by defineTaskType, no name twice). */
function registryOf(taskTypes: TaskTypes, source: string): TaskTypeRegistry {
  return new TaskTypeRegistry(
    checkTaskModules([{ source, namespace: { default: taskTypes } }], BUILT_IN_TASK_TYPE_NAMES),
  );
}

/** Services from the environment the construct sets, running `registry`'s types. */
function servicesFor(registry: TaskTypeRegistry, env: NodeJS.ProcessEnv): Services {
  return buildServicesFromEnvironment(env, { registry });
}

/** runTaskMessage's services, built once per list of types (and environment), not per message. */
const messageServices = new WeakMap<TaskTypes, { env: NodeJS.ProcessEnv; services: Services }>();

/**
 * One attempt of one dispatched message, in this process: lease, heartbeats, cancel signal,
 * result. Resolves with what became of it (`skipped` for a duplicate or stale delivery);
 * rejects only when the store or a queue cannot be reached (the message should come back).
 */
export async function runTaskMessage(
  message: WorkerMessage,
  taskTypes: TaskTypes,
  env: NodeJS.ProcessEnv = process.env,
): Promise<AttemptOutcome> {
  let built = messageServices.get(taskTypes);
  if (built?.env !== env) {
    built = { env, services: servicesFor(registryOf(taskTypes, 'runTaskMessage'), env) };
    messageServices.set(taskTypes, built);
  }
  return runAttempt(attemptDepsFromEnvironment(built.services, taskLogger), message);
}

/**
 * A Lambda handler for an SQS event source on the type's queue: each record is one attempt; an
 * infrastructure error fails that record alone (partial batch response), a failed task does not
 * (it is recorded and retried through the scheduler).
 */
export function taskWorkerHandler(
  taskTypes: TaskTypes,
  env: NodeJS.ProcessEnv = process.env,
): (event: SQSEvent, context: Context) => Promise<PartialItemFailureResponse> {
  const registry = registryOf(taskTypes, 'taskWorkerHandler');
  let services: Services | undefined;
  return sqsBatchHandler(async (record: SQSRecord, context: Context) => {
    services ??= servicesFor(registry, env);
    const remainingMs = invocationRemainingMs(context);
    const attempt = attemptDepsFromEnvironment(services, taskLogger);
    const outcome = await runAttempt(
      remainingMs ? { ...attempt, remainingMs } : attempt,
      JSON.parse(record.body) as WorkerMessage,
    );
    if (outcome.kind === 'skipped') logger.info('attempt skipped', { reason: outcome.reason });
    countOutcome(outcome);
  });
}

/**
 * Outcome metrics are buffered and published once a minute (and on shutdown) as EMF lines on
 * stdout; the awslogs driver ships them to CloudWatch Logs, which extracts the metrics.
 */
const PUBLISH_EVERY_MS = 60_000;

export interface TaskWorkerOptions {
  /** The queue to long-poll. @default $WORKER_QUEUE */
  readonly queueId?: string;
  /** Attempts at once. @default $WORKER_CONCURRENCY, else 4 per CPU */
  readonly concurrency?: number;
  /**
   * Long-poll wait of each receive, 1 to 20 s. A stop waits for the poll under way (what it brings
   * goes back to the queue at once). @default 20
   */
  readonly waitSeconds?: number;
  /** Stop on SIGTERM / SIGINT after the running attempts (and exit). @default true */
  readonly exitOnSignal?: boolean;
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * A container's main loop: long-polls its queue, runs up to `concurrency` attempts at once,
 * extends each message's visibility while its task heartbeats, and on SIGTERM (scale-in, deploy)
 * stops receiving and lets the running attempts finish (an unfinished one is recovered through
 * its lease). On ECS a busy container protects itself from scale-in.
 */
export function startTaskWorker(
  taskTypes: TaskTypes | TaskTypeRegistry,
  options: TaskWorkerOptions = {},
): { readonly worker: QueueWorker; stop(): Promise<void> } {
  const env = options.env ?? process.env;
  const registry = taskTypes instanceof TaskTypeRegistry ? taskTypes : registryOf(taskTypes, 'startTaskWorker');
  const queueId = options.queueId ?? env[ENV.workerQueue];
  if (!queueId) {
    throw new ConfigError(`Missing environment: ${ENV.workerQueue} (the queue this worker polls)`, {
      problems: [ENV.workerQueue],
    });
  }
  const services = servicesFor(registry, env);
  const concurrency = options.concurrency ?? Number(env.WORKER_CONCURRENCY ?? availableParallelism() * 4);
  // On ECS the agent injects ECS_AGENT_URI: a busy container is then protected from scale-in.
  const protection = env.ECS_AGENT_URI
    ? new ScaleInProtection({ agentUri: env.ECS_AGENT_URI, logger: taskLogger })
    : undefined;
  const worker = new QueueWorker({
    queues: services.queues,
    queueId,
    maxConcurrent: concurrency,
    waitSeconds: Math.min(20, Math.max(1, options.waitSeconds ?? 20)),
    visibilitySeconds: Math.max(60, services.config.scheduler.runLeaseSeconds * 2),
    logger: taskLogger,
    attempt: attemptDepsFromEnvironment(services, taskLogger),
    onOutcome: countOutcome,
    onBusyChange: protection ? (busy: boolean) => void protection.setBusy(busy) : undefined,
  });
  // One handler's uncaught error (a throw in a timer, a rejection it never awaited) fails its own
  // attempt instead of ending the container and, with it, every attempt it runs.
  const onUncaught = handlerErrorListener((taskId, origin, error) =>
    logger.warn('task handler left an error unhandled; its attempt fails with it', {
      taskId,
      origin,
      error: String(error),
    }),
  );
  process.on('uncaughtException', onUncaught);
  worker.start();
  logger.info('task worker started', { queueId, concurrency, types: registry.names().join(',') });
  const publisher = setInterval(() => metrics.publishStoredMetrics(), PUBLISH_EVERY_MS);
  publisher.unref();
  const stop = async () => {
    await worker.stop();
    process.off('uncaughtException', onUncaught);
    clearInterval(publisher);
    metrics.publishStoredMetrics();
  };
  if (options.exitOnSignal ?? true) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        logger.info(`${signal}: draining`, { inFlight: worker.inFlight });
        void stop().then(() => process.exit(0));
      });
    }
  }
  return { worker, stop };
}
