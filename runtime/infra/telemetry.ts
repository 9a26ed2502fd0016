/**
 * The one definition of metric names. The runtime emits them through Powertools Metrics; the CDK
 * dashboard and alarms (lib/monitoring.ts) read them back. Pure data: no AWS SDK or CDK imports.
 *
 * Contract for emitters: publish every metric below in METRICS_NAMESPACE with exactly the
 * default dimension set `{ service: DEFAULT_SERVICE_NAME }` (Powertools adds `service` by itself).
 * Alarms match a metric only on its exact dimension set, so a metric published only with extra
 * dimensions (tier, pool, tenant) would never reach them.
 */

/** CloudWatch namespace of every custom metric (also set as `POWERTOOLS_METRICS_NAMESPACE`). */
export const METRICS_NAMESPACE = 'TaskScheduler';

/** The `service` dimension of every metric (also set as `POWERTOOLS_SERVICE_NAME` on AWS). */
export const DEFAULT_SERVICE_NAME = 'task-scheduler';

/** Metric names, unit Count unless they say otherwise. */
export const METRIC = {
  /** A task was accepted by `POST /v1/tasks` or a schedule (not counted for idempotent replays). */
  tasksSubmitted: 'TasksSubmitted',
  /** The scheduler sent a task to a worker queue. */
  tasksDispatched: 'TasksDispatched',
  tasksSucceeded: 'TasksSucceeded',
  /** A task reached FAILED (no attempts left or a non-retryable error). */
  tasksFailed: 'TasksFailed',
  /** A failed attempt went back to QUEUED with backoff. */
  tasksRetried: 'TasksRetried',
  /** The redrive handler received a message from a worker dead-letter queue. */
  deadLettered: 'DeadLettered',
  /** The scheduler finished one pass of its loop; emitted at least once a minute while healthy. */
  schedulerLoopCompleted: 'SchedulerLoopCompleted',
  /** The scheduler invocation failed (one per failed invocation). */
  schedulerErrors: 'SchedulerErrors',
  /** A scheduler tick failed and the loop started over (one per failed tick). */
  schedulerTickErrors: 'SchedulerTickErrors',
  /**
   * Seconds since the oldest task the scheduler holds became eligible (its `agingFrom`), per
   * tier: published with the extra `tier` dimension, only for tiers with held tasks. SQS's
   * ApproximateAgeOfOldestMessage cannot see messages received 3+ times, as held ones are.
   */
  oldestWaitingSeconds: 'OldestWaitingSeconds',
  /**
   * The real backlog (QUEUED tasks, each tenant-tier counted up to 10,000 by the scheduler,
   * runtime/scheduler/backlog.ts): per tier on `{ service, tier }`, and for the
   * `deploy.tenantMetrics` largest tenant-tiers on `{ service, tenant, tier }` (with their
   * OldestWaitingSeconds there too). Published by the scheduler while there is a backlog: for
   * alarms, and for scaling workers on the backlog rather than on SQS depth.
   */
  queuedTasks: 'QueuedTasks',
  /**
   * QUEUED tasks the registry backstop found with no registered tenant-tier and no announcement
   * left (runtime/scheduler/backstop.ts), announced again. Published only when non-zero: a crash
   * between a submit's write and its announcement, or index lag beyond G at a deregistration.
   */
  unregisteredQueued: 'UnregisteredQueued',
} as const;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

/** Dimension names. Only `service` is on the alarmed dimension set; the others are optional extras. */
export const DIMENSION = {
  service: 'service',
  /** Worker pool: `lambda` or `fargate`. */
  pool: 'pool',
  /** Priority tier: `critical`, `high`, `normal`, `low`. */
  tier: 'tier',
  /** Tenant id (backlog metrics of the largest tenant-tiers only). */
  tenant: 'tenant',
} as const;

/** Environment variables Powertools reads; the stack sets them on every function and container. */
export const POWERTOOLS_ENV = {
  serviceName: 'POWERTOOLS_SERVICE_NAME',
  metricsNamespace: 'POWERTOOLS_METRICS_NAMESPACE',
  logLevel: 'POWERTOOLS_LOG_LEVEL',
} as const;
