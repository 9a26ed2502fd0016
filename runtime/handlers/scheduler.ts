/**
 * Scheduler Lambda. It runs only while there is work (runtime/scheduler/activation.ts):
 * - `{ reason: 'wake' }`, from whatever announced a task while no scheduler ran, and
 *   `{ reason: 'handover' }`, from a predecessor that reached its time limit with work left:
 *   take the lease and loop;
 * - `{ reason: 'tick' }`, every minute from EventBridge Scheduler (the safety net): exit at once
 *   when a scheduler holds the lease or nothing is due, else loop.
 * The loop stops after a spell with nothing to hold or run, or shortly before the timeout (then
 * it hands over to a fresh invocation; with `scheduler.mode` "service" it leaves the lease to the
 * shard's always-on service task instead: the Lambda only stands in while that task is down).
 * The lease keeps one scheduler active: an invocation that finds it taken exits.
 *
 * `schedulerHandler` builds it from what it needs (the deployed one: services from the
 * environment, a handover by asynchronous invoke, Powertools); the simulation runs the same
 * handler over its simulated account and Lambda (sim/chaos/run.ts).
 */
import type { Context } from 'aws-lambda';
import type { Lease } from '../adapters/control-store.ts';
import { shardScheduler } from '../app/scheduler-service.ts';
import { invokeScheduler, type Services, servicesFromEnvironment } from '../app/wiring.ts';
import type { TaskLogger } from '../core/logger.ts';
import { type ShardScope, schedulerLeaseName, shardIndexes } from '../core/shards.ts';
import { METRIC } from '../infra/telemetry.ts';
import {
  DUE_HORIZON_MS,
  hasSchedulerWork,
  IDLE_STOP_MS,
  leaseIsLive,
  type SchedulerEvent,
  STOP_GRACE_MS,
} from '../scheduler/activation.ts';
import type { Scheduler } from '../scheduler/scheduler.ts';
import { lambdaInvocationTiming, runSchedulerLoop } from '../scheduler/scheduler-loop.ts';
import { flushTraces } from '../telemetry/tracing.ts';
import { logger, metrics, taskLogger } from './observability.ts';
import { type SchedulerHandlerMetrics, SchedulerTally } from './scheduler-report.ts';

export { idleWait } from '../scheduler/scheduler-loop.ts';
export type { SchedulerHandlerMetrics } from './scheduler-report.ts';

export interface SchedulerRun {
  readonly ticks: number;
  readonly dispatched: number;
  /** Why the invocation ended: skipped (tick with a live scheduler or nothing due), or the loop's end. */
  readonly ended: 'live-elsewhere' | 'nothing-due' | 'idle' | 'lease-held' | 'handed-over' | 'stopped';
}

/** What the handler logs through (Powertools' Logger has it). */
export interface SchedulerHandlerLogger {
  addContext(context: Context): void;
  info(message: string, extra: Record<string, unknown>): void;
  warn(message: string, extra: Record<string, unknown>): void;
}

export interface SchedulerHandlerDeps {
  /** The services of this execution environment. */
  readonly services: () => Services;
  /** Start a fresh invocation of this function with `event`, without waiting for it. */
  readonly handOver: (context: Context, event: SchedulerEvent) => Promise<void>;
  readonly logger: SchedulerHandlerLogger;
  readonly metrics: SchedulerHandlerMetrics;
  readonly taskLogger: TaskLogger;
  /** Told of each Scheduler the invocation creates (one per lease held), and of its lease events. */
  readonly onScheduler?: ((scheduler: Scheduler) => void) | undefined;
  readonly onLease?: ((event: 'acquired' | 'lost' | 'released', lease: Lease) => void) | undefined;
  /** A tick failed: the loop starts over with a fresh scheduler (the chaos harness counts it as an outage). */
  readonly onTickError?: ((error: unknown) => void) | undefined;
}

