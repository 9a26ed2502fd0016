/**
 * What a scheduler publishes about its work (EMF through Powertools), shared by the scheduler
 * Lambda (once per invocation) and the long-lived scheduler service (once a minute): tasks
 * dispatched, failed ticks, QUEUED tasks found unregistered, the oldest wait per tier and the
 * backlog, and SchedulerLoopCompleted, which the silence alarm watches.
 */
import type { SchedulerSnapshot } from '../core/scheduler-snapshot.ts';
import { DIMENSION, METRIC } from '../infra/telemetry.ts';
import type { Scheduler, TickResult } from '../scheduler/scheduler.ts';

/** How often the oldest waiting age per tier is sampled from the scheduler's snapshot. */
const AGE_SAMPLE_MS = 5_000;

type Unit = 'Count' | 'Seconds';
/** What a scheduler publishes metrics through (Powertools' Metrics has it). */
export interface SchedulerHandlerMetrics {
  addMetric(name: string, unit: Unit, value: number): void;
  singleMetric(): {
    addDimension(name: string, value: string): void;
    addDimensions(dimensions: Record<string, string>): void;
    addMetric(name: string, unit: Unit, value: number): void;
  };
  publishStoredMetrics(): void;
}

/** Counts of one reporting period: one Lambda invocation, or one minute of the service. */
export class SchedulerTally {
  ticks = 0;
  dispatched = 0;
  tickErrors = 0;
  /** QUEUED tasks the registry backstop found unread (runtime/scheduler/backstop.ts); normally 0. */
  unregisteredQueued = 0;
  /** Oldest wait per tier seen in the period (seconds since agingFrom, from the snapshot). */
  readonly #oldestWait = new Map<string, number>();
  /** The latest backlog the scheduler counted (its snapshot's), published once at the end. */
  #backlog: SchedulerSnapshot['backlog'];
  #sampledAtMs = 0;

  tick(result: TickResult, scheduler: Scheduler, nowMs: number): void {
    this.ticks++;
    this.dispatched += result.dispatched;
    if (scheduler.heldCount === 0 || nowMs - this.#sampledAtMs < AGE_SAMPLE_MS) return;
    this.#sampledAtMs = nowMs;
    const snapshot = scheduler.snapshot();
    for (const [tier, { waiting, oldestWaitSeconds }] of Object.entries(snapshot.tiers)) {
      if (waiting > 0) this.#oldestWait.set(tier, Math.max(this.#oldestWait.get(tier) ?? 0, oldestWaitSeconds));
    }
    this.#backlog = snapshot.backlog;
  }

  /**
   * Publish the period's figures (`completedLoop`: whether it counts as a completed scheduler
   * pass for the silence alarm) and start a new period.
   */
  publish(metrics: SchedulerHandlerMetrics, options: { tenantMetrics: number; completedLoop: boolean }): void {
    if (this.dispatched > 0) metrics.addMetric(METRIC.tasksDispatched, 'Count', this.dispatched);
    if (this.tickErrors > 0) metrics.addMetric(METRIC.schedulerTickErrors, 'Count', this.tickErrors);
    if (this.unregisteredQueued > 0) metrics.addMetric(METRIC.unregisteredQueued, 'Count', this.unregisteredQueued);
    if (options.completedLoop) metrics.addMetric(METRIC.schedulerLoopCompleted, 'Count', 1);
    publishOldestWait(this.#oldestWait, metrics);
    publishBacklog(this.#backlog, options.tenantMetrics, metrics);
    metrics.publishStoredMetrics();
    this.ticks = 0;
    this.dispatched = 0;
    this.tickErrors = 0;
    this.unregisteredQueued = 0;
    this.#oldestWait.clear();
    this.#backlog = undefined;
  }
}

/**
 * The real backlog (EMF through Powertools): QueuedTasks per tier on `{ service, tier }`, and for
 * the `perTenant` largest tenant-tiers QueuedTasks and OldestWaitingSeconds on
 * `{ service, tenant, tier }`. Nothing while there is no backlog (no metric-hours billed idle).
 */
export function publishBacklog(
  backlog: SchedulerSnapshot['backlog'],
  perTenant: number,
  sink: SchedulerHandlerMetrics,
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
    // One singleMetric per metric: Powertools publishes a single metric at its addMetric and
    // clears the dimensions then, so a second metric on it would carry no tenant or tier.
    const perTenantMetric = (name: string, unit: Unit, value: number) => {
      const single = sink.singleMetric();
      single.addDimensions({ [DIMENSION.tenant]: row.tenantId, [DIMENSION.tier]: row.tier });
      single.addMetric(name, unit, value);
    };
    perTenantMetric(METRIC.queuedTasks, 'Count', row.queued);
    perTenantMetric(METRIC.oldestWaitingSeconds, 'Seconds', Math.round(row.oldestWaitSeconds));
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
