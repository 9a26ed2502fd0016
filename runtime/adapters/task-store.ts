/**
 * DynamoDB persistence of tasks. It only does I/O: every decision is a TransitionPlan from the
 * core, written here as ONE conditional PutItem whose condition is the plan's precondition.
 * A refused condition becomes a typed error carrying the item as it is now.
 *
 * Every write carries a fresh random token (kept with the last few in `writeTokens`). AWS can
 * apply a write and lose its response; the SDK then retries it and the condition fails against
 * our own write. A refused or unanswered write whose token is in the stored item was ours.
 */

import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchExecuteStatementCommand,
  type BatchExecuteStatementCommandOutput,
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  ConcurrentUpdateError,
  ConfigError,
  SchedulerFencedError,
  StaleAttemptError,
  TaskNotFoundError,
} from '../core/errors.ts';
import type { TaskEvent } from '../core/events.ts';
import { creationEvent, type TransitionPlan } from '../core/lifecycle.ts';
import { decodeJsonFields, encodeJsonFields } from '../core/storable.ts';
import {
  ACTIVE_STATES,
  isTerminal,
  PRIORITY_TIERS,
  type PriorityTier,
  TASK_STATES,
  type Task,
  type TaskState,
} from '../core/task.ts';
import { ACTIVE_SHARDS, ENV, FINISHED_TASK_RETENTION_DAYS, LEGACY_ACTIVE_SHARDS } from '../infra/resources.ts';
import { inParallel, sizedChunks } from './in-parallel.ts';
import {
  decodeKeyCursor,
  encodeCursor,
  heldKey,
  heldKeys,
  LEGACY_KEY,
  mergePages,
  perShardLimit,
  queuedListingOf,
  queueKey,
  queueKeys,
  type ShardPage,
  tenantStateKey,
  tenantStateKeys,
} from './index-keys.ts';
import { keepLatestAttempt, type LeasedTaskRef, type LeasePages } from './lease-pages.ts';

export type { LeasedTaskRef };

import { insertStatement } from './partiql-insert.ts';
import { isThrottling } from './throttling.ts';

/** Attributes the store derives for the indexes; stripped again on read. */
const DERIVED = [
  'listKey',
  'tenantState',
  'leasedShard',
  'leasedAt',
  'queueKey',
  'queueSort',
  'expiresAt',
  // Written by older versions (`byActive`), stripped on read and dropped on the next write.
  'activeShard',
  'dueAt',
] as const;

/**
 * States under a lease, the only ones in the sparse `byLeased` index: never more tasks than the
 * pools' capacity, so a tenant's share of them is read from `byLeased` (filtered by tenant, the
 * state from the items) rather than kept in `byTenantState`. QUEUED work is read from `byTenantQueue`.
 */
const LEASED_STATES = ACTIVE_STATES;

/** The states `byTenantState` lists (every state but the leased ones). */
const INDEXED_STATES = TASK_STATES.filter((state) => !LEASED_STATES.includes(state));

/** Tokens of the last writes kept on the item: ours survives a couple of writes after it. */
const WRITE_TOKENS_KEPT = 3;

/** The task as it will be stored by a write with a fresh token. */
function withWriteToken(task: Task): Task {
  const token = randomBytes(8).toString('base64url');
  return { ...task, writeTokens: [...(task.writeTokens ?? []).slice(1 - WRITE_TOKENS_KEPT), token] };
}

const tokenOf = (task: Task): string => task.writeTokens!.at(-1)!;

const listKeyOf = (task: Pick<Task, 'submittedAt' | 'taskId'>) => `${task.submittedAt}#${task.taskId}`;

/** A `byLeased` partition: `LEASED#<shard>`, for DISPATCHED and RUNNING alike. */
const leasedPartition = (shard: number) => `LEASED#${shard}`;

/**
 * Where leased tasks are listed: `byLeased`, and for one release `byActive`, whose `LEASED#`
 * partitions hold the tasks an older version dispatched until their next write (its sort key
 * `dueAt` was the dispatch time). Delete `BY_ACTIVE_LEGACY` with `byActive`.
 */
interface LeasedIndex {
  readonly indexName: string;
  readonly partitionKey: string;
  readonly shards: number;
  readonly toRef: (item: Record<string, unknown>) => LeasedTaskRef;
}
const BY_LEASED: LeasedIndex = {
  indexName: 'byLeased',
  partitionKey: 'leasedShard',
  shards: ACTIVE_SHARDS,
  toRef: (item) => item as unknown as LeasedTaskRef,
};
const BY_ACTIVE_LEGACY: LeasedIndex = {
  indexName: 'byActive',
  partitionKey: 'activeShard',
  shards: LEGACY_ACTIVE_SHARDS,
  toRef: ({ activeShard: _key, dueAt, state: _state, leaseExpiresAt: _lease, ...rest }) =>
    ({ ...rest, leasedAt: dueAt }) as unknown as LeasedTaskRef,
};
const LEASED_INDEXES = [BY_LEASED, BY_ACTIVE_LEGACY] as const;

/** Parallel Queries one scatter-gather read issues at most (one per shard of a key, or of `byLeased`). */
const SCATTER_CONCURRENCY = 16;
/** BatchGetItem calls of one `getMany` in flight at once. */
const BATCH_CALL_CONCURRENCY = 16;

/** Creates in one BatchExecuteStatement call (DynamoDB's limit is 25 statements)... */
const INSERTS_MAX_ITEMS = 25;
/** ...and at most about this many bytes of items. */
const INSERTS_MAX_BYTES = 3_000_000;
/**
 * Calls a batch of creates makes for its statements that were throttled (or for all of them
 * when the call failed) before those tasks are created one by one.
 */
const INSERT_ROUNDS = 4;
/** Per-statement error codes for which nothing was written and the statement may go again. */
const RETRYABLE_STATEMENT_CODES = new Set([
  'ProvisionedThroughputExceeded',
  'ThrottlingError',
  'RequestLimitExceeded',
  'TransactionConflict',
  'InternalServerError',
]);
/** Creates one at a time in flight, when `createMany` goes item by item. */
const CREATE_CONCURRENCY = 32;

/**
 * A listing's Limit per key: one more than it could use, so that a key holding no more than that
 * returns without a LastEvaluatedKey (DynamoDB sets one whenever a page reaches its Limit) and the
 * last page of a listing has no cursor, as with one unsharded key.
 */
const listingLimit = (limit: number, legacy: boolean) => (legacy ? limit : perShardLimit(limit)) + 1;

/** Newest first by `listKey` (the `byTenantState` and `byTenant` order, read backwards). */
const newestFirst = (a: { listKey: string }, b: { listKey: string }) =>
  a.listKey < b.listKey ? 1 : a.listKey > b.listKey ? -1 : 0;

/**
 * An index entry a listing merges: its place newest first, the `listKey` of a `byTenantState`
 * or `byLeased` entry or the `queueSort` (`${runAt}#${taskId}`) of a `byTenantQueue` one.
 */
interface ListingEntry {
  readonly listKey: string;
  readonly taskId: string;
  /**
   * From the lease ledger: shown only while the task is leased (a page outlives its ended
   * attempts until the last of them ends; the task is then shown from its end-state entry, or,
   * a batch member that succeeded, from its batch only).
   */
  readonly leased?: true;
}

