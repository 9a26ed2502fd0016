/**
 * The one definition of tables and queues. The CDK stack (lib/) and the local runtime
 * (local/) both build their resources from these objects, so they cannot drift.
 * Pure data: no AWS SDK or CDK imports.
 */
import { type LambdaWorkerSize, PRIORITY_TIERS, type PriorityTier, RUNTIMES, type Runtime } from '../core/task.ts';

export interface KeySchema {
  readonly partitionKey: string;
  readonly sortKey?: string;
}

export interface IndexDefinition extends KeySchema {
  readonly indexName: string;
  /** Non-key attributes copied into the index (INCLUDE projection); KEYS_ONLY when empty. */
  readonly nonKeyAttributes: readonly string[];
}

export interface TableDefinition extends KeySchema {
  /** Logical id; the physical name is `${prefix}-${id}` locally and chosen by CloudFormation on AWS. */
  readonly id: string;
  readonly indexes: readonly IndexDefinition[];
  /** Attribute holding an epoch-seconds expiry, for DynamoDB TTL. */
  readonly ttlAttribute?: string;
}

/**
 * Tasks. One item per task, key `taskId`. Derived attributes maintained by the store on every
 * write feed the indexes (all string-typed):
 * - `listKey`      = `${submittedAt}#${taskId}`: newest-first listing within a partition.
 * - `tenantState`  = `${tenantId}#${state}`: a tenant's tasks in one state; absent while
 *   DISPATCHED or RUNNING (sparse), so dispatch and start do not move the entry. A tenant's
 *   leased tasks, never more than the pools hold, are read from `byActive` by tenant instead.
 * - `activeShard`  = `QUEUED#${shard}` while QUEUED, `LEASED#${shard}` while DISPATCHED or
 *   RUNNING (sparse), sharded so the index has no hot partition; `dueAt` is `runAt` for QUEUED
 *   and `dispatchedAt` while leased. The leased key does not change at start or on a lease
 *   renewal, so those writes touch only projected attributes (1 index write unit, not 2). The
 *   scheduler rebuilds its view of running work from it after a restart, and reconciliation
 *   finds expired leases (a filter on the leased entries, never more than the pools hold) and
 *   never-enqueued tasks (a range query on QUEUED).
 * - `queueKey`     = `${tenantId}#${priority}` and `queueSort` = `${runAt}#${taskId}`, only while
 *   QUEUED (sparse): `byTenantQueue`, each tenant-tier's queued work in due order, which the
 *   scheduler reads a window at a time (docs/intake.md). It projects what the policy engine
 *   needs, so a window costs no item reads; a consistent read before dispatch is the truth.
 */
export const TASKS_TABLE = {
  id: 'tasks',
  partitionKey: 'taskId',
  ttlAttribute: 'expiresAt',
  indexes: [
    { indexName: 'byTenant', partitionKey: 'tenantId', sortKey: 'listKey', nonKeyAttributes: [] },
    { indexName: 'byTenantState', partitionKey: 'tenantState', sortKey: 'listKey', nonKeyAttributes: [] },
    {
      indexName: 'byActive',
      partitionKey: 'activeShard',
      sortKey: 'dueAt',
      nonKeyAttributes: [
        'tenantId',
        'state',
        'priority',
        'runtime',
        'resources',
        'fence',
        'runAt',
        'agingFrom',
        'submittedAt',
        'leaseExpiresAt',
      ],
    },
    {
      indexName: 'byTenantQueue',
      partitionKey: 'queueKey',
      sortKey: 'queueSort',
      nonKeyAttributes: ['tenantId', 'priority', 'runtime', 'resources', 'agingFrom', 'runAt', 'fence'],
    },
  ],
} as const satisfies TableDefinition;

/** Shards of the `byActive` index partition key. */
export const ACTIVE_SHARDS = 4;

/**
 * Control items: tenant settings (`tenant#<id>`) and the scheduler's lease (`lease#scheduler`).
 * Small, rarely written, read with strong consistency.
 */
export const CONTROL_TABLE = {
  id: 'control',
  partitionKey: 'pk',
  indexes: [],
} as const satisfies TableDefinition;

export const TABLES = [TASKS_TABLE, CONTROL_TABLE] as const;

