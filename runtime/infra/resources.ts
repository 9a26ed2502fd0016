/**
 * The one definition of tables and queues. The CDK stack (lib/) and the local runtime
 * (local/) both build their resources from these objects, so they cannot drift.
 * Pure data: no AWS SDK or CDK imports.
 */
import { shardIndexes, shardSuffix } from '../core/shards.ts';
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
  /** A DynamoDB stream on AWS (the emulators have none). */
  readonly stream?: 'NEW_AND_OLD_IMAGES';
}

/**
 * Tasks. One item per task, key `taskId`. Derived attributes maintained by the store on every
 * write feed the indexes (all string-typed). No index key takes every task of a tenant (or of a
 * state): DynamoDB serves 1,000 write units a second per key value, GSIs included, and a GSI that
 * cannot take its write refuses the table write (issue 24; the keys and their costs:
 * docs/storage.md).
 * - `listKey`      = `${submittedAt}#${taskId}`: newest-first listing within a partition.
 * - `tenantState`  = `${tenantId}#${state}#${shard}`, the shard (0-7) a hash of the task id
 *   (runtime/adapters/index-keys.ts): a tenant's tasks in one state, over `TENANT_KEY_SHARDS`
 *   keys, read back by a scatter-gather over them. Absent while DISPATCHED or RUNNING (sparse),
 *   so dispatch and start do not move the entry; a tenant's leased tasks, never more than the
 *   pools hold, are read from `byLeased` by tenant instead. Absent too for a QUEUED task due when
 *   submitted: `byTenantQueue` lists it in the same place (its `queueSort` is then its `listKey`),
 *   so its submit and dispatch write no entry here; a task held for dependencies is under
 *   `${tenantId}#HELD#${shard}` (index-keys.ts `queuedListingOf`). A tenant's tasks in every state
 *   are the union of the three. Items an older version wrote carry `${tenantId}#${state}` until
 *   their next write; readers query that key too, for one release.
 * - `leasedShard`  = `LEASED#${shard}` (0-31) while DISPATCHED or RUNNING, absent otherwise (sparse),
 *   sharded so the index has no hot partition; `leasedAt` is `dispatchedAt`: `byLeased`. Its
 *   key does not change at start or on a lease renewal, and it projects nothing those writes
 *   change (not `state`, not `leaseExpiresAt`), so they cost no index write at all. The scheduler
 *   rebuilds its count of running work from it after a restart; reconciliation reads the leased
 *   items themselves (never more than the pools hold) for their state and lease. QUEUED tasks
 *   are not in it: their index is `byTenantQueue`.
 * - `byTenant` (partition key `tenantId`, sort key `listKey`) is deleted in this release: its one
 *   key per tenant took a write at every submit, so one tenant could not submit more than 1,000
 *   tasks a second. A GSI's key cannot change in place and one stack update may create or delete
 *   only one GSI; its listing is the union above, which needs no new index.
 * - `activeShard` / `dueAt`: no longer written. `byActive` was `byLeased` with `state` and
 *   `leaseExpiresAt` projected (1 index write unit at start and at every renewal), and before
 *   issue 11 step 9 it held QUEUED tasks too. A GSI's projection cannot change in place, and one
 *   stack update may create or delete only one GSI, so it stays defined (empty but for items an
 *   older version wrote, until their next write; its `LEASED#` partitions are still read, so
 *   tasks such a version leased are seen) and is deleted in the release after `byTenant`'s.
 * - `queueKey`     = `${tenantId}#${priority}#${shard}` and `queueSort` = `${runAt}#${taskId}`,
 *   only while QUEUED (sparse): `byTenantQueue`, each tenant-tier's queued work in due order over
 *   `TENANT_KEY_SHARDS` keys, which the scheduler reads a window at a time (docs/intake.md),
 *   merging the shards oldest due first. It projects what the policy engine needs, so a window
 *   costs no item reads; a consistent read before dispatch is the truth. The registry backstop
 *   scans it a page at a time (runtime/scheduler/backstop.ts). Older items' `${tenantId}#${priority}`
 *   is read too, for one release.
 */
