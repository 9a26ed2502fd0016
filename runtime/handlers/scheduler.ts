/**
 * Scheduler Lambda. It runs only while there is work (runtime/scheduler/activation.ts):
 * - `{ reason: 'wake' }`, from whatever announced a task while no scheduler ran, and
 *   `{ reason: 'handover' }`, from a predecessor that reached its time limit with work left:
 *   take the lease and loop;
 * - `{ reason: 'tick' }`, every minute from EventBridge Scheduler (the safety net): exit at once
 *   when a scheduler holds the lease or nothing is due, else loop.
 * The loop stops after a spell with nothing to hold or run, or shortly before the timeout (then
 * it hands over to a fresh invocation). The lease keeps one scheduler active: an invocation that
 * finds it taken exits.
 *
 * `schedulerHandler` builds it from what it needs (the deployed one: services from the
 * environment, a handover by asynchronous invoke, Powertools); the simulation runs the same
 * handler over its simulated account and Lambda (sim/chaos/run.ts).
 */
import type { Context } from 'aws-lambda';
import type { Lease } from '../adapters/control-store.ts';
import { invokeScheduler, type Services, servicesFromEnvironment } from '../app/wiring.ts';
import type { TaskLogger } from '../core/logger.ts';
import type { SchedulerSnapshot } from '../core/scheduler-snapshot.ts';
import { type ShardScope, schedulerLeaseName, shardIndexes } from '../core/shards.ts';
import { DIMENSION, METRIC } from '../infra/telemetry.ts';
import {
  DUE_HORIZON_MS,
  hasSchedulerWork,
  IDLE_STOP_MS,
  leaseIsLive,
  type SchedulerEvent,
  STOP_GRACE_MS,
} from '../scheduler/activation.ts';
import { Scheduler } from '../scheduler/scheduler.ts';
import { lambdaInvocationTiming, runSchedulerLoop } from '../scheduler/scheduler-loop.ts';
import { flushTraces } from '../telemetry/tracing.ts';
import { logger, metrics, taskLogger } from './observability.ts';

/** How often the oldest waiting age per tier is sampled from the scheduler's snapshot. */
const AGE_SAMPLE_MS = 5_000;

export { idleWait } from '../scheduler/scheduler-loop.ts';

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