export interface QueueDefinition {
  readonly id: string;
  /** Seconds a received message stays invisible; the CDK stack also checks it against consumers. */
  readonly visibilityTimeoutSeconds: number;
  readonly retentionSeconds: number;
  /** Dead-letter queue: receives a message after `maxReceiveCount` receives. */
  readonly deadLetter?: { readonly id: string; readonly maxReceiveCount: number; readonly retentionSeconds: number };
}

const DAY = 86_400;

/**
 * Tier messages are kept a week; longer-delayed tasks are re-announced as they come due. Half
 * the SQS maximum, so the tier dead-letter queues (14 days) keep a message well past its
 * source's retention: SQS ages a dead-lettered message from its original enqueue time.
 */
export const TIER_RETENTION_SECONDS = 7 * DAY;

/**
 * One standard queue per tier. Messages are announcements: the scheduler registers the
 * tenant-tier and deletes them within the tick (docs/intake.md), and reads the queued work
 * itself from `byTenantQueue`. They carry `MessageGroupId = tenantId` (SQS fair queues) so one
 * tenant's burst does not hold back the others' announcements.
 */
export const tierQueue = (tier: PriorityTier): QueueDefinition => ({
  id: `tier-${tier}`,
  visibilityTimeoutSeconds: 120,
  retentionSeconds: TIER_RETENTION_SECONDS,
  // An announcement is received once in normal operation, +1 per scheduler crash between its
  // receive and its delete; 5 leaves room for two crashes and a duplicate. What does reach the
  // tier DLQ is drained back by the redrive consumer and alarmed (docs/intake.md, step 2).
  deadLetter: { id: `tier-${tier}-dlq`, maxReceiveCount: 5, retentionSeconds: 14 * DAY },
});

/**
 * One queue per worker pool. Visibility covers the longest Lambda timeout six times over (the
 * AWS guidance for Lambda event sources); Fargate workers extend visibility while they run.
 * `maxReceiveCount` 5: a throttled or crashed delivery must not dead-letter a task that never ran.
 */
export const workerQueue = (runtime: Runtime): QueueDefinition => ({
  id: `worker-${runtime}`,
  visibilityTimeoutSeconds: runtime === 'lambda' ? 6 * 900 : 300,
  retentionSeconds: 4 * DAY,
  deadLetter: { id: `worker-${runtime}-dlq`, maxReceiveCount: 5, retentionSeconds: 14 * DAY },
});

/** Workers report finished attempts here so the scheduler frees capacity without polling. */
export const COMPLETIONS_QUEUE: QueueDefinition = {
  id: 'completions',
  visibilityTimeoutSeconds: 30,
  retentionSeconds: 1 * DAY,
};

export const TIER_QUEUES = PRIORITY_TIERS.map(tierQueue);
export const WORKER_QUEUES = RUNTIMES.map(workerQueue);
export const QUEUES: readonly QueueDefinition[] = [...TIER_QUEUES, ...WORKER_QUEUES, COMPLETIONS_QUEUE];

/**
 * The Lambda pool's worker function: one memory size (CPU comes in proportion, 1 vCPU per
 * 1,769 MB), which the CDK stack gives the function and submit checks tasks against. A task
 * asking for more memory or vCPU than this goes to Fargate when it names no runtime, and is
 * refused (400 `exceeds_pool`) when it names `lambda`: it would otherwise run short of what it
 * asked for. 2 GiB covers the example task types; raise it (up to Lambda's 10,240 MB) for
 * bigger Lambda tasks, at the price of every Lambda task's GB-seconds.
 */
export const LAMBDA_WORKER = { memoryMiB: 2048 } as const satisfies LambdaWorkerSize;

/** Environment variable names through which handlers learn resource names (Lambda and local). */
export const ENV = {
  tasksTable: 'TASKS_TABLE',
  controlTable: 'CONTROL_TABLE',
  /** JSON object: queue id → queue URL. */
  queueUrls: 'QUEUE_URLS',
  config: 'SCHEDULER_CONFIG',
  configJson: 'SCHEDULER_CONFIG_JSON',
  /** Name of the scheduler Lambda, which announcers wake when it has scaled to zero (not set locally). */
  schedulerFunction: 'SCHEDULER_FUNCTION',
} as const;

/** Days a finished task is kept before DynamoDB TTL removes it. */
export const FINISHED_TASK_RETENTION_DAYS = 30;