export const TASKS_TABLE = {
  id: 'tasks',
  partitionKey: 'taskId',
  ttlAttribute: 'expiresAt',
  // Task events on AWS: each state change read from the images (runtime/events/stream.ts).
  stream: 'NEW_AND_OLD_IMAGES',
  indexes: [
    { indexName: 'byTenantState', partitionKey: 'tenantState', sortKey: 'listKey', nonKeyAttributes: [] },
    {
      indexName: 'byLeased',
      partitionKey: 'leasedShard',
      sortKey: 'leasedAt',
      nonKeyAttributes: ['tenantId', 'priority', 'runtime', 'resources', 'fence', 'runAt', 'agingFrom', 'submittedAt'],
    },
    /** Superseded by `byLeased`, no longer written: delete in the next release (see above). */
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

/**
 * Shards of the `byLeased` index partition key. Two index writes per task (added at dispatch,
 * removed at the end) over 32 keys: 10,000 tasks a second is 625 write units a second per key,
 * under DynamoDB's 1,000. Versions before issue 24 used 4 (`LEGACY_ACTIVE_SHARDS`): their
 * entries, `LEASED#0` … `LEASED#3`, are among the 32 read, so nothing is lost at the upgrade.
 */
export const ACTIVE_SHARDS = 32;

/** Shards `byActive` (written only by versions before `byLeased`) used: read for one release. */
export const LEGACY_ACTIVE_SHARDS = 4;

/**
 * Shards of a tenant's `byTenantState` and `byTenantQueue` keys (runtime/adapters/index-keys.ts).
 * A task writes its QUEUED entry twice (submit, dispatch) in `byTenantQueue`, and in
 * `byTenantState` when due later than submitted: 8 keys take one tenant to about 4,000 submits a
 * second before one of them reaches 1,000 write units a second.
 */
export const TENANT_KEY_SHARDS = 8;

/**
 * Control items: tenant settings (`tenant#<id>`) and the scheduler's lease (`lease#scheduler`).
 * Small, rarely written, read with strong consistency.
 */
export const CONTROL_TABLE = {
  id: 'control',
  partitionKey: 'pk',
  indexes: [],
} as const satisfies TableDefinition;

/**
 * The lease ledger (issue 25; runtime/adapters/lease-pages.ts): a page per dispatch round naming
 * the attempts it leases, written before their dispatch writes and deleted once all have ended.
 * It replaced the `byLeased` index, whose entry cost 2 write units a task; read with strong
 * consistency, by key. Partition `P<k>` spreads the pages over `LEASE_PARTITIONS` keys.
 */
export const LEASES_TABLE = {
  id: 'leases',
  partitionKey: 'partition',
  sortKey: 'page',
  indexes: [],
} as const satisfies TableDefinition;

/** Partition keys of the lease ledger: pages go round robin, readers Query every one. */
export const LEASE_PARTITIONS = 8;

export const TABLES = [TASKS_TABLE, CONTROL_TABLE, LEASES_TABLE] as const;

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
export const tierQueue = (tier: PriorityTier, shard = 0): QueueDefinition => ({
  id: `tier-${tier}${shardSuffix(shard)}`,
  visibilityTimeoutSeconds: 120,
  retentionSeconds: TIER_RETENTION_SECONDS,
  // An announcement is received once in normal operation, +1 per scheduler crash between its
  // receive and its delete; 5 leaves room for two crashes and a duplicate. What does reach the
  // tier DLQ is drained back by the redrive consumer and alarmed (docs/intake.md, step 2).
  deadLetter: { id: `tier-${tier}${shardSuffix(shard)}-dlq`, maxReceiveCount: 5, retentionSeconds: 14 * DAY },
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

/**
 * A queue of its own for a task type run by the user's own Lambda function or container (the CDK
 * construct's `taskTypeWorkers`, with the worker library): the scheduler dispatches that type's
 * attempts here instead of to its pool's queue. `visibilityTimeoutSeconds`: six times the
 * function's timeout for a Lambda consumer (the event source guidance); a container extends
 * visibility while it runs, as the Fargate pool does.
 */
export const taskTypeQueue = (type: string, visibilityTimeoutSeconds: number): QueueDefinition => {
  const id = `worker-type-${type.replaceAll('.', '_')}`;
  return {
    id,
    visibilityTimeoutSeconds,
    retentionSeconds: 4 * DAY,
    deadLetter: { id: `${id}-dlq`, maxReceiveCount: 5, retentionSeconds: 14 * DAY },
  };
};

/** Workers report finished attempts to their tenant's shard's queue, so its scheduler frees capacity without polling. */
export const completionsQueue = (shard = 0): QueueDefinition => ({
  id: `completions${shardSuffix(shard)}`,
  visibilityTimeoutSeconds: 30,
  retentionSeconds: 1 * DAY,
});
export const COMPLETIONS_QUEUE: QueueDefinition = completionsQueue(0);

/** Shard 0's tier queues: the only ones of a single scheduler. */
export const TIER_QUEUES = PRIORITY_TIERS.map((tier) => tierQueue(tier));
export const WORKER_QUEUES = RUNTIMES.map(workerQueue);

/** Every shard's tier queues (`scheduler.shards`), shard by shard. */
export const tierQueuesFor = (shards: number): readonly QueueDefinition[] =>
  shardIndexes(shards).flatMap((shard) => PRIORITY_TIERS.map((tier) => tierQueue(tier, shard)));
/** Every shard's completions queue. */
export const completionQueuesFor = (shards: number): readonly QueueDefinition[] =>
  shardIndexes(shards).map(completionsQueue);
/** The queues of a deployment with `shards` schedulers: tiers and completions per shard, the worker pools once. */
export const queuesFor = (shards: number): readonly QueueDefinition[] => [
  ...tierQueuesFor(shards),
  ...WORKER_QUEUES,
  ...completionQueuesFor(shards),
];
/** The queues of a single scheduler (the same ids as before shards existed). */
export const QUEUES: readonly QueueDefinition[] = queuesFor(1);

/**
 * The Lambda pool's worker functions, one per memory class (CPU comes in proportion, 1 vCPU per
 * 1,769 MB), smallest first. Each task runs in the smallest class that gives it the memory and
 * vCPU it asks for (`lambdaWorkerClassFor`), so the default task (0.25 vCPU, 512 MiB) pays for
 * 512 MiB of GB-seconds instead of 2,048.
 *
 * Only the first class (the entry) consumes the `worker-lambda` queue through an event source
 * mapping; it runs what fits it and hands a bigger task to its class's function with an
 * asynchronous invoke (runtime/worker/lambda-classes.ts). One mapping, however many classes: an
 * idle mapping long-polls its queue all month (about $0.26 of receives), and one per class would
 * take the idle stack past its $3 (docs/deploy.md). The classes share the pool's concurrency
 * slots (`pools.lambda.concurrency`): the scheduler counts a slot per task whatever its class.
 *
 * 2,048 MiB is the largest class: the example task types need it, and new accounts may be held
 * to 3,008 MB per function until they ask, so a 10,240 MB class could fail a first deploy. A task
 * asking for more memory or vCPU than the largest class goes to Fargate when it names no runtime,
 * and is refused (400 `exceeds_pool`) when it names `lambda`.
 */
export const LAMBDA_WORKER_CLASSES = [
  { memoryMiB: 512 },
  { memoryMiB: 2048 },
] as const satisfies readonly LambdaWorkerSize[];

/** The largest Lambda worker class: what submit checks a `lambda` task against. */
export const LAMBDA_WORKER: LambdaWorkerSize = LAMBDA_WORKER_CLASSES[LAMBDA_WORKER_CLASSES.length - 1]!;

/** The class whose function consumes `worker-lambda` (the smallest). */
export const LAMBDA_ENTRY_CLASS: LambdaWorkerSize = LAMBDA_WORKER_CLASSES[0];

/** Environment variable names through which handlers learn resource names (Lambda and local). */
export const ENV = {
  tasksTable: 'TASKS_TABLE',
  controlTable: 'CONTROL_TABLE',
  /** The lease ledger's table (LEASES_TABLE). */
  leasesTable: 'LEASES_TABLE',
  /** JSON object: queue id → queue URL. */
  queueUrls: 'QUEUE_URLS',
  /**
   * With `scheduler.shards` > 1: the URL of every shard's queues but its id (`…/<stack>-`), so the
   * other shards' queues need no entry in QUEUE_URLS (4 KB of environment in all).
   */
  queueUrlPrefix: 'QUEUE_URL_PREFIX',
  config: 'SCHEDULER_CONFIG',
  configJson: 'SCHEDULER_CONFIG_JSON',
  /** Name of the scheduler Lambda, which announcers wake when it has scaled to zero (not set locally). */
  schedulerFunction: 'SCHEDULER_FUNCTION',
  /** A Lambda worker's own memory class, in MiB (set on every worker function; unset: the entry class). */
  workerMemoryMiB: 'WORKER_MEMORY_MIB',
  /** JSON object: memory class in MiB → function name, on the entry worker that hands bigger tasks on. */
  workerClassFunctions: 'WORKER_CLASS_FUNCTIONS',
  /** Name of the task event bus (the stream function puts events on it). */
  eventBus: 'TASK_EVENT_BUS',
  /** URL of the webhook delivery queue (set on the stream function when webhooks are configured). */
  webhookQueueUrl: 'WEBHOOK_QUEUE_URL',
  /** JSON array, per configured webhook: url, filters and the Secrets Manager ARN of its secret. */
  webhooks: 'WEBHOOKS',
  /**
   * JSON object: task type → the definition of its own queue (`taskTypeQueue`), for the types the
   * user's own functions or containers run; their URLs are in QUEUE_URLS. Unset: none.
   */
  taskTypeQueues: 'TASK_TYPE_QUEUES',
  /** The shard a scheduler service task schedules (`scheduler.mode` "service"; 0 to shards − 1). */
  schedulerShard: 'SCHEDULER_SHARD',
  /** The queue a worker-library container long-polls (its type's queue id). */
  workerQueue: 'WORKER_QUEUE',
} as const;

/**
 * The webhook deliveries on AWS (docs/events.md): a FIFO queue whose message group is webhook +
 * task, so a task's events reach each webhook in order and a failing one holds back only its own
 * task's later events. Not created locally (the local runtime delivers from its outbox). Retried
 * with backoff for about two days before the dead-letter queue (FIFO: its own kind). Visible
 * again after 6 × the delivery function's 30 s timeout (Lambda's guidance for SQS event sources:
 * a throttled invocation is retried until then); a refused delivery sets its own backoff.
 */
export const WEBHOOK_DELIVERY_QUEUE = {
  id: 'webhook-deliveries',
  visibilityTimeoutSeconds: 180,
  retentionSeconds: 4 * DAY,
  deadLetter: { id: 'webhook-deliveries-dlq', maxReceiveCount: 600, retentionSeconds: 14 * DAY },
} as const satisfies QueueDefinition;

/** Days a finished task is kept before DynamoDB TTL removes it. */
export const FINISHED_TASK_RETENTION_DAYS = 30;
