/**
 * DynamoDB persistence of batches (issue 25). The items live in the task table beside the tasks,
 * under keys no task id can take (`bat_…`; task ids are `tsk_…`), with no `state`: no task
 * reader, index entry or stream event sees them. Two index keys of `byTenantState` they use are
 * ones no task writes (a task's are `${tenantId}#${STATE}#${shard}`, and tenant ids have no `~`):
 *
 *   `${batchId}`        the batch: tenant, size, shards done, then-task id and counts once ended;
 *                       listed by tenant under `${tenantId}#BATCHES`, newest first
 *   `${batchId}#then`   the then-task's request, as given (read once, at the end)
 *   `${batchId}#c${k}`  counter shard k: string sets of member indexes (core/batch.ts)
 *   `${batchId}#m${k}`  the task ids of shard k's members, index order ('' for a refused item)
 *   `${batchId}#open`   while the batch has not ended: listed under `~open#${0..3}` by when the
 *                       sweeper should look at it (the backstop for a count never made)
 *
 * Every write is a single-item conditional write or an idempotent set ADD, so a write applied
 * with its response lost and retried by the SDK changes nothing more.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  BATCH_SHARD_SIZE,
  type BatchCounts,
  COUNT_SETS,
  type CountSet,
  OPEN_BATCH_SHARDS,
  openShardOf,
  shardCount,
  shardSize,
} from '../core/batch.ts';
import { ValidationError } from '../core/errors.ts';
import { FINISHED_TASK_RETENTION_DAYS } from '../infra/resources.ts';
import { inParallel } from './in-parallel.ts';
import { decodeKeyCursor, encodeCursor } from './index-keys.ts';

/** The batch item, as stored. */
export interface StoredBatch {
  readonly batchId: string;
  readonly tenantId: string;
  readonly createdAt: string;
  /** Hash of the request body: a batch idempotency key reused with another body is refused. */
  readonly requestHash: string;
  /** Items in the request (member indexes 0 … total-1). */
  readonly total: number;
  readonly shards: number;
  readonly hasThen: boolean;
  /** Counter shards whose every member is counted. */
  readonly doneShards: readonly number[];
  /** Set once, when every member has ended. */
  readonly endedAt?: string;
  readonly counts?: BatchCounts;
  readonly thenTaskId?: string;
}

/** A counter shard as read. */
export interface CounterShard {
  readonly shard: number;
  readonly expected: number;
  readonly sets: Readonly<Record<CountSet, ReadonlySet<string>>>;
}

export const counted = (counter: CounterShard): number =>
  COUNT_SETS.reduce((sum, name) => sum + counter.sets[name].size, 0);

const metaKey = (batchId: string) => batchId;
const thenKey = (batchId: string) => `${batchId}#then`;
const counterKey = (batchId: string, shard: number) => `${batchId}#c${shard}`;
const membersKey = (batchId: string, shard: number) => `${batchId}#m${shard}`;
const openKey = (batchId: string) => `${batchId}#open`;
const tenantListKey = (tenantId: string) => `${tenantId}#BATCHES`;
const openListKey = (shard: number) => `~open#${shard}`;

/** Read-and-write rounds of `countMany` before it gives up (the caller's messages come back). */
const COUNT_MANY_ATTEMPTS = 5;

/** Writes of a batch's creation, this many at once. */
const CREATE_CONCURRENCY = 8;

export class BatchStore {
  readonly #documents: DynamoDBDocumentClient;
  readonly #tableName: string;

  constructor(documents: DynamoDBDocumentClient, tableName: string) {
    this.#documents = documents;
    this.#tableName = tableName;
  }