/**
 * Entries are told apart by place, not by task: a task due later than submitted is in
 * `byTenantQueue` at its due time and in `byTenantState` at its `listKey`, and the merge must
 * keep the second (`showsTask`); an item in both at the same place (one an older version wrote,
 * a task due at submit) is one entry, so a page cannot end between its two copies.
 */
const entryId = (entry: ListingEntry) => entry.listKey;

/**
 * Whether a listing entry shows the task as it is now: at its place newest first. A
 * `byTenantQueue` entry of a task due later than submitted is not (it sits at its due time);
 * the task is shown from its `byTenantState` entry (index-keys.ts `queuedListingOf`).
 */
const showsTask = (entry: ListingEntry, task: Task): boolean =>
  entry.listKey === listKeyOf(task) && (!entry.leased || LEASED_STATES.includes(task.state));

/**
 * How far past its own clock a listing reads `byTenantQueue` for tasks due when submitted: their
 * `submittedAt` came from the submitting function's clock, which may be a little ahead.
 */
const LISTING_CLOCK_MARGIN_MS = 60_000;

/** Oldest due first by `queueSort` (`${runAt}#${taskId}`, the `byTenantQueue` order). */
const dueFirst = (a: { queueSort: string }, b: { queueSort: string }) =>
  a.queueSort < b.queueSort ? -1 : a.queueSort > b.queueSort ? 1 : 0;

/**
 * A batch member that succeeded is listed through its batch (GET /v1/batches/{batchId}/tasks),
 * not among its tenant's tasks: bulk work's successes would bury the tenant's own listing, and
 * the entry cost a write unit a task (issue 25; AWS Batch lists an array job's children under the
 * array job the same way). One that failed or was cancelled is listed with its tenant too.
 */
const listedByItsBatch = (task: Task): boolean => task.batchId !== undefined && task.state === 'SUCCEEDED';

function toItem(task: Task): Record<string, unknown> {
  // Payload and result as JSON text: see core/storable.ts.
  const item: Record<string, unknown> = { ...encodeJsonFields(task), listKey: listKeyOf(task) };
  // Sparse: DISPATCHED and RUNNING are left out of `byTenantState` (they are listed from the
  // lease ledger), so the two busiest writes, dispatch and start, do not move its entry; so is a
  // QUEUED task due when submitted (listed from `byTenantQueue`, index-keys.ts `queuedListingOf`).
  if (task.state === 'QUEUED') {
    const listing = queuedListingOf(task);
    if (listing === 'held') item.tenantState = heldKey(task.tenantId, task.taskId);
    if (listing === 'late') item.tenantState = tenantStateKey(task.tenantId, task.state, task.taskId);
  } else if (!LEASED_STATES.includes(task.state) && !listedByItsBatch(task)) {
    item.tenantState = tenantStateKey(task.tenantId, task.state, task.taskId);
  }
  if (task.state === 'QUEUED' && (task.waitingOn?.length ?? 0) === 0) {
    // Sparse `byTenantQueue`: the entry exists exactly while the task waits, and is not held for
    // dependencies (core/dependencies.ts): the scheduler never reads a held task.
    item.queueKey = queueKey(task.tenantId, task.priority, task.taskId);
    item.queueSort = `${task.runAt}#${task.taskId}`;
  }
  // DISPATCHED and RUNNING are in no index: the lease ledger lists them (lease-pages.ts). Their
  // `byLeased` entry cost 2 write units a task; an older version's is dropped at the next write.
  if (isTerminal(task.state) && task.finishedAt) {
    // TTL in epoch seconds; readers filter on it too (TTL deletes lazily).
    item.expiresAt = Math.floor(Date.parse(task.finishedAt) / 1000) + FINISHED_TASK_RETENTION_DAYS * 86_400;
  }
  return item;
}

/**
 * Whether an item of the table is a task: the batches' items share the table under ids no task
 * takes (`bat_…`, adapters/batch-store.ts) and have no `state`. A task route or a `dependsOn`
 * naming one must find no task there (it answered 500 reading a batch as a task, and a task
 * could be held on a batch).
 */
const isTaskItem = (item: Record<string, unknown>): boolean => typeof item.state === 'string';

function fromItem(item: Record<string, unknown>): Task {
  const task = decodeJsonFields(item);
  for (const key of DERIVED) delete task[key];
  return task as unknown as Task;
}

/** A QUEUED task as `byTenantQueue` holds it: what the policy engine needs, no payload. */
export interface QueuedTaskRef {
  readonly taskId: string;
  readonly tenantId: string;
  readonly priority: PriorityTier;
  readonly runtime: Task['runtime'];
  readonly resources: Task['resources'];
  readonly agingFrom: string;
  readonly runAt: string;
  /** The fence of the QUEUED item: a retry is queued with a higher one than its last dispatch. */
  readonly fence: number;
}

/** Where a Scan of `byTenantQueue` goes on: the last entry's index and table keys. */
export type QueueScanCursor = Readonly<Record<string, string>>;

export interface DuePage {
  /** The tenant-tier's entries due by then, oldest due first. */
  readonly refs: QueuedTaskRef[];
  /** More due entries follow the page. */
  readonly hasMore: boolean;
}

/**
 * Acknowledgements only remove the outbox's head, and only a version-bumping write appends, so at
 * one version the outbox is identified by its length and its first event.
 */
const MAX_OUTBOX_REBASES = 20;

function sameOutboxHead(a: Task['outbox'], b: Task['outbox']): boolean {
  return (a?.length ?? 0) === (b?.length ?? 0) && a?.[0]?.id === b?.[0]?.id;
}

function withOutbox(task: Task, outbox: Task['outbox']): Task {
  if (outbox && outbox.length > 0) return { ...task, outbox };
  const { outbox: _dropped, ...rest } = task;
  return rest;
}

/** The conditions every transition write names: version, state, and fence or epoch when set. */
function transitionCondition(precondition: TransitionPlan['precondition']) {
  const names: Record<string, string> = { '#state': 'state', '#version': 'version' };
  const values: Record<string, unknown> = { ':version': precondition.version };
  const stateTerms = precondition.states.map((state, i) => {
    values[`:s${i}`] = state;
    return `:s${i}`;
  });
  const conditions = ['#version = :version', `#state IN (${stateTerms.join(', ')})`];
  if (precondition.fence !== undefined) {
    names['#fence'] = 'fence';
    values[':fence'] = precondition.fence;
    conditions.push('#fence = :fence');
  }
  if (precondition.schedulerEpoch !== undefined) {
    names['#epoch'] = 'schedulerEpoch';
    values[':epoch'] = precondition.schedulerEpoch;
    conditions.push('(attribute_not_exists(#epoch) OR #epoch <= :epoch)');
  }
  return { names, values, conditions };
}

