/**
 * The task model. Pure data and constants: no AWS imports, no I/O, no clock.
 * Every other module (store, API, scheduler, workers, policy) speaks in these types.
 */

/** Priority tiers, highest first. The index is the tier's rank (0 = most urgent). */
export const PRIORITY_TIERS = ['critical', 'high', 'normal', 'low'] as const;
export type PriorityTier = (typeof PRIORITY_TIERS)[number];

export const tierRank = (tier: PriorityTier): number => PRIORITY_TIERS.indexOf(tier);

/** Worker pools. A task runs on exactly one. */
export const RUNTIMES = ['lambda', 'fargate'] as const;
export type Runtime = (typeof RUNTIMES)[number];

/**
 * Lifecycle states. A retry goes back to QUEUED with a future `runAt` (backoff), so there is
 * no separate waiting-for-retry state: "waiting" is always QUEUED, and the wait reason says why.
 */
export const TASK_STATES = ['QUEUED', 'DISPATCHED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const TERMINAL_STATES: readonly TaskState[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
export const ACTIVE_STATES: readonly TaskState[] = ['DISPATCHED', 'RUNNING'];
export const isTerminal = (state: TaskState): boolean => TERMINAL_STATES.includes(state);

export interface TaskResources {
  /** Virtual CPUs (Fargate accounting; Lambda tasks use one concurrency slot regardless). */
  readonly vcpu: number;
  readonly memoryMiB: number;
}

export interface TaskError {
  readonly name: string;
  readonly message: string;
  /** False when the handler threw a NonRetryableError: no further attempts. */
  readonly retryable: boolean;
  /** A stable machine-readable code where the scheduler itself ended the task (`DEPENDENCY_FAILED`). */
  readonly code?: string;
}

/**
 * One task as stored. Times are ISO 8601 strings (what the API returns and what sorts in
 * DynamoDB); the core converts to epoch milliseconds where it does arithmetic.
 */
export interface Task {
  readonly taskId: string;
  readonly tenantId: string;
  readonly type: string;
  readonly payload: unknown;
  readonly priority: PriorityTier;
  readonly idempotencyKey?: string;
  readonly resources: TaskResources;
  readonly runtime: Runtime;
  readonly timeoutSeconds: number;
  readonly maxAttempts: number;

  readonly state: TaskState;
  /** Attempts that reached RUNNING. Counted here, never from SQS receive counts. */
  readonly attempts: number;
  /** Incremented on every write: the optimistic-concurrency guard for API-side writes. */
  readonly version: number;
  /**
   * Fencing token: incremented at every dispatch and carried by the worker message. A worker
   * may write only while the stored fence equals its own, so a zombie's late write fails.
   */
  readonly fence: number;

  readonly submittedAt: string;
  /** Earliest time the task may be dispatched (delay, runAt or retry backoff). */
  readonly runAt: string;
  /** Origin of aging: when the task first became eligible. Retries keep it (and their age). */
  readonly agingFrom: string;
  readonly dispatchedAt?: string;
  readonly startedAt?: string;
  readonly finishedAt?: string;
  /** While DISPATCHED or RUNNING: past this instant the attempt is presumed dead. */
  readonly leaseExpiresAt?: string;
  readonly cancelRequested?: boolean;
  readonly result?: unknown;
  /** The last error (kept on retries so the API can show why the previous attempt failed). */
  readonly error?: TaskError;
  /** Hash of the submit request, to refuse a reused idempotency key with a different body. */
  readonly requestHash?: string;
  /**
   * Random tokens of the last few writes, newest last (set by the store). A writer whose
   * conditional write landed but whose response was lost finds its token here when the SDK's
   * retry fails the condition, and knows the write was its own.
   */
  readonly writeTokens?: readonly string[];
  /**
   * The scheduler lease token (epoch) of the last dispatch. A dispatch write from an older epoch
   * is refused, so a deposed scheduler cannot dispatch a task its successor has already written.
   */
  readonly schedulerEpoch?: number;
  /**
   * The task's count of state changes: 1 at creation, +1 at every write that changes `state`
   * and at no other (lease renewals do not move it). The `sequence` of its events (core/events.ts).
   * Absent on items written before events existed.
   */
  readonly eventSequence?: number;
  /** When `state` last changed (the `time` of the latest event). */
  readonly stateChangedAt?: string;
  /** W3C `traceparent` of the submit's span: the task's spans continue that trace. */
  readonly traceparent?: string;
  /**
   * At most `concurrencyLimit` (default 1) of its tenant's tasks with this key are dispatched or
   * running at once, as recorded in the key's holders item (adapters/flow-store.ts).
   */
  readonly concurrencyKey?: string;
  readonly concurrencyLimit?: number;
  /** Tasks of its tenant that must all SUCCEED before it may start (core/dependencies.ts). */
  readonly dependsOn?: readonly string[];
  /**
   * Those of `dependsOn` not yet known to have SUCCEEDED. Present (non-empty) exactly while the task
   * is held: QUEUED, but out of the scheduler's queue index and never dispatched.
   */
  readonly waitingOn?: readonly string[];
  /** Some task registered as depending on it: its end is settled for them (app/dependencies.ts). */
  readonly hasDependents?: boolean;
  /** The batch it was submitted in (POST /v1/tasks/batch) and its index there: its end is counted. */
  readonly batchId?: string;
  readonly batchIndex?: number;
  /**
   * Events recorded and not yet delivered, oldest first: the local runtime's durable outbox
   * (runtime/events/outbox-relay.ts), appended in the same conditional write as the change. Never
   * written on AWS, where the table's stream carries the changes.
   */
  readonly outbox?: readonly TaskEvent[];
}

/** One state change of a task, as delivered (core/events.ts; docs/events.md). */
export interface TaskEvent {
  /** The same for every delivery of this change: consumers de-duplicate on it. */
  readonly id: string;
  readonly type: 'task.state_changed';
  /** When the state changed (ISO 8601). */
  readonly time: string;
  readonly taskId: string;
  readonly tenantId: string;
  readonly taskType: string;
  readonly state: TaskState;
  /** Null for the QUEUED of a task's creation. */
  readonly previousState: TaskState | null;
  /** Attempts that reached RUNNING so far (the task's `attempts` after the change). */
  readonly attempt: number;
  readonly sequence: number;
}

/** What a caller supplies at submit, after validation and defaulting. */
export interface NewTaskSpec {
  readonly tenantId: string;
  readonly type: string;
  readonly payload: unknown;
  readonly priority: PriorityTier;
  readonly idempotencyKey?: string;
  readonly resources: TaskResources;
  readonly runtime: Runtime;
  readonly timeoutSeconds: number;
  readonly maxAttempts: number;
  /** Absolute earliest start (from `delaySeconds` or `runAt`); absent = now. */
  readonly runAt?: Date;
  /** W3C `traceparent` the task's spans continue (the submit span's). */
  readonly traceparent?: string;
  readonly concurrencyKey?: string;
  readonly concurrencyLimit?: number;
  /** Task ids of the same tenant that must all SUCCEED first (checked to exist before the write). */
  readonly dependsOn?: readonly string[];
  /** A batch member: its batch and index (core/batch.ts). */
  readonly batchId?: string;
  readonly batchIndex?: number;
}

/** Defined once, with its schema: core/tenant-settings.ts. */
export type { TenantSettings } from './tenant-settings.ts';

/** Limits of AWS Lambda itself; the pool's worker function may be smaller (`LambdaWorkerSize`). */
export const LAMBDA_LIMITS = {
  maxTimeoutSeconds: 900,
  maxMemoryMiB: 10_240,
  maxVcpu: 6,
} as const;

/** Lambda allots CPU in proportion to memory: one vCPU per 1,769 MB (AWS Lambda docs). */
export const LAMBDA_MIB_PER_VCPU = 1769;

/** What one Lambda worker invocation offers: its function's memory, and vCPU in proportion. */
export interface LambdaWorkerSize {
  readonly memoryMiB: number;
}

/** Whether a task gets at least the memory and vCPU it asks for from a Lambda worker. */
export function fitsLambdaWorker(resources: TaskResources, worker: LambdaWorkerSize): boolean {
  return resources.memoryMiB <= worker.memoryMiB && resources.vcpu <= worker.memoryMiB / LAMBDA_MIB_PER_VCPU;
}

/**
 * The smallest Lambda worker class (`classes` ordered by memory, smallest first) that gives a
 * task the memory and vCPU it asks for; undefined when none does.
 */
export function lambdaWorkerClassFor<C extends LambdaWorkerSize>(
  resources: TaskResources,
  classes: readonly C[],
): C | undefined {
  return classes.find((size) => fitsLambdaWorker(resources, size));
}

/** Pick the runtime when the caller did not: Lambda when the task fits a Lambda worker, else Fargate. */
export function chooseRuntime(resources: TaskResources, timeoutSeconds: number, worker: LambdaWorkerSize): Runtime {
  const fitsLambda = timeoutSeconds <= LAMBDA_LIMITS.maxTimeoutSeconds && fitsLambdaWorker(resources, worker);
  return fitsLambda ? 'lambda' : 'fargate';
}