  /**
   * Record a new batch, before any of its tasks is written: the batch item, the then request,
   * every counter shard (with the refused indexes already `excluded`), the member lists, and the
   * open marker. Each is a conditional create, so a repeat of the request leaves what exists
   * (counts made since included) as it is. Returns the stored batch (the earlier one on a repeat).
   * A create whose answer was lost and whose retry found the item counts as not created: the
   * client sees `created: false` for a batch it made, as for a task.
   */
  async create(input: {
    batchId: string;
    tenantId: string;
    createdAt: string;
    requestHash: string;
    total: number;
    thenRequest?: unknown;
    /** Per index: the member's task id, or undefined for an item refused at validation. */
    members: readonly (string | undefined)[];
    firstSweepAt: string;
  }): Promise<{ batch: StoredBatch; created: boolean }> {
    const { batchId, tenantId, createdAt, total } = input;
    const shards = shardCount(total);
    const existing = await this.#putIfAbsent({
      taskId: metaKey(batchId),
      batchId,
      tenantId,
      createdAt,
      requestHash: input.requestHash,
      total,
      shards,
      hasThen: input.thenRequest !== undefined,
      tenantState: tenantListKey(tenantId),
      listKey: `${createdAt}#${batchId}`,
    });
    const writes: Record<string, unknown>[] = [];
    if (input.thenRequest !== undefined) {
      writes.push({ taskId: thenKey(batchId), request: JSON.stringify(input.thenRequest) });
    }
    for (let shard = 0; shard < shards; shard++) {
      const from = shard * BATCH_SHARD_SIZE;
      const ids = input.members.slice(from, from + shardSize(total, shard));
      const refused = ids.flatMap((id, i) => (id === undefined ? [String(from + i)] : []));
      writes.push({
        taskId: counterKey(batchId, shard),
        expected: ids.length,
        ...(refused.length > 0 ? { excluded: new Set(refused) } : {}),
      });
      writes.push({ taskId: membersKey(batchId, shard), ids: ids.map((id) => id ?? '') });
    }
    if (!existing?.endedAt) writes.push(this.#openItem(batchId, input.firstSweepAt, 0));
    await inParallel(writes, CREATE_CONCURRENCY, async (item) => {
      if (item.taskId === openKey(batchId)) await this.#put(item);
      else await this.#putIfAbsent(item);
    });
    if (existing) return { batch: toBatch(existing), created: false };
    return { batch: (await this.get(batchId)) as StoredBatch, created: true };
  }

  async get(batchId: string): Promise<StoredBatch | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { taskId: metaKey(batchId) }, ConsistentRead: true }),
    );
    return Item ? toBatch(Item) : undefined;
  }

  /** The then-task's request as given at submit (undefined: the batch has none). */
  async getThen(batchId: string): Promise<unknown> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { taskId: thenKey(batchId) }, ConsistentRead: true }),
    );
    return Item ? JSON.parse(Item.request as string) : undefined;
  }

  /**
   * Count a member's end: ADD its index to the set, unless it is in one of the four already
   * (a repeat, or a retried write whose first copy landed). Returns the shard as it is after.
   */
  async count(batchId: string, index: number, set: CountSet): Promise<CounterShard> {
    const shard = Math.floor(index / BATCH_SHARD_SIZE);
    const member = String(index);
    const names = Object.fromEntries(COUNT_SETS.map((name) => [`#${name}`, name]));
    try {
      const { Attributes } = await this.#documents.send(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: { taskId: counterKey(batchId, shard) },
          UpdateExpression: `ADD #${set} :members`,
          ConditionExpression: [
            'attribute_exists(expected)',
            ...COUNT_SETS.map((name) => `NOT contains(#${name}, :member)`),
          ].join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ':members': new Set([member]), ':member': member },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toCounter(shard, Attributes ?? {});
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const counter = await this.getCounter(batchId, shard);
      if (!counter) throw new ValidationError('unknown_batch', `No counter shard ${shard} for batch ${batchId}`);
      return counter;
    }
  }

  /**
   * Count several members' ends of one counter shard in one write (the scheduler, from the
   * completions of a round): a consistent read of the shard, then one UpdateItem that ADDs every
   * index not in any of the four sets yet, on condition that the four sets still have the sizes
   * read. Sets only grow, so equal sizes mean nothing was counted in between: each index lands in
   * exactly one set, as with `count`. A write that landed with its answer lost, or lost a race,
   * is refused on the sizes and read again (the indexes then found counted are left). An end
   * repeated in `ends` counts its first state. Returns the shard as it is after; undefined when
   * the batch's items are gone (expired 30 days after its end: nothing left to count).
   */
  async countMany(
    batchId: string,
    shard: number,
    ends: readonly { readonly index: number; readonly set: CountSet }[],
  ): Promise<CounterShard | undefined> {
    for (let attempt = 1; ; attempt++) {
      const counter = await this.getCounter(batchId, shard);
      if (!counter) return undefined;
      const seen = new Set(COUNT_SETS.flatMap((name) => [...counter.sets[name]]));
      const adds = new Map<CountSet, Set<string>>();
      for (const { index, set } of ends) {
        if (Math.floor(index / BATCH_SHARD_SIZE) !== shard) {
          throw new ValidationError('invalid_request', `Member ${index} is not in counter shard ${shard}`);
        }
        const member = String(index);
        if (seen.has(member)) continue;
        seen.add(member);
        adds.set(set, (adds.get(set) ?? new Set()).add(member));
      }
      if (adds.size === 0) return counter;
      const names: Record<string, string> = {};
      const values: Record<string, unknown> = {};
      const conditions = ['attribute_exists(expected)'];
      COUNT_SETS.forEach((name, i) => {
        names[`#s${i}`] = name;
        const size = counter.sets[name].size;
        if (size === 0) conditions.push(`attribute_not_exists(#s${i})`);
        else {
          conditions.push(`size(#s${i}) = :n${i}`);
          values[`:n${i}`] = size;
        }
      });
      const updates = COUNT_SETS.flatMap((name, i) => {
        const members = adds.get(name);
        if (!members) return [];
        values[`:a${i}`] = members;
        return [`#s${i} :a${i}`];
      });
      try {
        const { Attributes } = await this.#documents.send(
          new UpdateCommand({
            TableName: this.#tableName,
            Key: { taskId: counterKey(batchId, shard) },
            UpdateExpression: `ADD ${updates.join(', ')}`,
            ConditionExpression: conditions.join(' AND '),
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValues: 'ALL_NEW',
          }),
        );
        return toCounter(shard, Attributes ?? {});
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException) || attempt >= COUNT_MANY_ATTEMPTS) throw error;
      }
    }
  }

  async getCounter(batchId: string, shard: number): Promise<CounterShard | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { taskId: counterKey(batchId, shard) }, ConsistentRead: true }),
    );
    return Item ? toCounter(shard, Item) : undefined;
  }

  /** Every counter shard of a batch (consistent reads). */
  async getCounters(batch: Pick<StoredBatch, 'batchId' | 'shards'>): Promise<CounterShard[]> {
    const items = await this.#getMany(Array.from({ length: batch.shards }, (_, k) => counterKey(batch.batchId, k)));
    return Array.from({ length: batch.shards }, (_, k) => {
      const item = items.get(counterKey(batch.batchId, k));
      return toCounter(k, item ?? { expected: 0 });
    });
  }

  /** The task ids of a shard's members, in index order ('' for a refused item). */
  async getMembers(batchId: string, shard: number): Promise<string[]> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { taskId: membersKey(batchId, shard) }, ConsistentRead: true }),
    );
    return (Item?.ids as string[] | undefined) ?? [];
  }

  /** Record a shard as done (an idempotent set ADD); the batch as it is after. */
  async markShardDone(batchId: string, shard: number): Promise<StoredBatch> {
    const { Attributes } = await this.#documents.send(
      new UpdateCommand({
        TableName: this.#tableName,
        Key: { taskId: metaKey(batchId) },
        UpdateExpression: 'ADD doneShards :shard',
        ConditionExpression: 'attribute_exists(batchId)',
        ExpressionAttributeValues: { ':shard': new Set([shard]) },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return toBatch(Attributes ?? {});
  }

  /**
   * Record the end: counts and then-task id, once (a second call finds `endedAt` and changes
   * nothing). Then the open marker goes, and every item of the batch gets the finished tasks' TTL.
   */
  async markEnded(
    batch: StoredBatch,
    ended: { endedAt: string; counts: BatchCounts; thenTaskId?: string },
  ): Promise<void> {
    const expiresAt = Math.floor(Date.parse(ended.endedAt) / 1000) + FINISHED_TASK_RETENTION_DAYS * 86_400;
    try {
      await this.#documents.send(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: { taskId: metaKey(batch.batchId) },
          UpdateExpression: `SET endedAt = :endedAt, counts = :counts, expiresAt = :expiresAt${
            ended.thenTaskId ? ', thenTaskId = :then' : ''
          }`,
          ConditionExpression: 'attribute_not_exists(endedAt)',
          ExpressionAttributeValues: {
            ':endedAt': ended.endedAt,
            ':counts': ended.counts,
            ':expiresAt': expiresAt,
            ...(ended.thenTaskId ? { ':then': ended.thenTaskId } : {}),
          },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
    await this.#delete(openKey(batch.batchId));
    const rest = [
      ...(batch.hasThen ? [thenKey(batch.batchId)] : []),
      ...Array.from({ length: batch.shards }, (_, k) => [
        counterKey(batch.batchId, k),
        membersKey(batch.batchId, k),
      ]).flat(),
    ];
    await inParallel(rest, CREATE_CONCURRENCY, (taskId) =>
      this.#documents
        .send(
          new UpdateCommand({
            TableName: this.#tableName,
            Key: { taskId },
            UpdateExpression: 'SET expiresAt = :expiresAt',
            ConditionExpression: 'attribute_exists(taskId)',
            ExpressionAttributeValues: { ':expiresAt': expiresAt },
          }),
        )
        .catch((error: unknown) => {
          if (!(error instanceof ConditionalCheckFailedException)) throw error;
        }),
    );
  }

  /** Batches the sweeper should look at by `at` (ISO), up to `limit` a shard (index reads: may lag). */
  async listOpenDue(at: string, limit: number): Promise<string[]> {
    const pages = await Promise.all(
      Array.from({ length: OPEN_BATCH_SHARDS }, (_, shard) =>
        this.#documents.send(
          new QueryCommand({
            TableName: this.#tableName,
            IndexName: 'byTenantState',
            KeyConditionExpression: 'tenantState = :key AND listKey < :at',
            ExpressionAttributeValues: { ':key': openListKey(shard), ':at': `${at}#~` },
            Limit: limit,
          }),
        ),
      ),
    );
    return pages.flatMap((page) => (page.Items ?? []).map((item) => (item.taskId as string).replace(/#open$/, '')));
  }

  /** The sweeper looked and the batch goes on: look again at `at`. */
  async rescheduleSweep(batchId: string, at: string, sweeps: number): Promise<void> {
    await this.#put(this.#openItem(batchId, at, sweeps));
  }

  /** How many times the sweeper has looked at the batch (0 when not open). */
  async sweepsOf(batchId: string): Promise<number> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { taskId: openKey(batchId) }, ConsistentRead: true }),
    );
    return (Item?.sweeps as number | undefined) ?? 0;
  }

  async deleteOpenMarker(batchId: string): Promise<void> {
    await this.#delete(openKey(batchId));
  }

  /** A tenant's batches, newest first (index read, then the items consistently). */
  async list(
    tenantId: string,
    limit: number,
    cursor?: string,
  ): Promise<{ items: StoredBatch[]; nextCursor?: string | undefined }> {
    const startKey = cursor ? decodeCursor(cursor, tenantId) : undefined;
    const page = await this.#documents.send(
      new QueryCommand({
        TableName: this.#tableName,
        IndexName: 'byTenantState',
        KeyConditionExpression: 'tenantState = :key',
        ExpressionAttributeValues: { ':key': tenantListKey(tenantId) },
        ScanIndexForward: false,
        Limit: limit,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    const ids = (page.Items ?? []).map((item) => item.taskId as string);
    const found = await this.#getMany(ids);
    const items = ids.flatMap((id) => {
      const item = found.get(id);
      return item ? [toBatch(item)] : [];
    });
    const next = page.LastEvaluatedKey;
    return next ? { items, nextCursor: encodeCursor(next) } : { items };
  }

  #openItem(batchId: string, sweepAt: string, sweeps: number): Record<string, unknown> {
    return {
      taskId: openKey(batchId),
      tenantState: openListKey(openShardOf(batchId)),
      listKey: `${sweepAt}#${batchId}`,
      sweeps,
    };
  }

  /** Create unless present; the present item when it was (or undefined when this created it). */
  async #putIfAbsent(item: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    try {
      await this.#documents.send(
        new PutCommand({ TableName: this.#tableName, Item: item, ConditionExpression: 'attribute_not_exists(taskId)' }),
      );
      return undefined;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const { Item } = await this.#documents.send(
        new GetCommand({ TableName: this.#tableName, Key: { taskId: item.taskId }, ConsistentRead: true }),
      );
      // Applied by an earlier try whose answer was lost is the same item: nothing to tell apart.
      return Item ?? item;
    }
  }

  async #put(item: Record<string, unknown>): Promise<void> {
    await this.#documents.send(new PutCommand({ TableName: this.#tableName, Item: item }));
  }

  async #delete(taskId: string): Promise<void> {
    await this.#documents.send(new DeleteCommand({ TableName: this.#tableName, Key: { taskId } }));
  }

  async #getMany(keys: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    for (let offset = 0; offset < keys.length; offset += 100) {
      let batch: Record<string, unknown>[] = keys.slice(offset, offset + 100).map((taskId) => ({ taskId }));
      for (let round = 0; batch.length > 0; round++) {
        const response = await this.#documents.send(
          new BatchGetCommand({ RequestItems: { [this.#tableName]: { Keys: batch, ConsistentRead: true } } }),
        );
        for (const item of response.Responses?.[this.#tableName] ?? []) found.set(item.taskId as string, item);
        batch = (response.UnprocessedKeys?.[this.#tableName]?.Keys as Record<string, unknown>[] | undefined) ?? [];
        if (batch.length > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** round)));
      }
    }
    return found;
  }
}

function toCounter(shard: number, item: Record<string, unknown>): CounterShard {
  const sets = Object.fromEntries(
    COUNT_SETS.map((name) => [name, new Set((item[name] as Set<string> | undefined) ?? [])]),
  ) as Record<CountSet, Set<string>>;
  return { shard, expected: (item.expected as number | undefined) ?? 0, sets };
}

function toBatch(item: Record<string, unknown>): StoredBatch {
  const done = item.doneShards as Set<number> | undefined;
  return {
    batchId: item.batchId as string,
    tenantId: item.tenantId as string,
    createdAt: item.createdAt as string,
    requestHash: item.requestHash as string,
    total: item.total as number,
    shards: item.shards as number,
    hasThen: item.hasThen === true,
    doneShards: [...(done ?? [])].map(Number).sort((a, b) => a - b),
    ...(item.endedAt ? { endedAt: item.endedAt as string } : {}),
    ...(item.counts ? { counts: item.counts as BatchCounts } : {}),
    ...(item.thenTaskId ? { thenTaskId: item.thenTaskId as string } : {}),
  };
}

/** A listing cursor: the index key of the last batch shown, checked to be this tenant's. */
const decodeCursor = (cursor: string, tenantId: string): Record<string, unknown> =>
  decodeKeyCursor(cursor, ['listKey', 'taskId', 'tenantState'], (key) => key.tenantState === tenantListKey(tenantId));
