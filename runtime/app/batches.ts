/**
 * Batches (issue 25): `POST /v1/tasks/batch` and the then-task. docs/batches.md has the design;
 * the rules are in core/batch.ts, the items in adapters/batch-store.ts.
 *
 * Submit: validate every item (no I/O) → batch id from the request → the batch's items, before
 * any task (so whatever is written of it can be counted and found) → the tasks, conditional
 * creates, 25 PartiQL INSERTs to a BatchExecuteStatement call → their announcements,
 * SendMessageBatch of 10 → per-item results in order.
 * A retry of the same request (same body, or the same batch idempotency key) names the same
 * batch and the same task ids, so it creates nothing that exists and answers the same.
 *
 * Counting: a member's end is counted by the write that ended it (the task store calls
 * `memberEnded` after it), or, for an attempt's end a worker reports in its completion message,
 * by the scheduler that receives it, a round's ends of one counter shard in one write
 * (`membersEnded`); and by the sweeper, which the scheduler runs, for any count those did not
 * make (a crash between the write and the count, a lost report): each count an idempotent set ADD.
 */
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import type { BatchStore, CounterShard, StoredBatch } from '../adapters/batch-store.ts';
import { counted } from '../adapters/batch-store.ts';
import { inParallel } from '../adapters/in-parallel.ts';
import { decodeKeyCursor, encodeCursor } from '../adapters/index-keys.ts';
import type { QueueClient } from '../adapters/queues.ts';
import type { BatchMemberTask, TaskStore } from '../adapters/task-store.ts';
import {
  BATCH_SHARD_SIZE,
  type BatchCounts,
  type BatchMemberEnd,
  COUNT_SETS,
  countSetOf,
  impliedItemKey,
  MAX_BATCH_TASKS,
  nextSweepDelayMs,
  shardOfIndex,
  thenPayload,
  thenTaskKey,
  UNWRITTEN_MEMBER_GRACE_MS,
} from '../core/batch.ts';
import { holdOnDependencies } from '../core/dependencies.ts';
import { IdempotencyConflictError, ValidationError } from '../core/errors.ts';
import { createTask } from '../core/lifecycle.ts';
import type { TaskLogger } from '../core/logger.ts';
import { isTerminal, type NewTaskSpec, type Task, type TaskState } from '../core/task.ts';
import { dependencyStates } from './dependencies.ts';
import {
  canonicalJson,
  effectiveRequest,
  hashRequest,
  idempotentTaskId,
  type SubmitInput,
  type SubmitResult,
  type TaskService,
} from './task-service.ts';

export interface BatchSubmitInput {
  /** The items as sent: each is validated on its own (a bad one is an error at its index). */
  readonly tasks: readonly unknown[];
  readonly then?: SubmitInput | undefined;
  /** Names the batch instead of its body: the same key again is the same batch. */
  readonly idempotencyKey?: string | undefined;
}

export type BatchItemResult =
  | { readonly taskId: string; readonly state: TaskState; readonly created: boolean }
  | { readonly error: { readonly code: string; readonly message: string } };

export interface BatchSubmitResult {
  readonly batchId: string;
  /** False when an earlier request made this batch (a retry). */
  readonly created: boolean;
  readonly results: BatchItemResult[];
}

/** A batch as the API shows it. */
export interface BatchView {
  readonly batchId: string;
  readonly tenantId: string;
  readonly createdAt: string;
  readonly total: number;
  /**
   * Members counted so far by how they ended; `pending` have not ended yet. Listings show them
   * only for ended batches (counting an open one reads its counter shards).
   */
  readonly counts?: BatchCounts & { readonly pending: number };
  readonly endedAt?: string;
  readonly thenTaskId?: string;
}

export interface BatchServiceDeps {
  readonly tasks: TaskService;
  readonly store: TaskStore;
  readonly batches: BatchStore;
  readonly queues: QueueClient;
  /** The item schema (the API's submit schema): each item is parsed with it. */
  readonly itemSchema: z.ZodType<SubmitInput>;
  readonly now?: () => Date;
  readonly logger?: TaskLogger | undefined;
}