/** Require the outbox as it was read (see `sameOutboxHead`). */
function outboxCondition(
  outbox: Task['outbox'],
  names: Record<string, string>,
  values: Record<string, unknown>,
  conditions: string[],
): void {
  names['#outbox'] = 'outbox';
  if (!outbox || outbox.length === 0) {
    conditions.push('attribute_not_exists(#outbox)');
    return;
  }
  values[':outboxSize'] = outbox.length;
  values[':outboxHead'] = outbox[0]!.id;
  conditions.push('size(#outbox) = :outboxSize AND #outbox[0].id = :outboxHead');
}

export interface TaskPage {
  readonly items: Task[];
  readonly nextCursor?: string;
}

export interface ListTasksQuery {
  readonly tenantId: string;
  /** Left out or `undefined`: every state. */
  readonly state?: TaskState | undefined;
  readonly limit: number;
  readonly cursor?: string | undefined;
}

export type CreateResult = { created: true; task: Task } | { created: false; task: Task };

/** What counting a batch member's end needs of its task (a task, or its completion report). */
export type BatchMemberTask = Pick<Task, 'taskId' | 'batchId' | 'batchIndex' | 'state'>;

/** One task of `createMany`: created or found, or the error its create met. */
export type CreateManyResult = CreateResult | { readonly error: unknown };

export interface TaskStoreOptions {
  /**
   * The lease ledger (lease-pages.ts): where dispatched and running tasks are listed. The
   * scheduler writes it; the store reads it, with the indexes older versions wrote. Given only
   * where leased tasks are recorded or listed (the scheduler, the API: each variable of the
   * environment counts against a Lambda's 4 KB); without it, listing them throws.
   */
  readonly leases?: LeasePages | undefined;
  /**
   * Record each write's state-change event in the item's `outbox`, in the same conditional write
   * (the local runtime with webhooks; docs/events.md). Off on AWS: the table's stream feeds events.
   */
  readonly outbox?: boolean;
  /**
   * Without `outbox`, record only the events this says the durable change feed needs (the local
   * runtime: a held task's creation and a dependency's end, app/dependencies.ts).
   */
  readonly records?: ((task: Task, event: TaskEvent) => boolean) | undefined;
  /** Told after a write that recorded events in the outbox (wakes the local relay). */
  readonly onOutboxEvent?: ((taskId: string) => void) | undefined;
  /**
   * Awaited after a write that ended a batch member (its first terminal state since it last ran):
   * counts it for its batch (app/batches.ts). Must not throw; what it misses the sweeper counts.
   */
  readonly onBatchMemberEnded?: ((task: BatchMemberTask) => Promise<void>) | undefined;
  /** The clock a listing bounds its `byTenantQueue` reads by (default: the system clock). */
  readonly nowMs?: (() => number) | undefined;
}

export class TaskStore {
  readonly #documents: DynamoDBDocumentClient;
  readonly #tableName: string;
  readonly #options: TaskStoreOptions;

  constructor(documents: DynamoDBDocumentClient, tableName: string, options: TaskStoreOptions = {}) {
    this.#documents = documents;
    this.#tableName = tableName;
    this.#options = options;
  }

  /** The lease ledger's pages (the scheduler records its dispatches there); absent where not given. */
  get leasePages(): LeasePages | undefined {
    return this.#options.leases;
  }

