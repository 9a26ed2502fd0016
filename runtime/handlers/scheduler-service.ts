/**
 * The scheduler service's main program (`scheduler.mode: "service"`, docs/scaling.md): one
 * always-on Fargate task per shard runs that shard's scheduler (runtime/app/scheduler-service.ts)
 * and holds its lease for good, so the scheduler hands over only at a deploy or a crash. It
 * publishes what the scheduler Lambda publishes per invocation once a minute instead. SIGTERM
 * (a deploy replacing the task, a scale-in) hands the held tasks and the lease back, then exits:
 * the replacement, already waiting for the lease, takes over once the index has settled.
 *
 * The container's entry is scheduler-container.ts (the same image as the Fargate workers runs it
 * as `node scheduler-service.mjs`, the esbuild bundle lib/fargate-worker-image.ts writes beside
 * the worker's).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { runSchedulerService } from '../app/scheduler-service.ts';
import type { Services } from '../app/wiring.ts';
import { ConfigError } from '../core/errors.ts';
import { ENV } from '../infra/resources.ts';
import { logger, metrics, taskLogger } from './observability.ts';
import { type SchedulerHandlerMetrics, SchedulerTally } from './scheduler-report.ts';

/** How often the service publishes its figures (the Lambda publishes once per invocation). */
export const REPORT_EVERY_MS = 60_000;

/** The shard SCHEDULER_SHARD names, checked against the configuration's shard count. */
export function shardFromEnvironment(env: NodeJS.ProcessEnv, shards: number): number {
  const raw = env[ENV.schedulerShard] ?? '0';
  const shard = Number(raw);
  if (!Number.isInteger(shard) || shard < 0 || shard >= shards) {
    throw new ConfigError(`${ENV.schedulerShard} must be a shard from 0 to ${shards - 1}, got "${raw}"`, {
      problems: [ENV.schedulerShard],
    });
  }
  return shard;
}

export interface SchedulerServiceMain {
  /** Resolves once the service has handed its lease back after `stop`. */
  readonly done: Promise<void>;
  stop(): void;
}

/** Start the service's loop with its once-a-minute report; `stop` ends both. */
export function startSchedulerService(options: {
  /** This process's services (the container's: from its environment). */
  services: Services;
  env?: NodeJS.ProcessEnv;
  metrics?: SchedulerHandlerMetrics;
  reportEveryMs?: number;
}): SchedulerServiceMain {
  const env = options.env ?? process.env;
  const sink = options.metrics ?? metrics;
  const { services } = options;
  const shard = shardFromEnvironment(env, services.config.scheduler.shards);
  const stopping = new AbortController();
  const tally = new SchedulerTally();
  const report = () =>
    tally.publish(sink, {
      tenantMetrics: services.config.deploy.tenantMetrics,
      // As for an invocation: a minute in which every tick failed is no completed pass.
      completedLoop: tally.tickErrors === 0 || tally.ticks > 0,
    });
  const reporter = setInterval(report, options.reportEveryMs ?? REPORT_EVERY_MS);
  // Unique per process: two holders with one owner id would both pass the lease's owner check.
  const ownerId = `service-${hostname()}-${randomUUID().slice(0, 8)}`;
  logger.info('scheduler service starting', { shard, shards: services.config.scheduler.shards, ownerId });
  const done = runSchedulerService({
    services,
    shard,
    signal: stopping.signal,
    ownerId,
    logger: taskLogger,
    onTick: (result, scheduler) => tally.tick(result, scheduler, Date.now()),
    onTickError: () => {
      tally.tickErrors++;
    },
    onUnregisteredQueued: (count) => {
      tally.unregisteredQueued += count;
    },
    onLease: (event, lease) => logger.info(`scheduler lease ${event}`, { token: lease.token, shard }),
  }).finally(() => {
    clearInterval(reporter);
    report();
  });
  return { done, stop: () => stopping.abort() };
}