/** Counter shards counted at once by `membersEnded`. */
const COUNT_CONCURRENCY = 16;
/** Open batches the sweeper takes per key and pass. */
const SWEEP_PAGE = 10;

export class BatchService {
  readonly #deps: BatchServiceDeps;
  readonly #now: () => Date;

  constructor(deps: BatchServiceDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => new Date());
  }

  /** The tenant a batch request is for: every item (and the then-task) must name the same one. */
  tenantOf(input: BatchSubmitInput): string {
    const named = new Set<string>();
    for (const item of input.tasks) {
      const tenantId = (item as { tenantId?: unknown } | null)?.tenantId;
      if (typeof tenantId === 'string') named.add(tenantId);
    }
    if (input.then) named.add(input.then.tenantId);
    if (named.size !== 1) {
      throw new ValidationError(
        named.size === 0 ? 'missing_tenant' : 'mixed_tenants',
        named.size === 0
          ? "No item names a tenantId: a batch is one tenant's"
          : `A batch is one tenant's: the items name ${[...named].slice(0, 5).join(', ')}`,
        { field: 'tasks[].tenantId' },
      );
    }
    return [...named][0]!;
  }

  async submit(input: BatchSubmitInput): Promise<BatchSubmitResult> {
    const { tasks: service, store, batches } = this.#deps;
    if (input.tasks.length === 0 || input.tasks.length > MAX_BATCH_TASKS) {
      throw new ValidationError(
        'invalid_batch_size',
        `A batch holds 1 to ${MAX_BATCH_TASKS} tasks, not ${input.tasks.length}`,
        {
          field: 'tasks',
          max: MAX_BATCH_TASKS,
        },
      );
    }
    const tenantId = this.tenantOf(input);
    const now = this.#now();
    const requestHash = createHash('sha256').update(canonicalJson(input)).digest('base64url').slice(0, 32);
    const batchId = batchIdOf(tenantId, input.idempotencyKey ? `key\u0000${input.idempotencyKey}` : requestHash);
    let thenRequest: StoredThen | undefined;
    if (input.then) {
      // The then-task waits for the batch, not for tasks it names, and the batch names it (its id
      // is derived from the batch id): refused rather than dropped (it would run at once with
      // dependsOn unchecked, and under no key of the caller's).
      for (const field of ['dependsOn', 'idempotencyKey'] as const) {
        if (input.then[field] !== undefined) {
          throw new ValidationError(
            'invalid_request',
            field === 'dependsOn'
              ? 'then: dependsOn is not taken: the then-task starts once every task of the batch has ended'
              : 'then: idempotencyKey is not taken: the batch names its then-task (give the batch an idempotencyKey)',
            { field: `then.${field}` },
          );
        }
      }
      // Resolved now, against this registry and config: refused now rather than when the batch
      // ends, and whichever component ends the batch (a worker with its own task types) creates
      // it from the stored spec without needing the type.
      const probe = { batchId, succeeded: 0, failed: 0, cancelled: 0 };
      try {
        const {
          runAt: _runAt,
          idempotencyKey: _key,
          ...spec
        } = service.resolveSpec({ ...input.then, payload: thenPayload(input.then.payload, probe) }, now);
        // The parsed payload without the probe's summary (the real one is added at the end).
        const parsed = spec.payload;
        const payload =
          typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
            ? Object.fromEntries(Object.entries(parsed).filter(([key]) => key !== 'batch'))
            : parsed;
        thenRequest = {
          spec: { ...spec, payload },
          ...(input.then.delaySeconds === undefined ? {} : { delaySeconds: input.then.delaySeconds }),
          ...(input.then.runAt === undefined ? {} : { runAt: input.then.runAt }),
        };
      } catch (error) {
        if (error instanceof ValidationError) {
          throw new ValidationError(error.code, `then: ${error.message}`, {
            field: 'then',
            ...asObject(error.details),
          });
        }
        throw error;
      }
    }

    // Every item validated before anything is written.
    // Dense arrays (Array.from): map and flatMap skip the holes of `new Array(n)`.
    const results = Array.from<BatchItemResult | undefined>({ length: input.tasks.length });
    const planned = Array.from<{ input: SubmitInput; spec: NewTaskSpec; taskId: string } | undefined>({
      length: input.tasks.length,
    });
    const ownKeys = new Set<string>();
    input.tasks.forEach((raw, index) => {
      const parsed = this.#deps.itemSchema.safeParse(raw);
      if (!parsed.success) {
        results[index] = itemError('invalid_request', parsed.error.issues.map(issueText).join('; '));
        return;
      }
      const item = parsed.data;
      if (item.tenantId !== tenantId) {
        results[index] = itemError('mixed_tenants', `tenantId ${item.tenantId} is not the batch's (${tenantId})`);
        return;
      }
      if (item.idempotencyKey !== undefined) {
        if (ownKeys.has(item.idempotencyKey)) {
          results[index] = itemError(
            'duplicate_idempotency_key',
            `idempotencyKey ${item.idempotencyKey} is used by an earlier item`,
          );
          return;
        }
        ownKeys.add(item.idempotencyKey);
      }
      const keyed = { ...item, idempotencyKey: item.idempotencyKey ?? impliedItemKey(batchId, index) };
      let spec: NewTaskSpec;
      try {
        spec = service.resolveSpec(keyed, now);
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        results[index] = itemError(error.code, error.message);
        return;
      }
      planned[index] = { input: keyed, spec, taskId: idempotentTaskId(tenantId, keyed.idempotencyKey) };
    });
    // Every item's dependencies read at once (consistently): tasks that existed before the batch
    // (app/dependencies.ts); an item's is refused at its index when one is missing.
    // The items with dependencies are read too: one that exists (a retried batch) is answered with
    // it, even if a dependency has since gone. Read before the batch is recorded, so that a batch
    // whose every item names an unknown dependency records nothing either.
    const dependencyIds = [
      ...new Set(planned.flatMap((plan) => (plan?.input.dependsOn ? [plan.taskId, ...plan.input.dependsOn] : []))),
    ];
    const dependencies = dependencyIds.length > 0 ? await store.getMany(dependencyIds) : new Map<string, Task>();
    const refusedOnDependencies = (plan: (typeof planned)[number]): ValidationError | undefined => {
      if (!plan?.spec.dependsOn || dependencies.has(plan.taskId)) return undefined;
      try {
        dependencyStates(dependencies, tenantId, plan.taskId, plan.spec.dependsOn);
        return undefined;
      } catch (error) {
        if (error instanceof ValidationError) return error;
        throw error;
      }
    };
    const dependencyRefusals = planned.map(refusedOnDependencies);
    if (planned.every((plan, index) => plan === undefined || dependencyRefusals[index] !== undefined)) {
      // Nothing to run: no batch is recorded and no then-task runs on counts of 0. A 400, as every
      // refusal is, with each item's error where a 200 would have had it.
      dependencyRefusals.forEach((error, index) => {
        if (error) results[index] = itemError(error.code, error.message);
      });
      throw new ValidationError(
        'all_items_refused',
        `Every item of the batch was refused (${results.length} of ${results.length}); nothing was written`,
        { field: 'tasks', results },
      );
    }

    const { batch: stored, created } = await batches.create({
      batchId,
      tenantId,
      createdAt: now.toISOString(),
      requestHash,
      total: input.tasks.length,
      ...(thenRequest ? { thenRequest } : {}),
      members: planned.map((plan) => plan?.taskId),
      firstSweepAt: new Date(now.getTime() + nextSweepDelayMs(0)).toISOString(),
    });
    if (stored.requestHash !== requestHash) {
      throw new BatchConflictError(batchId, input.idempotencyKey);
    }

    const accepted: SubmitResult[] = [];
    const excluded: number[] = [];
    const failures: unknown[] = [];
    // The tasks, conditional creates 25 to a BatchExecuteStatement call (task-store.ts createMany).
    const writes: { index: number; key: string | undefined; task: Task }[] = [];
    planned.forEach((plan, index) => {
      if (!plan) return;
      try {
        const spec = { ...plan.spec, batchId, batchIndex: index };
        const hash = hashRequest(effectiveRequest(plan.input, spec));
        const fresh = createTask(plan.taskId, spec, now, hash);
        const task =
          spec.dependsOn && !dependencies.has(plan.taskId)
            ? holdOnDependencies(fresh, dependencyStates(dependencies, tenantId, plan.taskId, spec.dependsOn))
            : fresh;
        writes.push({ index, key: plan.input.idempotencyKey, task });
      } catch (error) {
        if (error instanceof IdempotencyConflictError || error instanceof ValidationError) {
          excluded.push(index);
          results[index] = itemError(error.code, error.message);
          return;
        }
        failures.push(error);
      }
    });
    const outcomes = await store.createMany(writes.map((write) => write.task));
    outcomes.forEach((outcome, k) => {
      const { index, key } = writes[k]!;
      if ('error' in outcome) {
        failures.push(outcome.error);
        return;
      }
      const { task } = outcome;
      if (!outcome.created && (task.batchId !== batchId || task.batchIndex !== index)) {
        // The item's own key names a task submitted outside this batch (or at another index).
        excluded.push(index);
        results[index] = itemError(
          'idempotency_conflict',
          `idempotencyKey ${key} names task ${task.taskId}, which is not this item of batch ${batchId}`,
        );
        return;
      }
      accepted.push(outcome);
      results[index] = { taskId: task.taskId, state: task.state, created: outcome.created };
    });
    await service.announceAccepted(accepted);
    if (failures.length > 0) {
      // The client retries the whole request (the same batch id): what was written stays and is found.
      throw failures[0];
    }
    // Excluded after the batch was recorded: count them, so their shards can finish.
    await Promise.all(excluded.map((index) => this.#count(batchId, index, 'excluded')));
    // Shards made only of refused items are complete already (and a batch of nothing but those).
    await this.#settleFullShards(stored, results);
    return { batchId, created, results: results as BatchItemResult[] };
  }

  /**
   * A member ended: count it (the task store calls this after the write that ended it). Errors
   * are the caller's to log: the sweeper counts what this did not.
   */
  async memberEnded(task: BatchMemberTask): Promise<void> {
    const set = countSetOf(task.state);
    if (task.batchId === undefined || !set) return;
    await this.#count(task.batchId, task.batchIndex ?? 0, set);
  }

  /**
   * Members' ends reported together (the scheduler, from a round of completion messages): one
   * read and one write per counter shard, however many of its members are in `ends`, instead of
   * a write each (BatchStore.countMany); then each shard's done check, as after a single count.
   * Idempotent: an end counted before (a redelivered message, the sweeper) is left as it is. Ends
   * without a batch, not ended, or of a batch whose items are gone (expired) count nothing.
   * Returns the ends it could not count (a failed call): the caller keeps their messages.
   */
  async membersEnded(ends: readonly BatchMemberEnd[]): Promise<BatchMemberEnd[]> {
    const groups = new Map<string, { batchId: string; shard: number; ends: BatchMemberEnd[] }>();
    for (const end of ends) {
      if (!countSetOf(end.state)) continue;
      const shard = shardOfIndex(end.batchIndex);
      const key = `${end.batchId}\u0000${shard}`;
      const group = groups.get(key) ?? { batchId: end.batchId, shard, ends: [] };
      group.ends.push(end);
      groups.set(key, group);
    }
    const failed: BatchMemberEnd[] = [];
    await inParallel([...groups.values()], COUNT_CONCURRENCY, async (group) => {
      try {
        const counter = await this.#deps.batches.countMany(
          group.batchId,
          group.shard,
          group.ends.map((end) => ({ index: end.batchIndex, set: countSetOf(end.state)! })),
        );
        if (counter) await this.#afterCount(group.batchId, counter);
      } catch (error) {
        this.#deps.logger?.warn('batch ends not counted yet', { batchId: group.batchId, error: String(error) });
        failed.push(...group.ends);
      }
    });
    return failed;
  }

  async #count(batchId: string, index: number, set: (typeof COUNT_SETS)[number]): Promise<void> {
    const counter = await this.#deps.batches.count(batchId, index, set);
    await this.#afterCount(batchId, counter);
  }

  /** A shard whose members are all counted is recorded done; the last shard ends the batch. */
  async #afterCount(batchId: string, counter: CounterShard): Promise<void> {
    if (counted(counter) < counter.expected) return;
    const batch = await this.#deps.batches.markShardDone(batchId, counter.shard);
    if (batch.doneShards.length >= batch.shards && !batch.endedAt) await this.#end(batch);
  }

  async #settleFullShards(batch: StoredBatch, results: readonly (BatchItemResult | undefined)[]): Promise<void> {
    const shards = new Set<number>();
    results.forEach((result, index) => {
      if (result && 'error' in result) shards.add(Math.floor(index / BATCH_SHARD_SIZE));
    });
    for (const shard of shards) {
      const counter = await this.#deps.batches.getCounter(batch.batchId, shard);
      if (counter) await this.#afterCount(batch.batchId, counter);
    }
  }

  /**
   * Every member has ended: submit the then-task (a deterministic id, so a second caller's create
   * finds the first's and creates nothing), then record the end.
   */
  async #end(batch: StoredBatch): Promise<void> {
    const { batches, store } = this.#deps;
    const counters = await batches.getCounters(batch);
    const counts = sumCounts(counters);
    const now = this.#now();
    let thenTaskId: string | undefined;
    if (batch.hasThen) {
      const thenRequest = (await batches.getThen(batch.batchId)) as StoredThen | undefined;
      if (thenRequest) {
        const summary = {
          batchId: batch.batchId,
          succeeded: counts.succeeded,
          failed: counts.failed,
          cancelled: counts.cancelled,
        };
        const taskId = idempotentTaskId(batch.tenantId, thenTaskKey(batch.batchId));
        const { spec, delaySeconds, runAt } = thenRequest;
        const startAt =
          runAt !== undefined
            ? new Date(runAt)
            : delaySeconds
              ? new Date(now.getTime() + delaySeconds * 1000)
              : undefined;
        const thenSpec: NewTaskSpec = {
          ...spec,
          payload: thenPayload(spec.payload, summary),
          ...(startAt ? { runAt: startAt } : {}),
        };
        const { created, task } = await store.create(createTask(taskId, thenSpec, now));
        // Announced whatever the intake promise says (a worker ending the last member may not
        // read it); a second announcement of a task is harmless, the scheduler dedups on its id.
        if (created || task.state === 'QUEUED') await this.#deps.queues.announce([task], now);
        thenTaskId = taskId;
      }
    }
    await batches.markEnded(batch, {
      endedAt: now.toISOString(),
      counts,
      ...(thenTaskId ? { thenTaskId } : {}),
    });
  }

  /**
   * The backstop: look at the open batches due for a look, count every ended member not counted
   * yet (and a member never written, once the batch is past the retry window), and end the
   * batches that are complete. Returns how many batches it looked at.
   */
  async sweep(): Promise<number> {
    const now = this.#now();
    const due = await this.#deps.batches.listOpenDue(now.toISOString(), SWEEP_PAGE);
    for (const batchId of due) {
      try {
        await this.sweepBatch(batchId);
      } catch (error) {
        this.#deps.logger?.warn('batch sweep failed', { batchId, error: String(error) });
      }
    }
    return due.length;
  }

  async sweepBatch(batchId: string): Promise<void> {
    const { batches, store } = this.#deps;
    const batch = await batches.get(batchId);
    if (!batch || batch.endedAt) {
      await batches.deleteOpenMarker(batchId);
      return;
    }
    const nowMs = this.#now().getTime();
    const done = new Set(batch.doneShards);
    for (let shard = 0; shard < batch.shards; shard++) {
      if (done.has(shard)) continue;
      let counter = await batches.getCounter(batchId, shard);
      if (!counter) continue;
      if (counted(counter) < counter.expected) {
        const members = await batches.getMembers(batchId, shard);
        const seen = new Set(COUNT_SETS.flatMap((name) => [...counter!.sets[name]]));
        const open = members.flatMap((taskId, i) => {
          const index = shard * BATCH_SHARD_SIZE + i;
          return seen.has(String(index)) ? [] : [{ index, taskId }];
        });
        const found = await store.getMany(open.map(({ taskId }) => taskId).filter(Boolean));
        for (const { index, taskId } of open) {
          const task = taskId ? found.get(taskId) : undefined;
          const member = task && task.batchId === batchId && task.batchIndex === index;
          if (task && !member) counter = await batches.count(batchId, index, 'excluded');
          else if (task && isTerminal(task.state))
            counter = await batches.count(batchId, index, countSetOf(task.state)!);
          else if (!task && nowMs - Date.parse(batch.createdAt) > UNWRITTEN_MEMBER_GRACE_MS) {
            counter = await batches.count(batchId, index, 'excluded');
          }
        }
      }
      if (counted(counter) >= counter.expected) await batches.markShardDone(batchId, shard);
    }
    const after = await batches.get(batchId);
    if (after && !after.endedAt && after.doneShards.length >= after.shards) {
      await this.#end(after);
      return;
    }
    const sweeps = (await batches.sweepsOf(batchId)) + 1;
    await batches.rescheduleSweep(batchId, new Date(nowMs + nextSweepDelayMs(sweeps)).toISOString(), sweeps);
  }

  /**
   * The batch with its counts, when it exists and `visible` accepts its tenant (asked before its
   * counters are read: the API's caller learns nothing of another tenant's batch, not even by the
   * work done).
   */
  async describe(
    batchId: string,
    visible: (tenantId: string) => Promise<boolean> = async () => true,
  ): Promise<BatchView | undefined> {
    const batch = await this.#deps.batches.get(batchId);
    if (!batch || !(await visible(batch.tenantId))) return undefined;
    const counts = batch.counts ?? sumCounts(await this.#deps.batches.getCounters(batch));
    return viewOf(batch, counts);
  }

  /**
   * Batches not ended yet, at most `limit` of those `include` accepts (the dashboard's): read from
   * the sweeper's open list (one Query a key), with their counts so far.
   */
  async listOpen(limit: number, include: (tenantId: string) => Promise<boolean>): Promise<BatchView[]> {
    const ids = await this.#deps.batches.listOpenDue('9999', limit);
    const views: BatchView[] = [];
    for (const batchId of ids) {
      if (views.length >= limit) break;
      const batch = await this.#deps.batches.get(batchId);
      if (!batch || batch.endedAt || !(await include(batch.tenantId))) continue;
      views.push(viewOf(batch, sumCounts(await this.#deps.batches.getCounters(batch))));
    }
    return views.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  }

  /**
   * The open batches among each tenant's `limit` newest, newest first, at most `limit` (the
   * dashboard's, for a caller for some tenants only): read from those tenants' own listings, so
   * another tenant's open batches, however many, take no place of theirs (the sweeper's open list
   * that `listOpen` reads is every tenant's).
   */
  async listOpenOf(tenantIds: readonly string[], limit: number): Promise<BatchView[]> {
    const pages = await Promise.all(tenantIds.map((tenantId) => this.#deps.batches.list(tenantId, limit)));
    const open = pages
      .flatMap((page) => page.items)
      .filter((batch) => !batch.endedAt)
      .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0))
      .slice(0, limit);
    return Promise.all(
      open.map(async (batch) => viewOf(batch, sumCounts(await this.#deps.batches.getCounters(batch)))),
    );
  }

  /**
   * A batch's members in index order, optionally only those in `state`, at most `limit` a page,
   * from `cursor` (a `memberCursor`): read from the batch's member shards and the items
   * themselves, consistently. Where a batch's succeeded members are listed (their tenant's
   * listing leaves them out: task-store.ts `toItem`), and a member in any state. Without a state
   * a page reads the items it shows (refused items aside); with one, the rest of a shard
   * (BATCH_SHARD_SIZE members) at a time, so a state few members are in costs at most the batch's
   * size in item reads a page. Undefined when the batch does not exist or `visible` refuses.
   */
  async members(
    batchId: string,
    query: { readonly state?: TaskState | undefined; readonly limit: number; readonly cursor?: string | undefined },
    visible: (tenantId: string) => Promise<boolean> = async () => true,
  ): Promise<{ items: { index: number; task: Task }[]; nextIndex?: number } | undefined> {
    const batch = await this.#deps.batches.get(batchId);
    if (!batch || !(await visible(batch.tenantId))) return undefined;
    let index = query.cursor === undefined ? 0 : memberIndexOf(query.cursor, batchId);
    const items: { index: number; task: Task }[] = [];
    while (index < batch.total && items.length < query.limit) {
      const shard = Math.floor(index / BATCH_SHARD_SIZE);
      const first = shard * BATCH_SHARD_SIZE;
      const ids = await this.#deps.batches.getMembers(batchId, shard);
      // Without a state, exactly the members the page still needs; with one, the rest of the shard.
      const end = Math.min(
        batch.total,
        first + BATCH_SHARD_SIZE,
        query.state === undefined ? index + query.limit - items.length : Number.POSITIVE_INFINITY,
      );
      const tasks = await this.#deps.store.getMany(ids.slice(index - first, end - first).filter((id) => id !== ''));
      for (; index < end && items.length < query.limit; index++) {
        const task = tasks.get(ids[index - first] ?? '');
        if (task && (query.state === undefined || task.state === query.state)) items.push({ index, task });
      }
    }
    return index < batch.total ? { items, nextIndex: index } : { items };
  }

  async list(tenantId: string, limit: number, cursor?: string): Promise<{ items: BatchView[]; nextCursor?: string }> {
    const page = await this.#deps.batches.list(tenantId, limit, cursor);
    const items = page.items.map((batch) => viewOf(batch, batch.counts));
    return page.nextCursor ? { items, nextCursor: page.nextCursor } : { items };
  }
}

/**
 * The then-task as resolved at submit (defaults applied, payload parsed), without its start time,
 * which counts from the batch's end (`delaySeconds`) or is the instant given (`runAt`).
 */
interface StoredThen {
  readonly spec: Omit<NewTaskSpec, 'runAt' | 'idempotencyKey'>;
  readonly delaySeconds?: number;
  readonly runAt?: string;
}

/** The cursor of a members page that goes on at member `index` of `batchId`. */
export const memberCursor = (batchId: string, index: number): string =>
  encodeCursor({ batchId, member: String(index) });

/** The member index a `memberCursor` goes on at; a 400 for one of another batch, or malformed. */
function memberIndexOf(cursor: string, batchId: string): number {
  const key = decodeKeyCursor(
    cursor,
    ['batchId', 'member'],
    (k) => k.batchId === batchId && /^\d{1,4}$/.test(String(k.member)),
  );
  return Number(key.member);
}

/** A batch idempotency key reused with another body. */
export class BatchConflictError extends IdempotencyConflictError {
  constructor(batchId: string, idempotencyKey: string | undefined) {
    // Answered as any reused key is (409 idempotency_key_reused), naming the batch as a batch.
    super({ taskId: batchId, idempotencyKey } as Task, {
      message: `Idempotency key "${idempotencyKey}" was already used for a different batch (${batchId})`,
      details: { batchId },
    });
    this.name = 'BatchConflictError';
  }
}

/** `bat_` and 26 characters of a hash of the tenant and the request (or the batch key). */
export function batchIdOf(tenantId: string, request: string): string {
  const digest = createHash('sha256').update(`${tenantId}\u0000batch\u0000${request}`).digest('base64url');
  return `bat_${digest.slice(0, 26)}`;
}

function sumCounts(counters: readonly CounterShard[]): BatchCounts {
  const sum = (name: (typeof COUNT_SETS)[number]) => counters.reduce((n, c) => n + c.sets[name].size, 0);
  return { succeeded: sum('succeeded'), failed: sum('failed'), cancelled: sum('cancelled'), excluded: sum('excluded') };
}

function viewOf(batch: StoredBatch, counts: BatchCounts | undefined): BatchView {
  const pending = counts
    ? batch.total - counts.succeeded - counts.failed - counts.cancelled - counts.excluded
    : undefined;
  return {
    batchId: batch.batchId,
    tenantId: batch.tenantId,
    createdAt: batch.createdAt,
    total: batch.total,
    ...(counts ? { counts: { ...counts, pending: Math.max(0, pending!) } } : {}),
    ...(batch.endedAt ? { endedAt: batch.endedAt } : {}),
    ...(batch.thenTaskId ? { thenTaskId: batch.thenTaskId } : {}),
  };
}

const itemError = (code: string, message: string): BatchItemResult => ({ error: { code, message } });

const issueText = (issue: z.core.$ZodIssue): string =>
  issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message;

const asObject = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