  /** The ledger, or a ConfigError naming what is missing: leased tasks are listed from it. */
  get #ledger(): LeasePages {
    const { leases } = this.#options;
    if (!leases) {
      throw new ConfigError('This function has no lease ledger: leased tasks cannot be listed here', {
        problems: [`${ENV.leasesTable}: not set`],
      });
    }
    return leases;
  }

  /** Whether writes record their events in the item's outbox. */
  get outbox(): boolean {
    return this.#options.outbox === true;
  }

  /** Whether some writes record events in the outbox (then every write requires it as read). */
  get #usesOutbox(): boolean {
    return this.#options.outbox === true || this.#options.records !== undefined;
  }

  /** Whether the write of `task` records `event` in its outbox. */
  #records(task: Task, event: TaskEvent | undefined): event is TaskEvent {
    if (!event) return false;
    return this.#options.outbox === true || this.#options.records?.(task, event) === true;
  }

  /** The item to write: with the event appended to its outbox when the outbox is on. */
  #withEvent(task: Task, event: TaskEvent | undefined): Task {
    if (!this.#records(task, event)) return task;
    return { ...task, outbox: [...(task.outbox ?? []), event] };
  }

  #recorded(task: Task, event: TaskEvent | undefined): void {
    if (this.#records(task, event)) this.#options.onOutboxEvent?.(task.taskId);
  }

  #nowMs(): number {
    return this.#options.nowMs?.() ?? Date.now();
  }

  get tableName(): string {
    return this.#tableName;
  }

  /** After a write landed: a batch member that just ended is counted (see TaskStoreOptions). */
  /**
   * Count a batch member's end now, as the write that ended it would have: for a writer that left
   * it to its completion report (`batchEndReported`) and could not send the report.
   */
  async countBatchEnd(task: BatchMemberTask): Promise<void> {
    if (task.batchId === undefined || !isTerminal(task.state)) return;
    await this.#options.onBatchMemberEnded?.(task);
  }

  async #afterWrite(task: Task, event: TaskEvent | undefined): Promise<void> {
    if (task.batchId === undefined || !event || !isTerminal(event.state)) return;
    if (event.previousState !== null && isTerminal(event.previousState)) return;
    await this.#options.onBatchMemberEnded?.(task);
  }

  /**
   * Insert a new task unless one with the same id exists. Idempotent submits derive the id from
   * tenant + idempotency key, so "exists" means "this request was already accepted".
   */
  async create(task: Task): Promise<CreateResult> {
    const event = creationEvent(task);
    return this.#createWritten(withWriteToken(this.#withEvent(task, event)), event);
  }

  /**
   * `create` for many tasks of distinct ids (a batch's), results in their order: conditional
   * creates as PartiQL INSERTs, 25 to a BatchExecuteStatement call, the calls side by side
   * (BatchWriteItem cannot be conditional, and an unconditional put would overwrite a task a
   * retry finds already running). Each INSERT stands alone and is billed as the standard write it
   * is (a TransactWriteItems call would bill each item twice). An INSERT whose task exists answers
   * `DuplicateItem` with the stored item: ours when it holds our write token (the SDK's retry of
   * a call whose answer was lost, or a round below, meets its own write), else the task found.
   * Statements throttled, or all of a call throttled or unanswered, go again in a new call, at most
   * INSERT_ROUNDS calls; what is still unwritten then (or refused otherwise) is created one by
   * one with the tokens it had, so a write an unanswered call did make is found to be ours. What
   * such a create meets is that task's result (`{ error }`), the others go ahead.
   */
  async createMany(tasks: readonly Task[]): Promise<CreateManyResult[]> {
    const events = tasks.map((task) => creationEvent(task));
    const written = tasks.map((task, i) => withWriteToken(this.#withEvent(task, events[i])));
    const items = written.map(toItem);
    const chunks = sizedChunks(
      items.map((_, i) => i),
      (i) => JSON.stringify(items[i]).length,
      INSERTS_MAX_ITEMS,
      INSERTS_MAX_BYTES,
    );

    const results = new Array<CreateManyResult>(tasks.length);
    const oneByOne: number[] = [];
    await inParallel(chunks, BATCH_CALL_CONCURRENCY, async (indexes) => {
      let pending = indexes;
      for (let round = 0; pending.length > 0; round++) {
        if (round === INSERT_ROUNDS) {
          oneByOne.push(...pending);
          return;
        }
        if (round > 0) await sleep(Math.min(1000, 25 * 2 ** round));
        let responses: BatchExecuteStatementCommandOutput['Responses'];
        try {
          ({ Responses: responses } = await this.#documents.send(
            new BatchExecuteStatementCommand({
              Statements: pending.map((i) => ({
                ...insertStatement(this.#tableName, items[i]!),
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              })),
            }),
          ));
        } catch (error) {
          // Throttled or unanswered after the SDK's retries: the same statements again (what the
          // call did write is found as ours). Refused otherwise (a limit, a permission, an
          // endpoint without PartiQL, a 5xx the SDK's retries did not get past): one by one.
          const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
          if (isThrottling(error) || status === undefined) continue;
          oneByOne.push(...pending);
          return;
        }
        if (responses?.length !== pending.length) {
          oneByOne.push(...pending);
          return;
        }
        const again: number[] = [];
        responses.forEach((response, k) => {
          const i = pending[k]!;
          const code = response.Error?.Code;
          if (code === undefined) {
            this.#recorded(written[i]!, events[i]);
            results[i] = { created: true, task: written[i]! };
          } else if ((code === 'DuplicateItem' || code === 'ConditionalCheckFailed') && response.Error?.Item) {
            results[i] = this.#found(written[i]!, events[i], fromItem(response.Error.Item));
          } else if (RETRYABLE_STATEMENT_CODES.has(code)) again.push(i);
          else oneByOne.push(i);
        });
        pending = again;
      }
    });
    await inParallel(oneByOne, CREATE_CONCURRENCY, async (i) => {
      results[i] = await this.#createWritten(written[i]!, events[i]).catch((error: unknown) => ({ error }));
    });
    return results;
  }

  /**
   * A create refused because the task exists, answered from the item found: ours when it holds
   * our token (applied, its answer lost; if writes followed it, they came after ours and the
   * caller goes on from ours), else the task as it is.
   */
  #found(written: Task, event: TaskEvent | undefined, current: Task): CreateResult {
    if (!current.writeTokens?.includes(tokenOf(written))) return { created: false, task: current };
    this.#recorded(written, event);
    return { created: true, task: current.version === written.version ? current : written };
  }

  /** The conditional create of `written` (its token fresh, its event in its outbox if recorded). */
  async #createWritten(written: Task, event: TaskEvent | undefined): Promise<CreateResult> {
    try {
      await this.#documents.send(
        new PutCommand({
          TableName: this.#tableName,
          Item: toItem(written),
          ConditionExpression: 'attribute_not_exists(taskId)',
        }),
      );
      this.#recorded(written, event);
      return { created: true, task: written };
    } catch (error) {
      const after = await this.#afterRefusal(written, error);
      if (after.ours) {
        this.#recorded(written, event);
        return { created: true, task: after.task };
      }
      if (!(error instanceof ConditionalCheckFailedException) || !after.current) throw error;
      return { created: false, task: after.current };
    }
  }

  /**
   * After a refused or unanswered write, one consistent read: was the write ours after all
   * (applied, its response lost, the SDK's retry refused)? It was when the item holds our token.
   * Otherwise the item as it is now (undefined if gone, or if this read failed too).
   */
  async #afterRefusal(
    written: Task,
    error: unknown,
  ): Promise<{ ours: true; task: Task } | { ours: false; current: Task | undefined }> {
    const refused = error instanceof ConditionalCheckFailedException;
    let current: Task | undefined;
    try {
      current = await this.get(written.taskId);
    } catch (readError) {
      // Refused: the read is needed to go on, so its failure is the caller's error. Unanswered:
      // the original error says more.
      if (refused) throw readError;
      return { ours: false, current: undefined };
    }
    if (current?.writeTokens?.includes(tokenOf(written))) {
      // Ours; if writes followed it, they came after ours and the caller goes on from ours.
      return { ours: true, task: current.version === written.version ? current : written };
    }
    return { ours: false, current };
  }

  async get(taskId: string): Promise<Task | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { taskId }, ConsistentRead: true }),
    );
    return Item && isTaskItem(Item) ? fromItem(Item) : undefined;
  }

  /**
   * Whether a cancel was requested for the task: the worker's cancel watch, read every second
   * while a handler runs. Eventually consistent and projected (half the read cost of `get`;
   * a lag of a second or so only delays the abort).
   */
  async isCancelRequested(taskId: string): Promise<boolean> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { taskId }, ProjectionExpression: 'cancelRequested' }),
    );
    return Item?.cancelRequested === true;
  }

  /**
   * Consistent reads of many tasks (BatchGetItem, 100 keys a call, unprocessed keys retried), the
   * calls side by side: a dispatch round of 1,000 picks waits for one call's latency, not ten.
   */
  async getMany(taskIds: readonly string[]): Promise<Map<string, Task>> {
    const found = new Map<string, Task>();
    const unique = [...new Set(taskIds)];
    const chunks: string[][] = [];
    for (let offset = 0; offset < unique.length; offset += 100) chunks.push(unique.slice(offset, offset + 100));
    await inParallel(chunks, BATCH_CALL_CONCURRENCY, async (chunk) => {
      let keys: Record<string, unknown>[] = chunk.map((taskId) => ({ taskId }));
      for (let round = 0; keys.length > 0; round++) {
        const response = await this.#documents.send(
          new BatchGetCommand({ RequestItems: { [this.#tableName]: { Keys: keys, ConsistentRead: true } } }),
        );
        for (const item of response.Responses?.[this.#tableName] ?? []) {
          if (!isTaskItem(item)) continue;
          const task = fromItem(item);
          found.set(task.taskId, task);
        }
        keys = (response.UnprocessedKeys?.[this.#tableName]?.Keys as Record<string, unknown>[] | undefined) ?? [];
        if (keys.length > 0) await sleep(Math.min(1000, 25 * 2 ** round));
      }
    });
    return found;
  }

  /**
   * Write a plan as one conditional PutItem.
   *
   *   reader ──get(v=7)──▶ plan(v=8) ──put if state∈S ∧ version=7 [∧ fence=f]──▶ stored v=8
   *   another writer that stored v=8 first ──▶ our put fails ──▶ ConcurrentUpdateError(current)
   *
   * A fenced plan (worker write) whose fence no longer matches becomes StaleAttemptError.
   * `batchEndReported`: a batch member this write ends is not counted here; the caller reports
   * the end in its completion message and the scheduler counts it (app/batches.ts `membersEnded`).
   */
  async apply(plan: TransitionPlan, options: { batchEndReported?: boolean } = {}): Promise<Task> {
    const countEnd = !options.batchEndReported;
    const { precondition } = plan;
    // With the outbox on, the write also requires the outbox as read: the relay's acknowledgements
    // remove delivered events without bumping `version`, and a put built from a copy read before
    // one would carry the delivered events back in (to be sent again, after later events, by a
    // relay that has forgotten them). Refused for that alone, the write is made again on the
    // outbox as it now is; the version, state and fence it was decided on have not changed.
    let outboxAsRead = plan.next.outbox;
    for (let rebase = 0; ; rebase++) {
      const next = withWriteToken(this.#withEvent(withOutbox(plan.next, outboxAsRead), plan.event));
      const { names, values, conditions } = transitionCondition(precondition);
      if (this.#usesOutbox) outboxCondition(outboxAsRead, names, values, conditions);
      try {
        await this.#documents.send(
          new PutCommand({
            TableName: this.#tableName,
            Item: toItem(next),
            ConditionExpression: conditions.join(' AND '),
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          }),
        );
        this.#recorded(next, plan.event);
        if (countEnd) await this.#afterWrite(next, plan.event);
        return next;
      } catch (error) {
        // One consistent read serves both a refused write (was it our own, whose response was
        // lost?) and an unanswered one (did it land?).
        const after = await this.#afterRefusal(next, error);
        if (after.ours) {
          this.#recorded(next, plan.event);
          if (countEnd) await this.#afterWrite(next, plan.event);
          return after.task;
        }
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        const { current } = after;
        if (
          this.#usesOutbox &&
          current !== undefined &&
          current.version === precondition.version &&
          !sameOutboxHead(current.outbox, outboxAsRead) &&
          rebase < MAX_OUTBOX_REBASES
        ) {
          outboxAsRead = current.outbox;
          continue;
        }
        const { schedulerEpoch } = precondition;
        if (schedulerEpoch !== undefined && (current?.schedulerEpoch ?? 0) > schedulerEpoch) {
          throw new SchedulerFencedError(next.taskId, schedulerEpoch, current!.schedulerEpoch!);
        }
        if (precondition.fence !== undefined && (!current || current.fence !== precondition.fence)) {
          throw new StaleAttemptError(next.taskId, precondition.fence, current);
        }
        throw new ConcurrentUpdateError(next.taskId, precondition, current);
      }
    }
  }

  /**
   * Read-decide-write with optimistic concurrency: `decide` turns the current item into a plan
   * (or throws a typed refusal); on a concurrent update it is asked again with the fresh item.
   * `known` skips the first read when the caller already holds the latest item.
   */
  async transition(
    taskId: string,
    decide: (current: Task) => TransitionPlan | undefined,
    options: { known?: Task; attempts?: number; batchEndReported?: boolean } = {},
  ): Promise<Task> {
    let current = options.known ?? (await this.get(taskId));
    const attempts = options.attempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      if (!current) throw new TaskNotFoundError(taskId);
      const plan = decide(current);
      if (!plan) return current;
      try {
        return await this.apply(plan, options.batchEndReported ? { batchEndReported: true } : {});
      } catch (error) {
        if (!(error instanceof ConcurrentUpdateError) || attempt >= attempts) throw error;
        current = error.current;
      }
    }
  }

  /**
   * A tenant-tier's QUEUED tasks due by `nowMs`, oldest due first, at most `limit`: a
   * scatter-gather over its `byTenantQueue` keys (every shard and, for one release, the unsharded
   * key; parallel Queries from each partition's start), merged oldest due first and cut where a
   * partition's unread entries could come first (index-keys.ts `mergePages`). Eventually
   * consistent (an entry may be missing, or stay after its task left QUEUED): callers re-read the
   * item before acting on it.
   */
  async listDue(tenantId: string, tier: PriorityTier, nowMs: number, limit: number): Promise<DuePage> {
    // `queueSort` starts with the fixed-width ISO `runAt`, so "< the next millisecond" is "due".
    const after = new Date(nowMs + 1).toISOString();
    const keys = queueKeys(tenantId, tier);
    const read = (perShard: number) =>
      inParallel(keys, SCATTER_CONCURRENCY, async (key, i) => {
        const response = await this.#documents.send(
          new QueryCommand({
            TableName: this.#tableName,
            IndexName: 'byTenantQueue',
            KeyConditionExpression: 'queueKey = :pk AND queueSort < :after',
            ExpressionAttributeValues: { ':pk': key, ':after': after },
            Limit: i === LEGACY_KEY ? limit : perShard,
          }),
        );
        return {
          items: (response.Items ?? []) as { queueSort: string; taskId: string }[],
          hasMore: response.LastEvaluatedKey !== undefined,
        };
      });
    let merged = mergePages(await read(perShardLimit(limit)), limit, dueFirst, (item) => item.taskId);
    // Cut short (a shard's unread entries could come first): read again with the whole limit a
    // shard, which fills the page, so a backlogged tenant-tier's window is not left nearly empty
    // between refills (under FIFO another tenant's younger work went first).
    if (merged.hasMore && merged.items.length < limit && perShardLimit(limit) < limit) {
      merged = mergePages(await read(limit), limit, dueFirst, (item) => item.taskId);
    }
    return { refs: merged.items.map(toQueuedRef), hasMore: merged.hasMore };
  }

  /**
   * The tenant-tier's first QUEUED entry in due order, due or not (undefined: the index shows
   * none): the earliest of each `byTenantQueue` key's first entry. Eventually consistent, like
   * `listDue`.
   */
  async firstQueued(tenantId: string, tier: PriorityTier): Promise<QueuedTaskRef | undefined> {
    const firsts = await inParallel(queueKeys(tenantId, tier), SCATTER_CONCURRENCY, async (key) => {
      const response = await this.#documents.send(
        new QueryCommand({
          TableName: this.#tableName,
          IndexName: 'byTenantQueue',
          KeyConditionExpression: 'queueKey = :pk',
          ExpressionAttributeValues: { ':pk': key },
          Limit: 1,
        }),
      );
      return response.Items?.[0] as { queueSort: string } | undefined;
    });
    const first = firsts.filter((item) => item !== undefined).sort(dueFirst)[0];
    return first ? toQueuedRef(first) : undefined;
  }

  /**
   * A tenant-tier's QUEUED tasks (due or not) as `byTenantQueue` lists them, counted up to
   * `atMost`: COUNT queries of its keys, page by page, billed for every entry they read (the
   * scheduler counts at a paced interval, scheduler/backlog.ts). Eventually consistent.
   */
  async countQueued(tenantId: string, tier: PriorityTier, atMost: number): Promise<number> {
    return this.#countKeys('byTenantQueue', 'queueKey', queueKeys(tenantId, tier), atMost);
  }

  /**
   * Entries of an index under any of `keys`, counted up to `atMost` in all: a COUNT query per key
   * (in parallel), each page by page until it ends or the counts so far reach `atMost`.
   */
  async #countKeys(indexName: string, keyAttribute: string, keys: readonly string[], atMost: number): Promise<number> {
    let total = 0;
    await inParallel(keys, SCATTER_CONCURRENCY, async (key) => {
      let startKey: Record<string, unknown> | undefined;
      do {
        const left = atMost - total;
        if (left <= 0) return;
        const response = await this.#documents.send(
          new QueryCommand({
            TableName: this.#tableName,
            IndexName: indexName,
            KeyConditionExpression: '#pk = :pk',
            ExpressionAttributeNames: { '#pk': keyAttribute },
            ExpressionAttributeValues: { ':pk': key },
            Select: 'COUNT',
            ...(Number.isFinite(left) ? { Limit: left } : {}),
            ExclusiveStartKey: startKey,
          }),
        );
        total += response.Count ?? 0;
        startKey = response.LastEvaluatedKey;
      } while (startKey);
    });
    return Math.min(total, atMost);
  }

  /** A tenant's tasks, newest first, optionally in one state. */
  async list(query: ListTasksQuery): Promise<TaskPage> {
    if (query.state !== undefined && LEASED_STATES.includes(query.state)) {
      return this.#listLeased({ ...query, state: query.state });
    }
    if (query.state !== undefined) return this.#listInState({ ...query, state: query.state });
    return this.#listAll(query);
  }

  /**
   * A tenant's tasks in every state, newest first: the `byTenantState` keys of every state it
   * lists (every shard and, for one release, the unsharded key), its held tasks, its
   * `byTenantQueue` entries due when submitted, and its leased tasks from `byLeased`, merged
   * newest first. Every task is in one of them (index-keys.ts `queuedListingOf`; DISPATCHED and
   * RUNNING in `byLeased`), so no per-tenant index takes a write per task at submit beyond the
   * queue's. Eventually consistent, like every index read: a task whose state changes while the
   * page is read may be missing from it (between two entries) or shown once from either. The
   * cursor keeps the shape of the former `byTenant` key, so cursors handed out before the upgrade
   * still work.
   */
  async #listAll(query: ListTasksQuery): Promise<TaskPage> {
    const after = query.cursor ? (decodeCursor(query.cursor, query.tenantId, undefined).listKey as string) : undefined;
    const [merged, leased] = await Promise.all([
      this.#listingEntries(
        query.tenantId,
        [...INDEXED_STATES.map((state) => tenantStateKeys(query.tenantId, state)), heldKeys(query.tenantId)],
        true,
        after,
        query.limit,
      ),
      this.#leasedRefsOf(query.tenantId),
    ]);
    // The tenant's leased entries, all of them (no more than the pools hold), as one more page;
    // `byLeased` projects `submittedAt`, so their `listKey` needs no item read.
    const leasedEntries = leased
      .map((ref): ListingEntry => ({ listKey: listKeyOf(ref), taskId: ref.taskId, leased: true }))
      .filter((entry) => after === undefined || entry.listKey < after)
      .sort(newestFirst);
    const page = mergePages([...merged, { items: leasedEntries, hasMore: false }], query.limit, newestFirst, entryId);
    const items = await this.#shownTasks(page.items, () => true);
    const last = page.items.at(-1);
    if (!page.hasMore || !last) return { items };
    return {
      items,
      nextCursor: encodeCursor({ listKey: last.listKey, taskId: last.taskId, tenantId: query.tenantId }),
    };
  }

  /**
   * A tenant's tasks in one state that `byTenantState` lists (not DISPATCHED or RUNNING), newest
   * first: a scatter-gather over the state's keys (every shard and, for one release, the
   * unsharded key), each read backwards from the cursor's `listKey`, merged newest first; for
   * QUEUED also the held tasks' keys and the tenant's `byTenantQueue` entries due when submitted.
   * A page may hold fewer than `limit` tasks and still have a `nextCursor` (where a shard's
   * unread entries could come first). The cursor keeps the shape of the unsharded index's key, so
   * cursors handed out before the upgrade still work.
   */
  async #listInState(query: ListTasksQuery & { state: TaskState }): Promise<TaskPage> {
    const after = query.cursor ? decodeCursor(query.cursor, query.tenantId, query.state) : undefined;
    const keys = [tenantStateKeys(query.tenantId, query.state)];
    if (query.state === 'QUEUED') keys.push(heldKeys(query.tenantId));
    const pages = await this.#listingEntries(
      query.tenantId,
      keys,
      query.state === 'QUEUED',
      after?.listKey as string | undefined,
      query.limit,
    );
    const merged = mergePages(pages, query.limit, newestFirst, entryId);
    // A GSI lags the table: drop items that have since left the requested state.
    const items = await this.#shownTasks(merged.items, (task) => task.state === query.state);
    const last = merged.items.at(-1);
    if (!merged.hasMore || !last) return { items };
    const nextCursor = encodeCursor({
      listKey: last.listKey,
      taskId: last.taskId,
      tenantState: `${query.tenantId}#${query.state}`,
    });
    return { items, nextCursor };
  }

  /**
   * Pages of listing entries older than `after` (newest first): each `byTenantState` key of
   * `keyGroups` (a group's `LEGACY_KEY`-th key, the unsharded one, asked the full limit) and,
   * `withQueue` (QUEUED is listed), the tenant's `byTenantQueue` keys of every tier. Those are
   * read below now and a minute only: a task due when submitted has `queueSort` = `listKey`, at
   * most now (the margin covers clocks a little apart); the entries above are tasks due later,
   * listed from `byTenantState`, which would fill the page with entries `#shownTasks` drops.
   */
  async #listingEntries(
    tenantId: string,
    keyGroups: readonly (readonly string[])[],
    withQueue: boolean,
    after: string | undefined,
    limit: number,
  ): Promise<ShardPage<ListingEntry>[]> {
    const reads: { index: 'byTenantState' | 'byTenantQueue'; key: string; legacy: boolean }[] = keyGroups.flatMap(
      (keys) => keys.map((key, i) => ({ index: 'byTenantState' as const, key, legacy: i === LEGACY_KEY })),
    );
    if (withQueue) {
      for (const tier of PRIORITY_TIERS) {
        queueKeys(tenantId, tier).forEach((key, i) => {
          reads.push({ index: 'byTenantQueue', key, legacy: i === LEGACY_KEY });
        });
      }
    }
    const dueBound = new Date(this.#nowMs() + LISTING_CLOCK_MARGIN_MS).toISOString();
    const queueBefore = after !== undefined && after < dueBound ? after : dueBound;
    return inParallel(reads, SCATTER_CONCURRENCY, async ({ index, key, legacy }) => {
      const fromQueue = index === 'byTenantQueue';
      const [keyName, sortName] = fromQueue ? ['queueKey', 'queueSort'] : ['tenantState', 'listKey'];
      const before = fromQueue ? queueBefore : after;
      const response = await this.#documents.send(
        new QueryCommand({
          TableName: this.#tableName,
          IndexName: index,
          KeyConditionExpression: before === undefined ? '#pk = :pk' : '#pk = :pk AND #sk < :before',
          ExpressionAttributeNames: { '#pk': keyName, ...(before === undefined ? {} : { '#sk': sortName }) },
          ExpressionAttributeValues: { ':pk': key, ...(before === undefined ? {} : { ':before': before }) },
          ScanIndexForward: false,
          Limit: listingLimit(limit, legacy),
        }),
      );
      const items = (response.Items ?? []).map((item) => ({
        listKey: item[sortName] as string,
        taskId: item.taskId as string,
      }));
      return { items, hasMore: response.LastEvaluatedKey !== undefined };
    });
  }

  /**
   * The tasks of merged listing entries, read consistently (the indexes hold no state or
   * payload), in the entries' order: each shown once, from an entry that `showsTask`, and only
   * if it is `wanted` as it is now.
   */
  async #shownTasks(entries: readonly ListingEntry[], wanted: (task: Task) => boolean): Promise<Task[]> {
    const tasks = await this.getMany(entries.map((entry) => entry.taskId));
    const shown = new Set<string>();
    const items: Task[] = [];
    for (const entry of entries) {
      const task = tasks.get(entry.taskId);
      if (!task || shown.has(task.taskId) || !wanted(task) || !showsTask(entry, task)) continue;
      shown.add(task.taskId);
      items.push(task);
    }
    return items;
  }

  /**
   * The cursor of a page of `query` that ends at `task` (a page cut short, e.g. to fit a
   * response size): the next page starts right after it, in the same order.
   */
  cursorAfter(task: Task, query: Pick<ListTasksQuery, 'tenantId' | 'state'>): string {
    const key = { listKey: listKeyOf(task), taskId: task.taskId };
    return encodeCursor(
      query.state === undefined
        ? { ...key, tenantId: query.tenantId }
        : { ...key, tenantState: `${query.tenantId}#${query.state}` },
    );
  }

  /**
   * A tenant's DISPATCHED or RUNNING tasks: all of them from `byLeased` (no more than the pools
   * hold), read consistently (the index does not project the state), sorted newest first here
   * and paged by `listKey`. The cursor has the same shape as a `byTenantState` cursor, so callers
   * cannot tell the two apart.
   */
  async #listLeased(query: ListTasksQuery & { state: TaskState }): Promise<TaskPage> {
    const after = query.cursor ? decodeCursor(query.cursor, query.tenantId, query.state) : undefined;
    const tasks = await this.#leasedTasksOf(query.tenantId);
    const matching = [...tasks.values()]
      .filter((task) => task.state === query.state && (!after || listKeyOf(task) < (after.listKey as string)))
      .sort((a, b) => (listKeyOf(a) < listKeyOf(b) ? 1 : -1));
    const items = matching.slice(0, query.limit);
    const last = items.at(-1);
    if (matching.length <= query.limit || !last) return { items };
    const nextCursor = encodeCursor({
      listKey: listKeyOf(last),
      taskId: last.taskId,
      tenantState: `${query.tenantId}#${query.state}`,
    });
    return { items, nextCursor };
  }

  /** A tenant's entries in `byLeased` (and, for one release, `byActive`), as the index shows them. */
  async #leasedRefsOf(tenantId: string): Promise<LeasedTaskRef[]> {
    const refs: LeasedTaskRef[] = [];
    for await (const ref of this.listLeased({ tenantId })) refs.push(ref);
    return refs;
  }

  /** Leased tasks (a tenant's, or all) as the items are now: the listed refs are only candidates. */
  async #leasedTasksOf(tenantId?: string): Promise<Map<string, Task>> {
    const ids: string[] = [];
    for await (const ref of this.listLeased(tenantId === undefined ? {} : { tenantId })) ids.push(ref.taskId);
    return this.getMany(ids);
  }

  /** A tenant's DISPATCHED and RUNNING tasks as the items are now (the index may lag by about a second). */
  async leasedOf(tenantId: string): Promise<Task[]> {
    return [...(await this.#leasedTasksOf(tenantId)).values()].filter((task) => LEASED_STATES.includes(task.state));
  }

  /** A tenant's DISPATCHED and RUNNING tasks counted by state, from one read of its leased items. */
  async countLeasedStatesOf(tenantId: string): Promise<Partial<Record<TaskState, number>>> {
    const counts: Partial<Record<TaskState, number>> = {};
    for (const task of (await this.#leasedTasksOf(tenantId)).values()) {
      if (LEASED_STATES.includes(task.state)) counts[task.state] = (counts[task.state] ?? 0) + 1;
    }
    return counts;
  }

  /**
   * DISPATCHED + RUNNING tasks per tenant, for many tenants in one pass over the lease ledger
   * (which lists no more of them than the pools run, with ended attempts whose page lives on),
   * the items read to count only those leased now: cheaper than counting tenant by tenant.
   */
  async countLeasedByTenant(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const task of (await this.#leasedTasksOf()).values()) {
      if (LEASED_STATES.includes(task.state)) counts.set(task.tenantId, (counts.get(task.tenantId) ?? 0) + 1);
    }
    return counts;
  }

  /**
   * Count a tenant's tasks in one state, up to `atMost`: an index query with Select COUNT, page
   * by page until `atMost` entries are counted (a COUNT query is billed for every entry it reads,
   * so an uncapped count of a million-task backlog reads ~200 MB, hundreds of sequential pages);
   * for DISPATCHED and RUNNING, the tenant's leased items read and counted by state; for QUEUED,
   * the tenant's `byTenantQueue` entries (every tier; `firstTier`'s alone first) and held tasks. Held tasks an older version
   * wrote (under the QUEUED key) are counted only once written again (a release, a cancel).
   */
  async countByTenantState(
    tenantId: string,
    state: TaskState,
    atMost = Number.POSITIVE_INFINITY,
    options: { firstTier?: PriorityTier } = {},
  ): Promise<number> {
    if (LEASED_STATES.includes(state)) return Math.min((await this.countLeasedStatesOf(tenantId))[state] ?? 0, atMost);
    if (state !== 'QUEUED') {
      return this.#countKeys('byTenantState', 'tenantState', tenantStateKeys(tenantId, state), atMost);
    }
    // Every QUEUED task is in exactly one of `byTenantQueue` (every tier) and the held keys.
    const { firstTier } = options;
    const first = firstTier
      ? await this.#countKeys('byTenantQueue', 'queueKey', queueKeys(tenantId, firstTier), atMost)
      : 0;
    // A small cap often reached in the first tier (a waiting task's own) spares the other 35 Queries.
    if (first >= atMost) return atMost;
    const otherTiers = PRIORITY_TIERS.filter((tier) => tier !== firstTier);
    const [waiting, held] = await Promise.all([
      this.#countKeys(
        'byTenantQueue',
        'queueKey',
        otherTiers.flatMap((tier) => queueKeys(tenantId, tier)),
        atMost - first,
      ),
      this.#countKeys('byTenantState', 'tenantState', heldKeys(tenantId), atMost - first),
    ]);
    return Math.min(first + waiting + held, atMost);
  }

  /**
   * Dispatched and running tasks, optionally one tenant's: every attempt on the lease ledger's
   * pages (read consistently), the latest of each task, then those the indexes older versions
   * wrote list (`listLegacyLeased`). Without state or lease, and with attempts that ended or
   * never landed among them: callers read the items before acting.
   */
  async *listLeased(options: { tenantId?: string } = {}): AsyncGenerator<LeasedTaskRef> {
    const latest = new Map<string, LeasedTaskRef>();
    for (const page of await this.#ledger.all()) {
      for (const ref of page.refs) {
        if (options.tenantId === undefined || ref.tenantId === options.tenantId) keepLatestAttempt(latest, ref);
      }
    }
    yield* latest.values();
    for await (const ref of this.listLegacyLeased(options)) if (!latest.has(ref.taskId)) yield ref;
  }

  /**
   * Dispatched and running tasks as the indexes of older versions list them, for one release:
   * `byLeased` (until issue 25's ledger) and `byActive`'s `LEASED#` partitions (before it). A
   * task such a version dispatched is listed there until its next write; reading them lets a
   * stack be upgraded with tasks in flight (their leases still expire, their quota still counts).
   * Eventually consistent. Delete with the indexes.
   */
  async *listLegacyLeased(options: { tenantId?: string } = {}): AsyncGenerator<LeasedTaskRef> {
    const seen = new Set<string>();
    for (const index of LEASED_INDEXES) {
      // Every shard read at once (bounded): the index holds no more than the pools do.
      const shards = Array.from({ length: index.shards }, (_, shard) => shard);
      const pages = await inParallel(shards, SCATTER_CONCURRENCY, async (shard) => {
        const items: Record<string, unknown>[] = [];
        let startKey: Record<string, unknown> | undefined;
        do {
          const response = await this.#queryLeasedShard(index, shard, { ...options, startKey });
          items.push(...(response.Items ?? []));
          startKey = response.LastEvaluatedKey;
        } while (startKey);
        return items;
      });
      for (const item of pages.flat()) {
        const ref = index.toRef(item);
        // An item rewritten by this version may still show in `byActive` while it lags.
        if (seen.has(ref.taskId)) continue;
        seen.add(ref.taskId);
        yield ref;
      }
    }
  }

  /**
   * Whether the lease ledger has a page, or (for one release) `byLeased` or `byActive`'s
   * `LEASED#` partitions list a task an older version dispatched: the idle tick's check. The
   * ledger and `byLeased` hold nothing else, so a Limit-1 Scan of each answers (0.5 read units
   * when empty; an empty page that is not the last is taken as a yes). `byActive` also holds
   * older versions' QUEUED entries, so its `LEASED#` partitions are queried, Limit 1 each.
   */
  async anyLeased(): Promise<boolean> {
    if (await this.#ledger.any()) return true;
    const scan = await this.#documents.send(
      new ScanCommand({ TableName: this.#tableName, IndexName: BY_LEASED.indexName, Limit: 1 }),
    );
    if ((scan.Items ?? []).length > 0 || scan.LastEvaluatedKey) return true;
    for (let shard = 0; shard < BY_ACTIVE_LEGACY.shards; shard++) {
      const response = await this.#queryLeasedShard(BY_ACTIVE_LEGACY, shard, { limit: 1 });
      if ((response.Items ?? []).length > 0) return true;
    }
    return false;
  }

  /** One page of a leased index's shard, optionally one tenant's entries. */
  #queryLeasedShard(
    index: LeasedIndex,
    shard: number,
    options: { tenantId?: string; limit?: number; startKey?: Record<string, unknown> | undefined },
  ) {
    const { tenantId, limit, startKey } = options;
    return this.#documents.send(
      new QueryCommand({
        TableName: this.#tableName,
        IndexName: index.indexName,
        KeyConditionExpression: `${index.partitionKey} = :pk`,
        ...(tenantId ? { FilterExpression: 'tenantId = :tenant' } : {}),
        ExpressionAttributeValues: { ':pk': leasedPartition(shard), ...(tenantId ? { ':tenant': tenantId } : {}) },
        ...(limit ? { Limit: limit } : {}),
        ExclusiveStartKey: startKey,
      }),
    );
  }

  /**
   * One page of the ids of tasks whose outbox holds events (a Scan of the table, filtered): how
   * the local relay finds what a crash left undelivered. Local only: there is no outbox on AWS.
   */
  async scanOutbox(cursor?: Record<string, unknown>): Promise<{ taskIds: string[]; next?: Record<string, unknown> }> {
    const response = await this.#documents.send(
      new ScanCommand({
        TableName: this.#tableName,
        FilterExpression: 'attribute_exists(outbox)',
        ProjectionExpression: 'taskId',
        ...(cursor ? { ExclusiveStartKey: cursor } : {}),
      }),
    );
    const taskIds = (response.Items ?? []).map((item) => item.taskId as string);
    return response.LastEvaluatedKey ? { taskIds, next: response.LastEvaluatedKey } : { taskIds };
  }

  /**
   * Acknowledge the outbox's first event once it is delivered: remove it if it is still first
   * (`outbox[0].id`), and the attribute with it when it was the last. Leaves `version` alone, so
   * a state write in flight is not refused; a writer that read the item before this ack carries
   * the event back in (the relay recognises an event it delivered and acknowledges it again).
   * Returns false when the head is no longer this event (acknowledged already, or not there).
   */
  async ackOutboxHead(taskId: string, eventId: string, outboxLength: number): Promise<boolean> {
    const last = outboxLength <= 1;
    try {
      await this.#documents.send(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: { taskId },
          UpdateExpression: last ? 'REMOVE #outbox' : 'REMOVE #outbox[0]',
          ConditionExpression: last ? '#outbox[0].id = :id AND size(#outbox) = :one' : '#outbox[0].id = :id',
          ExpressionAttributeNames: { '#outbox': 'outbox' },
          ExpressionAttributeValues: last ? { ':id': eventId, ':one': 1 } : { ':id': eventId },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * One page of a Scan of `byTenantQueue`, every tenant-tier's QUEUED entries, at most `limit`,
   * resumed after `cursor` (the previous page's). The registry backstop reads it a page at a
   * time; without a `next` the pass is over. Eventually consistent, like `listDue`.
   */
  async scanQueued(
    limit: number,
    cursor?: QueueScanCursor,
  ): Promise<{ refs: QueuedTaskRef[]; next?: QueueScanCursor }> {
    const response = await this.#documents.send(
      new ScanCommand({
        TableName: this.#tableName,
        IndexName: 'byTenantQueue',
        Limit: limit,
        ...(cursor ? { ExclusiveStartKey: cursor } : {}),
      }),
    );
    const refs = (response.Items ?? []).map(toQueuedRef);
    const next = response.LastEvaluatedKey as QueueScanCursor | undefined;
    return next ? { refs, next } : { refs };
  }
}

function toQueuedRef(item: Record<string, unknown>): QueuedTaskRef {
  return {
    taskId: item.taskId as string,
    tenantId: item.tenantId as string,
    priority: item.priority as PriorityTier,
    runtime: item.runtime as Task['runtime'],
    resources: item.resources as Task['resources'],
    agingFrom: item.agingFrom as string,
    runAt: item.runAt as string,
    fence: item.fence as number,
  };
}

/**
 * Cursors are opaque to callers but checked here: a malformed cursor, or one minted for another
 * tenant or state (which would read another tenant's partition), is a 400, never a 500.
 */
function decodeCursor(cursor: string, tenantId: string, state: TaskState | undefined): Record<string, unknown> {
  const expected = state ? ['listKey', 'taskId', 'tenantState'] : ['listKey', 'taskId', 'tenantId'];
  return decodeKeyCursor(cursor, expected, (record) =>
    state ? record.tenantState === `${tenantId}#${state}` : record.tenantId === tenantId,
  );
}
