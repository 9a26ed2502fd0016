/**
 * The long-lived scheduler (`scheduler.mode: "service"`, docs/scaling.md "A long-lived
 * scheduler"): one shard's scheduler loop that never stops for want of work and, whenever another
 * holder has the shard's lease (the scheduler Lambda standing in while this task was down, or the
 * task this one replaces in a deploy), waits for it. One always-on holder per shard means a
 * hand-over (a fresh scheduler resuming from DynamoDB after the index settles) only at a deploy
 * or a crash, instead of at the end of every Lambda invocation.
 *
 * The Fargate service runs it (runtime/handlers/scheduler-service.ts), the simulation too
 * (sim/chaos/run.ts), and the local runtime's loop is the same loop with no idle stop.
 */
import type { Lease } from '../adapters/control-store.ts';
import type { TaskLogger } from '../core/logger.ts';
import { type ShardScope, schedulerLeaseName } from '../core/shards.ts';
import { Scheduler, type SchedulerDeps, type TickResult } from '../scheduler/scheduler.ts';
import { LAMBDA_POLL_SECONDS, runSchedulerLoop, sleep } from '../scheduler/scheduler-loop.ts';
import type { Services } from './wiring.ts';

/**
 * The service's lease lifetime: renewed every third of it; a crashed task's lease lapses after
 * it, and the Lambda fallback (woken by the next announcement or tick) may take the shard.
 */
export const SERVICE_LEASE_TTL_MS = 30_000;

/** How long the service waits after a failure outside a tick (the lease store unreachable). */
const RETRY_AFTER_MS = 5_000;

export interface SchedulerServiceOptions {
  readonly services: Services;
  /** The shard this task schedules (SCHEDULER_SHARD; 0 with one shard). */
  readonly shard: number;
  /** Aborted on SIGTERM: the loop hands its held tasks and its lease back and returns. */
  readonly signal: AbortSignal;
  /** Who holds the lease (the ECS task, by its id). */
  readonly ownerId: string;
  readonly logger: TaskLogger;
  readonly onScheduler?: ((scheduler: Scheduler) => void) | undefined;
  readonly onTick?: ((result: TickResult, scheduler: Scheduler) => void) | undefined;
  readonly onTickError?: ((error: unknown) => void) | undefined;
  readonly onUnregisteredQueued?: ((count: number) => void) | undefined;
  readonly onLease?: ((event: 'acquired' | 'lost' | 'released', lease: Lease) => void) | undefined;
}

/** Run one shard's scheduler until `signal` aborts. */
export async function runSchedulerService(options: SchedulerServiceOptions): Promise<void> {
  const { services, signal, logger } = options;
  const scope: ShardScope = { shard: options.shard, shards: services.config.scheduler.shards };
  const control = services.control.forShard(scope.shard);
  while (!signal.aborted) {
    try {
      await runSchedulerLoop({
        control,
        leaseName: schedulerLeaseName(scope.shard),
        signal,
        ownerId: options.ownerId,
        leaseTtlMs: SERVICE_LEASE_TTL_MS,
        // The Lambda's polls: busy on the completions queue, idle a long poll on the tier queues.
        waitSeconds: LAMBDA_POLL_SECONDS.busy,
        idleWaitSeconds: LAMBDA_POLL_SECONDS.idle,
        waitForLease: true,
        logger,
        createScheduler: () => {
          const scheduler = shardScheduler(services, scope, logger, {
            ...(options.onUnregisteredQueued ? { onUnregisteredQueued: options.onUnregisteredQueued } : {}),
          });
          options.onScheduler?.(scheduler);
          return scheduler;
        },
        ...(options.onTick ? { onTick: options.onTick } : {}),
        ...(options.onTickError ? { onTickError: options.onTickError } : {}),
        ...(options.onLease ? { onLease: options.onLease } : {}),
      });
    } catch (error) {
      // Taking or renewing the lease failed (DynamoDB unreachable): try again rather than exit, so
      // ECS does not count a crash loop against the deployment.
      logger.error('scheduler service: the lease store failed; trying again', {
        shard: scope.shard,
        error: String(error),
      });
      options.onTickError?.(error);
      await sleep(RETRY_AFTER_MS, signal);
    }
  }
}

/**
 * A scheduler for one shard over the services of this process (the Lambda's, the service's and
 * the local runtime's alike): shard 0 also runs the batch sweeper, whose batches are not per
 * tenant; every shard counts the batch member ends its completions report. `options` adds the
 * caller's hooks, and queues of its own (the local runtime's announce without waking).
 */
export function shardScheduler(
  services: Services,
  shard: ShardScope,
  logger: TaskLogger,
  options: Pick<Partial<SchedulerDeps>, 'queues' | 'onDispatch' | 'onUnregisteredQueued'> = {},
): Scheduler {
  return new Scheduler({
    store: services.store,
    control: services.control.forShard(shard.shard),
    queues: services.queues,
    config: services.config,
    shard,
    logger,
    ...(shard.shard === 0 ? { sweepBatches: () => services.batches.sweep() } : {}),
    // Every shard counts the batch members' ends its completions report (one write a counter shard).
    countBatchEnds: (ends) => services.batches.membersEnded(ends),
    ...options,
  });
}