type Unit = 'Count' | 'Seconds';
/** What the handler publishes metrics through (Powertools' Metrics has it). */
export interface SchedulerHandlerMetrics {
  addMetric(name: string, unit: Unit, value: number): void;
  singleMetric(): {
    addDimension(name: string, value: string): void;
    addDimensions(dimensions: Record<string, string>): void;
    addMetric(name: string, unit: Unit, value: number): void;
  };
  publishStoredMetrics(): void;
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
    let ticks = 0;
    let dispatched = 0;
    let tickErrors = 0;
    /** QUEUED tasks the registry backstop found unread (runtime/scheduler/backstop.ts); normally 0. */
    let unregisteredQueued = 0;
    /** Oldest wait per tier seen in this invocation (seconds since agingFrom, from the snapshot). */
    const oldestWait = new Map<string, number>();
    /** The latest backlog the scheduler counted (its snapshot's), published once at the end. */
    let backlog: SchedulerSnapshot['backlog'];
    let sampledAtMs = 0;
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
          return finish({ ticks, dispatched, ended: 'live-elsewhere' });
        }
        if (!(await hasSchedulerWork(services, now, undefined, shard)))
          return finish({ ticks, dispatched, ended: 'nothing-due' });
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
          hasWork: () => hasSchedulerWork(services, new Date(), DUE_HORIZON_MS, shard),
        },
        logger: taskLogger,
        createScheduler: () => {
          const scheduler = new Scheduler({
            store: services.store,
            control,
            queues: services.queues,
            config: services.config,
            shard,
            logger: taskLogger,
            // Shard 0 runs the batch sweeper (every shard's batches: they are not per tenant).
            ...(shard.shard === 0 ? { sweepBatches: () => services.batches.sweep() } : {}),
            // Every shard counts the batch members' ends its completions report (one write a counter shard).
            countBatchEnds: (ends) => services.batches.membersEnded(ends),
            onUnregisteredQueued: (count) => {
              unregisteredQueued += count;
            },
          });
          deps.onScheduler?.(scheduler);
          return scheduler;
        },
        onTick: (result, scheduler) => {
          ticks++;
          dispatched += result.dispatched;
          const nowMs = Date.now();
          if (scheduler.heldCount > 0 && nowMs - sampledAtMs >= AGE_SAMPLE_MS) {
            sampledAtMs = nowMs;
            const snapshot = scheduler.snapshot();
            for (const [tier, { waiting, oldestWaitSeconds }] of Object.entries(snapshot.tiers)) {
              if (waiting > 0) oldestWait.set(tier, Math.max(oldestWait.get(tier) ?? 0, oldestWaitSeconds));
            }
            backlog = snapshot.backlog;
          }
        },
        onTickError: () => {
          tickErrors++;
        },
        onLease: (leaseEvent, lease) => {
          logger.info(`scheduler lease ${leaseEvent}`, { token: lease.token, shard: shard.shard });
          deps.onLease?.(leaseEvent, lease);
        },
      });
      if (end === 'stopped') {
        // Out of time with work possibly left: a fresh invocation takes over at once (the lease is
        // already handed back) instead of leaving it to the next tick.
        try {
          await deps.handOver(
            context,
            shard.shard === 0 ? { reason: 'handover' } : { reason: 'handover', shard: shard.shard },
          );
          return finish({ ticks, dispatched, ended: 'handed-over' });
        } catch (error) {
          logger.warn('could not hand over; the next tick starts a scheduler', { error: String(error) });
          return finish({ ticks, dispatched, ended: 'stopped' });
        }
      }
      return finish({ ticks, dispatched, ended: end });
    } catch (error) {
      metrics.addMetric(METRIC.schedulerErrors, 'Count', 1);
      throw error;
    } finally {
      publishOldestWait(oldestWait, metrics);
      publishBacklog(backlog, services.config.deploy.tenantMetrics, metrics);
      metrics.publishStoredMetrics();
      await flushTraces();
    }

    function finish(run: SchedulerRun): SchedulerRun {
      if (run.dispatched > 0) metrics.addMetric(METRIC.tasksDispatched, 'Count', run.dispatched);
      if (tickErrors > 0) metrics.addMetric(METRIC.schedulerTickErrors, 'Count', tickErrors);
      if (unregisteredQueued > 0) metrics.addMetric(METRIC.unregisteredQueued, 'Count', unregisteredQueued);
      // A pass in which every tick failed is no completed loop: the silence alarm sees it too.
      if (tickErrors === 0 || ticks > 0) metrics.addMetric(METRIC.schedulerLoopCompleted, 'Count', 1);
      if (run.ended !== 'live-elsewhere' && run.ended !== 'nothing-due') {
        logger.info('scheduler invocation ended', { reason, ...run, tickErrors });
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

/**
 * The real backlog (EMF through Powertools): QueuedTasks per tier on `{ service, tier }`, and for
 * the `perTenant` largest tenant-tiers QueuedTasks and OldestWaitingSeconds on
 * `{ service, tenant, tier }`. Nothing while there is no backlog (no metric-hours billed idle).
 */
export function publishBacklog(
  backlog: SchedulerSnapshot['backlog'],
  perTenant: number,
  sink: SchedulerHandlerMetrics = metrics,
): void {
  if (!backlog) return;
  const perTier = new Map<string, number>();
  const rows: { tenantId: string; tier: string; queued: number; oldestWaitSeconds: number }[] = [];
  for (const [tenantId, tiers] of Object.entries(backlog)) {
    for (const [tier, row] of Object.entries(tiers)) {
      if (!row || row.queued === 0) continue;
      perTier.set(tier, (perTier.get(tier) ?? 0) + row.queued);
      rows.push({ tenantId, tier, queued: row.queued, oldestWaitSeconds: row.oldestWaitSeconds });
    }
  }
  for (const [tier, queued] of perTier) {
    const single = sink.singleMetric();
    single.addDimension(DIMENSION.tier, tier);
    single.addMetric(METRIC.queuedTasks, 'Count', queued);
  }
  rows.sort((a, b) => b.queued - a.queued);
  for (const row of rows.slice(0, perTenant)) {
    const single = sink.singleMetric();
    single.addDimensions({ [DIMENSION.tenant]: row.tenantId, [DIMENSION.tier]: row.tier });
    single.addMetric(METRIC.queuedTasks, 'Count', row.queued);
    single.addMetric(METRIC.oldestWaitingSeconds, 'Seconds', Math.round(row.oldestWaitSeconds));
  }
}

/** One data point per tier with waiting tasks, on the `{ service, tier }` dimension set. */
function publishOldestWait(oldestWait: ReadonlyMap<string, number>, sink: SchedulerHandlerMetrics): void {
  for (const [tier, seconds] of oldestWait) {
    const single = sink.singleMetric();
    single.addDimension(DIMENSION.tier, tier);
    single.addMetric(METRIC.oldestWaitingSeconds, 'Seconds', Math.round(seconds));
  }
}