/** The scheduler Lambda's handler over what it needs (`handler` below is the deployed one). */
export function schedulerHandler(deps: SchedulerHandlerDeps) {
  const { logger, metrics, taskLogger } = deps;
  return async (event: SchedulerEvent | undefined, context: Context): Promise<SchedulerRun> => {
    logger.addContext(context);
    const services = deps.services();
    const reason = event?.reason === 'wake' || event?.reason === 'handover' ? event.reason : 'tick';
    const shards = services.config.scheduler.shards;
    const shard: ShardScope = { shard: shardFromEvent(event, shards), shards };
    const control = services.control.forShard(shard.shard);
    const leaseName = schedulerLeaseName(shard.shard);
    const tally = new SchedulerTally();
    let completedLoop = false;
    try {
      if (reason === 'tick') {
        if (shard.shard === 0) {
          // The batch sweeper runs on every tick, even when nothing is due (app/batches.ts).
          await services.batches
            .sweep()
            .catch((error: unknown) => logger.warn('batch sweep failed', { error: String(error) }));
          // One schedule ticks shard 0; it starts the other shards that have work and no scheduler.
          if (event?.shard === undefined && shards > 1) await tickOtherShards(services, shards, deps, context, logger);
        }
        const now = new Date();
        if (leaseIsLive(await control.getLease(leaseName), now.getTime())) {
          return finish('live-elsewhere');
        }
        if (!(await hasSchedulerWork(services, now, undefined, shard))) return finish('nothing-due');
      }
      const end = await runSchedulerLoop({
        control,
        leaseName,
        signal: new AbortController().signal,
        ownerId: `lambda-${context.awsRequestId}`,
        ...lambdaInvocationTiming(() => context.getRemainingTimeInMillis()),
        waitForLease: false,
        idleStop: {
          afterMs: IDLE_STOP_MS,
          graceMs: STOP_GRACE_MS,
          hasWork: (keepAlive) => hasSchedulerWork(services, new Date(), DUE_HORIZON_MS, shard, keepAlive),
        },
        logger: taskLogger,
        createScheduler: () => {
          const scheduler = shardScheduler(services, shard, taskLogger, {
            onUnregisteredQueued: (count) => {
              tally.unregisteredQueued += count;
            },
          });
          deps.onScheduler?.(scheduler);
          return scheduler;
        },
        onTick: (result, scheduler) => tally.tick(result, scheduler, Date.now()),
        onTickError: (error) => {
          tally.tickErrors++;
          deps.onTickError?.(error);
        },
        onLease: (leaseEvent, lease) => {
          logger.info(`scheduler lease ${leaseEvent}`, { token: lease.token, shard: shard.shard });
          deps.onLease?.(leaseEvent, lease);
        },
      });
      if (end === 'stopped' && services.config.scheduler.mode === 'service') {
        // The Lambda only stands in while the shard's service task is down: out of time, it hands
        // the lease back to the service (waiting for it) rather than to another invocation; were
        // the service still down, the next announcement or tick starts an invocation again.
        logger.info('scheduler Lambda out of time: the scheduler service takes the lease', { shard: shard.shard });
        return finish('stopped');
      }
      if (end === 'stopped') {
        // Out of time with work possibly left: a fresh invocation takes over at once (the lease is
        // already handed back) instead of leaving it to the next tick.
        try {
          await deps.handOver(
            context,
            shard.shard === 0 ? { reason: 'handover' } : { reason: 'handover', shard: shard.shard },
          );
          return finish('handed-over');
        } catch (error) {
          logger.warn('could not hand over; the next tick starts a scheduler', { error: String(error) });
          return finish('stopped');
        }
      }
      return finish(end);
    } catch (error) {
      metrics.addMetric(METRIC.schedulerErrors, 'Count', 1);
      throw error;
    } finally {
      tally.publish(metrics, { tenantMetrics: services.config.deploy.tenantMetrics, completedLoop });
      await flushTraces();
    }

    function finish(ended: SchedulerRun['ended']): SchedulerRun {
      const run: SchedulerRun = { ticks: tally.ticks, dispatched: tally.dispatched, ended };
      // A pass in which every tick failed is no completed loop: the silence alarm sees it too.
      completedLoop = tally.tickErrors === 0 || tally.ticks > 0;
      if (ended !== 'live-elsewhere' && ended !== 'nothing-due') {
        logger.info('scheduler invocation ended', { reason, ...run, tickErrors: tally.tickErrors });
      }
      return run;
    }
  };
}

/** The shard an event names (0 when it names none, or one the configuration does not have). */
export function shardFromEvent(event: SchedulerEvent | undefined, shards: number): number {
  const shard = event?.shard;
  return typeof shard === 'number' && Number.isInteger(shard) && shard >= 0 && shard < shards ? shard : 0;
}

/**
 * The per-minute tick of shards 1 … N-1, run by shard 0's tick: each shard with no live
 * scheduler and work due gets an invocation of its own (a failed one is logged: the next tick
 * tries again, as for shard 0 itself).
 */
async function tickOtherShards(
  services: Services,
  shards: number,
  deps: SchedulerHandlerDeps,
  context: Context,
  logger: SchedulerHandlerLogger,
): Promise<void> {
  const now = new Date();
  await Promise.all(
    shardIndexes(shards)
      .filter((shard) => shard !== 0)
      .map(async (shard) => {
        try {
          if (leaseIsLive(await services.control.getLease(schedulerLeaseName(shard)), now.getTime())) return;
          if (!(await hasSchedulerWork(services, now, undefined, { shard, shards }))) return;
          await deps.handOver(context, { reason: 'wake', shard });
        } catch (error) {
          logger.warn('could not start a shard from the tick', { shard, error: String(error) });
        }
      }),
  );
}

/** The deployed scheduler Lambda. */
export const handler = schedulerHandler({
  services: servicesFromEnvironment,
  handOver: (context, event) => invokeScheduler(context.functionName, event),
  logger,
  metrics,
  taskLogger,
});
