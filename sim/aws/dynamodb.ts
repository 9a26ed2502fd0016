/**
 * An in-memory DynamoDB that answers the JSON wire protocol (DynamoDB_20120810.*) the way AWS
 * documents it, including what the emulators never do:
 * - eventually consistent reads (GetItem, Scan, BatchGetItem without ConsistentRead) may return
 *   an item as it was up to `eventualLagMs` ago;
 * - global secondary indexes are updated asynchronously: each write reaches an index after its
 *   own lag (drawn from the seed, in write order per item), so an index read can miss an entry,
 *   still list an entry the table has moved on from, or return it with stale projected values;
 * - BatchGetItem may return some keys as UnprocessedKeys, and BatchExecuteStatement answer some
 *   statements throttled (not applied);
 * - Scans of an index read it as it stands (lag and all), a page of at most 1 MB at a time;
 * - items over 400 KB are refused;
 * - each partition key value of the table and of every GSI serves at most 1,000 write units and
 *   3,000 read units a second (sim/aws/capacity.ts has the model); beyond that a request is
 *   refused with ProvisionedThroughputExceededException, which the SDK retries, and a GSI that
 *   cannot take its write refuses the table write.
 * Expressions (conditions, key conditions, filters) are parsed and evaluated by dynalite's own
 * parser and comparator, so their semantics match the local emulator's.
 * TTL deletion is not modelled (runs are far shorter than the 30-day retention).
 */
import { createRequire } from 'node:module';
import { parseInsert } from '../../runtime/adapters/partiql-insert.ts';
import type { IndexDefinition, TableDefinition } from '../../runtime/infra/resources.ts';
import {
  HOT_PARTITION_MESSAGE,
  type PartitionCharge,
  type PartitionLimits,
  PartitionThroughput,
  readUnits,
  type ThroughputKind,
  throttledResource,
  throttlingReason,
  writeUnits,
} from './capacity.ts';
import { MinHeap } from './heap.ts';
import { type Cursor, SortedList } from './sorted-list.ts';

const require = createRequire(import.meta.url);

// biome-ignore lint/suspicious/noExplicitAny: dynalite is untyped JavaScript.
type Expression = any;
export type AttributeValue = Record<string, unknown>;
export type AttributeMap = Record<string, AttributeValue>;

const validations = require('dynalite/validations/index.js') as {
  validateExpressions(data: Record<string, unknown>): string | undefined;
};
const dynaliteDb = require('dynalite/db/index.js') as {
  matchesExprFilter(item: AttributeMap, expr: Expression): boolean;
  itemSize(item: AttributeMap): number;
};

/** DynamoDB's item size limit (400 KB, counted as dynalite and AWS count attribute sizes). */
export const MAX_ITEM_BYTES = 409_600;
/** A Query or Scan page stops after this much data. */
const MAX_PAGE_BYTES = 1_048_576;
const MAX_BATCH_GET_KEYS = 100;
const MAX_BATCH_STATEMENTS = 25;

/** A refusal in DynamoDB's terms: the error type AWS sends and the HTTP status. */
export class DynamoDbError extends Error {
  readonly type: string;
  readonly status: number;
  readonly extra: Record<string, unknown>;
  constructor(type: string, message: string, extra: Record<string, unknown> = {}, status = 400) {
    super(message);
    this.name = type;
    this.type = type;
    this.status = status;
    this.extra = extra;
  }

  /** The `__type` AWS puts in the body (validation errors live in another namespace). */
  get wireType(): string {
    return this.type === 'ValidationException'
      ? 'com.amazon.coral.validate#ValidationException'
      : `com.amazonaws.dynamodb.v20120810#${this.type}`;
  }
}

export interface DynamoDbBehaviour {
  readonly random: () => number;
  readonly now: () => number;
  /** Mean index lag in ms (exponentially distributed per write; 0: indexes are immediate). */
  readonly indexLagMs: number;
  /** Most an eventually consistent read lags the table, ms. */
  readonly eventualLagMs: number;
  /**
   * Chance that a BatchGetItem call leaves some of its keys unprocessed, and that a
   * BatchExecuteStatement call answers some of its statements throttled.
   */
  readonly unprocessedRate: number;
  /**
   * Per-partition throughput limits (DYNAMODB_PARTITION_LIMITS as AWS documents them); undefined:
   * none (units are still counted). `throughput.limits` can change them during a run.
   */
  readonly partitionLimits?: PartitionLimits | undefined;
}

interface Version {
  /** The item after this write; undefined after a delete. */
  readonly item: AttributeMap | undefined;
  readonly appliedAtMs: number;
  /** When this version reaches the indexes. */
  readonly indexedAtMs: number;
}

interface Table {
  readonly name: string;
  readonly definition: TableDefinition;
  readonly items: Map<string, Version[]>;
  /** Each global secondary index as it stands (writes reach it through `indexing`). */
  readonly indexes: Map<string, IndexState>;
  /** Writes not yet applied to the indexes, by when they reach them (then write order). */
  readonly indexing: MinHeap<PendingIndexWrite>;
  /**
   * With no index lag, writes in write order, applied together at the next index read: what a
   * read sees is the same, and a million writes with no read between them (the flood's backlog)
   * are sorted into the indexes at once instead of one binary search and splice each.
   */
  unindexed: PendingIndexWrite[];
}

/** One index entry: the item projected as the index projects it, and where it sorts. */
interface IndexEntry {
  readonly sort: AttributeValue | undefined;
  /** The sort key's string when code unit order is its byte order (no surrogates). */
  readonly sortText: string | undefined;
  /** The item's table key (JSON), the last tie-break of the order. */
  readonly tableKey: string;
  readonly projected: AttributeMap;
  /** Its size as a page counts it, once computed (entries never change). */
  bytes?: number;
}

interface IndexState {
  readonly definition: IndexDefinition;
  readonly projected: readonly string[];
  /** Entries by partition (the partition key value as JSON), in index order. */
  readonly partitions: Map<string, SortedList<IndexEntry>>;
  /** Each item's current entry and its partition, by table key. */
  readonly entryOf: Map<string, { partition: string; entry: IndexEntry }>;
}

interface PendingIndexWrite {
  readonly atMs: number;
  readonly seq: number;
  readonly key: string;
  readonly item: AttributeMap | undefined;
}

const byIndexTime = (a: PendingIndexWrite, b: PendingIndexWrite) =>
  a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
const compareEntries = (a: IndexEntry, b: IndexEntry) => {
  if (a.sortText !== undefined && b.sortText !== undefined) {
    if (a.sortText !== b.sortText) return a.sortText < b.sortText ? -1 : 1;
  } else {
    const bySort = compareValues(a.sort, b.sort);
    if (bySort !== 0) return bySort;
  }
  return a.tableKey < b.tableKey ? -1 : a.tableKey > b.tableKey ? 1 : 0;
};
/** A string sort value that sorts by code units exactly as DynamoDB sorts its bytes. */
const SURROGATE = /[\uD800-\uDFFF]/;
const sortTextOf = (value: AttributeValue | undefined): string | undefined =>
  value && typeof value.S === 'string' && !SURROGATE.test(value.S) ? value.S : undefined;

/** Interning of stored values: strings and numbers up to this long, this many distinct ones. */
const INTERN_MAX_CHARS = 40;
const INTERN_LIMIT = 100_000;

/** Parsed expressions by request text: the same condition is parsed once, not per call. */
const PARSE_CACHE_LIMIT = 20_000;

/** Versions kept per item beyond the newest: enough for any lag the behaviour allows. */
const HISTORY_MS = 600_000;

export class InMemoryDynamoDb {
  readonly #tables = new Map<string, Table>();
  readonly #behaviour: DynamoDbBehaviour;
  /** Every applied write, for the checker: table, key, the item after it (undefined: deleted). */
  readonly writes: { tableName: string; atMs: number; item: AttributeMap | undefined }[] = [];
  /** Record applied writes in `writes` (the chaos driver turns it on for the tasks table). */
  recordTables = new Set<string>();
  /** Told of every applied write (a run that keeps no history but measures as it goes). */
  onWrite: ((tableName: string, atMs: number, item: AttributeMap | undefined) => void) | undefined;
  #writeSeq = 0;
  /** Shared stored values by their string (S) and number (N) text. */
  readonly #internedStrings = new Map<string, AttributeValue>();
  readonly #internedNumbers = new Map<string, AttributeValue>();
  readonly #parsed = new Map<string, Record<string, unknown>>();
  /** Units consumed and requests throttled, per table, index and partition key value. */
  readonly throughput: PartitionThroughput;

  constructor(tables: readonly { name: string; definition: TableDefinition }[], behaviour: DynamoDbBehaviour) {
    for (const { name, definition } of tables) {
      const indexes = new Map<string, IndexState>();
      for (const index of definition.indexes) {
        const projected = [
          definition.partitionKey,
          ...(definition.sortKey ? [definition.sortKey] : []),
          index.partitionKey,
          ...(index.sortKey ? [index.sortKey] : []),
          ...index.nonKeyAttributes,
        ];
        indexes.set(index.indexName, { definition: index, projected, partitions: new Map(), entryOf: new Map() });
      }
      this.#tables.set(name, {
        name,
        definition,
        items: new Map(),
        indexes,
        indexing: new MinHeap(byIndexTime),
        unindexed: [],
      });
    }
    this.#behaviour = behaviour;
    this.throughput = new PartitionThroughput(behaviour.partitionLimits, behaviour.now);
  }

  /** Answer one operation (`target` is the X-Amz-Target operation name). */
  handle(operation: string, input: Record<string, unknown>): Record<string, unknown> {
    switch (operation) {
      case 'PutItem':
        return this.#putItem(input);
      case 'BatchExecuteStatement':
        return this.#batchExecuteStatement(input);
      case 'DeleteItem':
        return this.#deleteItem(input);
      case 'UpdateItem':
        return this.#updateItem(input);
      case 'GetItem':
        return this.#getItem(input);
      case 'BatchGetItem':
        return this.#batchGetItem(input);
      case 'Query':
        return this.#query(input);
      case 'Scan':
        return this.#scan(input);
      default:
        throw new DynamoDbError('UnknownOperationException', `The simulated DynamoDB does not implement ${operation}`);
    }
  }

  /** The newest version of every item of a table (what a consistent scan would see). */
  items(tableName: string): AttributeMap[] {
    const table = this.#table(tableName);
    const items: AttributeMap[] = [];
    for (const versions of table.items.values()) {
      const item = versions.at(-1)?.item;
      if (item) items.push(item);
    }
    return items;
  }

  /** The newest version of one item (what a consistent read sees), by its key attributes. */
  item(tableName: string, key: AttributeMap): AttributeMap | undefined {
    const table = this.#table(tableName);
    return this.#latest(table, this.#keyOf(table, key));
  }

  #table(name: unknown): Table {
    const table = this.#tables.get(String(name));
    if (!table) throw new DynamoDbError('ResourceNotFoundException', `Requested resource not found: Table: ${name}`);
    return table;
  }

  #keyOf(table: Table, item: AttributeMap): string {
    const { partitionKey, sortKey } = table.definition;
    const pk = item[partitionKey];
    if (!pk) throw new DynamoDbError('ValidationException', 'One of the required keys was not given a value');
    return JSON.stringify(sortKey ? [pk, item[sortKey]] : [pk]);
  }

  #parse(input: Record<string, unknown>): Record<string, unknown> {
    // The parse depends only on the expressions, names and values (not the item), and its
    // result is only read: requests with the same text share one parse.
    const cacheKey = JSON.stringify([
      input.ConditionExpression,
      input.KeyConditionExpression,
      input.FilterExpression,
      input.ProjectionExpression,
      input.UpdateExpression,
      input.ExpressionAttributeNames,
      input.ExpressionAttributeValues,
    ]);
    let parsed = this.#parsed.get(cacheKey);
    if (!parsed) {
      const data = { ...input };
      const problem = validations.validateExpressions(data);
      if (problem) throw new DynamoDbError('ValidationException', problem);
      const { _condition, _keyCondition, _filter, _projection, _updates } = data;
      parsed = { _condition, _keyCondition, _filter, _projection, _updates };
      if (this.#parsed.size >= PARSE_CACHE_LIMIT) this.#parsed.clear();
      this.#parsed.set(cacheKey, parsed);
    }
    return { ...input, ...parsed };
  }

  #latest(table: Table, key: string): AttributeMap | undefined {
    return table.items.get(key)?.at(-1)?.item;
  }

  /** The item as an eventually consistent read may see it: as of a moment up to the lag ago. */
  #eventual(table: Table, key: string): AttributeMap | undefined {
    const versions = table.items.get(key);
    if (!versions) return undefined;
    const asOf = this.#behaviour.now() - this.#behaviour.random() * this.#behaviour.eventualLagMs;
    for (let i = versions.length - 1; i >= 0; i--) {
      if (versions[i]!.appliedAtMs <= asOf) return versions[i]!.item;
    }
    return undefined;
  }

  #write(table: Table, key: string, item: AttributeMap | undefined): void {
    const nowMs = this.#behaviour.now();
    const versions = table.items.get(key) ?? [];
    const previous = versions.at(-1);
    const lag =
      this.#behaviour.indexLagMs > 0 ? -Math.log(1 - this.#behaviour.random()) * this.#behaviour.indexLagMs : 0;
    // An index applies one item's updates in order: a later write never overtakes an earlier one.
    const indexedAtMs = Math.max(previous?.indexedAtMs ?? 0, nowMs + lag);
    versions.push({ item, appliedAtMs: nowMs, indexedAtMs });
    // Forget versions no read can see any more (older than the history and superseded).
    while (versions.length > 2 && versions[1]!.indexedAtMs < nowMs - HISTORY_MS) versions.shift();
    table.items.set(key, versions);
    if (table.indexes.size > 0) {
      const pending: PendingIndexWrite = { atMs: indexedAtMs, seq: this.#writeSeq++, key, item };
      // Without lag every write is due at once, in write order: the next index read applies it.
      if (this.#behaviour.indexLagMs === 0) table.unindexed.push(pending);
      // Nothing ahead of it and due now: straight in.
      else if (table.indexing.size === 0 && indexedAtMs <= nowMs) this.#index(table, [pending]);
      else table.indexing.push(pending);
    }
    if (this.recordTables.has(table.name)) this.writes.push({ tableName: table.name, atMs: nowMs, item });
    this.onWrite?.(table.name, nowMs, item);
  }

  /**
   * The item to store: a new top-level map whose short scalar values are shared with earlier
   * items that hold the same (state, tenant, timestamps…), so a million stored tasks fit in
   * memory. Stored values are never modified (writes replace whole items; answers are
   * serialised or unmarshalled, never handed out to be changed).
   */
  #interned(item: AttributeMap): AttributeMap {
    const stored: AttributeMap = {};
    for (const name in item) {
      const value = item[name]!;
      const isString = value.S !== undefined;
      const scalar = isString ? value.S : value.N;
      if (typeof scalar !== 'string' || scalar.length > INTERN_MAX_CHARS) {
        stored[name] = value;
        continue;
      }
      const interned = isString ? this.#internedStrings : this.#internedNumbers;
      let shared = interned.get(scalar);
      if (!shared) {
        shared = value;
        if (this.#internedStrings.size + this.#internedNumbers.size < INTERN_LIMIT) interned.set(scalar, value);
      }
      stored[name] = shared;
    }
    return stored;
  }

  /**
   * What a write draws on (sim/aws/capacity.ts): first the table's partition (the larger of the
   * item before and after), then each index entry it adds, removes, moves or changes.
   */
  #writeCharges(
    table: Table,
    before: AttributeMap | undefined,
    after: AttributeMap | undefined,
    key?: AttributeMap,
  ): PartitionCharge[] {
    const { partitionKey } = table.definition;
    const size = (item: AttributeMap | undefined) => (item ? dynaliteDb.itemSize(item) : 0);
    const charges: PartitionCharge[] = [
      {
        key: keyText((after ?? before ?? key)![partitionKey]!),
        units: writeUnits(Math.max(size(before), size(after))),
      },
    ];
    for (const index of table.indexes.values()) {
      const old = before && projectEntry(index, before);
      const next = after && projectEntry(index, after);
      if (!old && !next) continue;
      const indexName = index.definition.indexName;
      const { partitionKey: indexKey, sortKey } = index.definition;
      const partitionOf = (entry: AttributeMap) => keyText(entry[indexKey]!);
      if (
        old &&
        next &&
        sameValue(old[indexKey], next[indexKey]) &&
        (!sortKey || sameValue(old[sortKey], next[sortKey]))
      ) {
        // The entry stays where it is: one write if what it projects changed, none otherwise.
        if (!sameEntry(old, next)) {
          charges.push({
            index: indexName,
            key: partitionOf(next),
            units: writeUnits(Math.max(size(old), size(next))),
          });
        }
        continue;
      }
      if (old) charges.push({ index: indexName, key: partitionOf(old), units: writeUnits(size(old)) });
      if (next) charges.push({ index: indexName, key: partitionOf(next), units: writeUnits(size(next)) });
    }
    return charges;
  }

  /** A single-item read (GetItem, one key of a BatchGetItem): at least one unit, also when missing. */
  #itemReadCharge(
    table: Table,
    key: AttributeMap,
    item: AttributeMap | undefined,
    consistent: boolean,
  ): PartitionCharge {
    const partitionValue = key[table.definition.partitionKey];
    if (!partitionValue)
      throw new DynamoDbError('ValidationException', 'One of the required keys was not given a value');
    return { key: keyText(partitionValue), units: readUnits(item ? dynaliteDb.itemSize(item) : 0, consistent) };
  }

  /** Take the units, or refuse the whole request as AWS does when a partition is over its limit. */
  #admit(table: Table, kind: ThroughputKind, charges: readonly PartitionCharge[]): void {
    const blocked = this.throughput.admit(table.name, kind, charges);
    if (blocked) this.#throttle(table, kind, blocked);
  }

  #throttle(table: Table, kind: ThroughputKind, charge: PartitionCharge): never {
    throw new DynamoDbError('ProvisionedThroughputExceededException', HOT_PARTITION_MESSAGE, {
      ThrottlingReasons: [
        { reason: throttlingReason(kind, charge.index), resource: throttledResource(table.name, charge.index) },
      ],
    });
  }

  #conditionFails(data: Record<string, unknown>, existing: AttributeMap | undefined): boolean {
    return (
      data._condition !== undefined && !dynaliteDb.matchesExprFilter(existing ?? {}, expressionOf(data._condition))
    );
  }

  #putItem(input: Record<string, unknown>): Record<string, unknown> {
    const data = this.#parse(input);
    const table = this.#table(data.TableName);
    const item = data.Item as AttributeMap;
    if (dynaliteDb.itemSize(item) > MAX_ITEM_BYTES) {
      throw new DynamoDbError('ValidationException', 'Item size has exceeded the maximum allowed size');
    }
    const key = this.#keyOf(table, item);
    const existing = this.#latest(table, key);
    const charges = this.#writeCharges(table, existing, item);
    if (this.#conditionFails(data, existing)) {
      // A failed condition still pays the table's write units (it is checked in the partition).
      this.#admit(table, 'write', charges.slice(0, 1));
      const returnOld = data.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && existing;
      throw new DynamoDbError(
        'ConditionalCheckFailedException',
        'The conditional request failed',
        returnOld ? { Item: existing } : {},
      );
    }
    this.#admit(table, 'write', charges);
    this.#write(table, key, this.#interned(item));
    return data.ReturnValues === 'ALL_OLD' && existing ? { Attributes: existing } : {};
  }

  /**
   * BatchExecuteStatement of PartiQL INSERTs in the one shape the runtime sends
   * (adapters/partiql-insert.ts: a batch's task creates, adapters/task-store.ts `createMany`);
   * any other statement, more than 25, or two on one item refuse the request. Each INSERT on its
   * own: an item whose key exists is not written and answers `DuplicateItem` (with the item when
   * ALL_OLD), paying the table's write units as a failed conditional put does; an item refused
   * answers `ValidationError`; a statement over its partition's throughput, or drawn by
   * `unprocessedRate`, answers `ProvisionedThroughputExceeded`, not applied. Only when every
   * statement was refused for throughput is the whole call throttled (as BatchGetItem).
   */
  #batchExecuteStatement(input: Record<string, unknown>): Record<string, unknown> {
    const statements = input.Statements as
      | { Statement?: unknown; Parameters?: AttributeValue[]; ReturnValuesOnConditionCheckFailure?: unknown }[]
      | undefined;
    if (!Array.isArray(statements) || statements.length === 0 || statements.length > MAX_BATCH_STATEMENTS) {
      throw new DynamoDbError('ValidationException', `Statements must hold 1 to ${MAX_BATCH_STATEMENTS} statements`);
    }
    const seen = new Set<string>();
    const inserts = statements.map((request, index) => {
      const parsed = parseInsert<AttributeValue>(request.Statement, request.Parameters);
      if ('error' in parsed) throw new DynamoDbError('ValidationException', `Statements[${index}]: ${parsed.error}`);
      const table = this.#table(parsed.tableName);
      let key: string | undefined;
      try {
        key = this.#keyOf(table, parsed.item);
      } catch (error) {
        if (!(error instanceof DynamoDbError)) throw error;
      }
      if (key !== undefined) {
        if (seen.has(`${table.name}\u0000${key}`)) {
          throw new DynamoDbError('ValidationException', 'Provided list of item keys contains duplicates');
        }
        seen.add(`${table.name}\u0000${key}`);
      }
      return {
        table,
        item: parsed.item as AttributeMap,
        key,
        returnOld: request.ReturnValuesOnConditionCheckFailure === 'ALL_OLD',
      };
    });
    // Throttled statements drawn for the fault model: a random tail of the batch.
    let applied = inserts.length;
    if (inserts.length > 1 && this.#behaviour.random() < this.#behaviour.unprocessedRate) {
      applied = 1 + Math.floor(this.#behaviour.random() * (inserts.length - 1));
    }
    let throttled: { table: Table; charge: PartitionCharge } | undefined;
    let throttledStatements = 0;
    const throughputError = { Code: 'ProvisionedThroughputExceeded', Message: HOT_PARTITION_MESSAGE };
    const responses = inserts.map(({ table, item, key, returnOld }, i) => {
      const TableName = table.name;
      if (i >= applied) {
        throttledStatements++;
        return { TableName, Error: throughputError };
      }
      if (key === undefined || dynaliteDb.itemSize(item) > MAX_ITEM_BYTES) {
        return { TableName, Error: { Code: 'ValidationError', Message: 'One or more parameter values were invalid' } };
      }
      const existing = this.#latest(table, key);
      const charges = this.#writeCharges(table, existing, item);
      const blocked = this.throughput.admit(table.name, 'write', existing ? charges.slice(0, 1) : charges);
      if (blocked) {
        throttled ??= { table, charge: blocked };
        throttledStatements++;
        return { TableName, Error: throughputError };
      }
      if (existing) {
        return {
          TableName,
          Error: {
            Code: 'DuplicateItem',
            Message: 'Duplicate primary key exists in table',
            ...(returnOld ? { Item: existing } : {}),
          },
        };
      }
      this.#write(table, key, this.#interned(item));
      return { TableName };
    });
    if (throttled && throttledStatements === inserts.length) this.#throttle(throttled.table, 'write', throttled.charge);
    return { Responses: responses };
  }

  /**
   * UpdateItem with top-level `SET a = :v`, `ADD a :set-or-number` and `REMOVE a` (what the
   * runtime sends: the batch counters' set ADDs, core/batch.ts). Anything else is refused, so a
   * new use has to be simulated before it is relied on.
   */
  #updateItem(input: Record<string, unknown>): Record<string, unknown> {
    const data = this.#parse(input);
    const table = this.#table(data.TableName);
    const keyItem = data.Key as AttributeMap;
    const key = this.#keyOf(table, keyItem);
    const existing = this.#latest(table, key);
    const item: AttributeMap = structuredClone(existing ?? keyItem);
    const sections = ((data._updates as { sections?: unknown[] } | undefined)?.sections ?? []) as {
      type: string;
      path: unknown[];
      val?: AttributeValue & { type?: unknown };
      attrType?: string;
    }[];
    for (const section of sections) {
      const [attr, ...rest] = section.path;
      if (typeof attr !== 'string' || rest.length > 0) {
        throw new DynamoDbError('ValidationException', 'The simulation updates top-level attributes only');
      }
      if (section.type === 'remove') delete item[attr];
      else if (section.type === 'set') {
        if (!section.val || section.val.type !== undefined) {
          throw new DynamoDbError('ValidationException', 'The simulation SETs plain values only');
        }
        item[attr] = structuredClone(section.val);
      } else if (section.type === 'add') {
        const type = section.attrType!;
        const current = item[attr];
        if (current && !(type in current)) {
          throw new DynamoDbError(
            'ValidationException',
            'An operand in the update expression has an incorrect data type',
          );
        }
        if (type === 'N') item[attr] = { N: String(Number(current?.N ?? 0) + Number(section.val!.N)) };
        else {
          const have = (current?.[type] as string[] | undefined) ?? [];
          const more = (section.val![type] as string[]).filter((value) => !have.includes(value));
          item[attr] = { [type]: [...have, ...more] };
        }
      } else {
        throw new DynamoDbError('ValidationException', `The simulation does not ${section.type.toUpperCase()}`);
      }
    }
    if (dynaliteDb.itemSize(item) > MAX_ITEM_BYTES) {
      throw new DynamoDbError('ValidationException', 'Item size to update has exceeded the maximum allowed size');
    }
    const charges = this.#writeCharges(table, existing, item);
    if (this.#conditionFails(data, existing)) {
      this.#admit(table, 'write', charges.slice(0, 1));
      throw new DynamoDbError('ConditionalCheckFailedException', 'The conditional request failed');
    }
    this.#admit(table, 'write', charges);
    this.#write(table, key, this.#interned(item));
    if (data.ReturnValues === 'ALL_NEW') return { Attributes: item };
    return data.ReturnValues === 'ALL_OLD' && existing ? { Attributes: existing } : {};
  }

  #deleteItem(input: Record<string, unknown>): Record<string, unknown> {
    const data = this.#parse(input);
    const table = this.#table(data.TableName);
    const key = this.#keyOf(table, data.Key as AttributeMap);
    const existing = this.#latest(table, key);
    const charges = this.#writeCharges(table, existing, undefined, data.Key as AttributeMap);
    if (this.#conditionFails(data, existing)) {
      this.#admit(table, 'write', charges.slice(0, 1));
      throw new DynamoDbError('ConditionalCheckFailedException', 'The conditional request failed');
    }
    this.#admit(table, 'write', charges);
    if (existing) this.#write(table, key, undefined);
    return data.ReturnValues === 'ALL_OLD' && existing ? { Attributes: existing } : {};
  }

  #getItem(input: Record<string, unknown>): Record<string, unknown> {
    const table = this.#table(input.TableName);
    const key = this.#keyOf(table, input.Key as AttributeMap);
    const consistent = input.ConsistentRead === true;
    const item = consistent ? this.#latest(table, key) : this.#eventual(table, key);
    this.#admit(table, 'read', [this.#itemReadCharge(table, input.Key as AttributeMap, item, consistent)]);
    return item ? { Item: item } : {};
  }

  #batchGetItem(input: Record<string, unknown>): Record<string, unknown> {
    const requests = input.RequestItems as Record<string, { Keys: AttributeMap[]; ConsistentRead?: boolean }>;
    const all = Object.entries(requests).flatMap(([name, request]) =>
      request.Keys.map((key) => ({ name, key, consistent: request.ConsistentRead === true })),
    );
    if (all.length > MAX_BATCH_GET_KEYS) {
      throw new DynamoDbError('ValidationException', 'Too many items requested for the BatchGetItem call');
    }
    const seen = new Set<string>();
    for (const { name, key } of all) {
      const id = `${name}\u0000${this.#keyOf(this.#table(name), key)}`;
      if (seen.has(id))
        throw new DynamoDbError('ValidationException', 'Provided list of item keys contains duplicates');
      seen.add(id);
    }
    // Throughput or the 16 MB response limit: AWS answers part and returns the rest to retry.
    let processed = all.length;
    if (all.length > 1 && this.#behaviour.random() < this.#behaviour.unprocessedRate) {
      processed = 1 + Math.floor(this.#behaviour.random() * (all.length - 1));
    }
    const responses: Record<string, AttributeMap[]> = {};
    const unprocessed: Record<string, { Keys: AttributeMap[]; ConsistentRead?: boolean }> = {};
    const leaveUnprocessed = (name: string, key: AttributeMap, consistent: boolean) => {
      const entry = unprocessed[name] ?? { Keys: [], ...(consistent ? { ConsistentRead: true } : {}) };
      entry.Keys.push(key);
      unprocessed[name] = entry;
    };
    // Each key is its own read in its own partition: a hot partition leaves its keys unprocessed;
    // only when every key was refused for throughput is the whole call throttled.
    let throttled: { table: Table; charge: PartitionCharge } | undefined;
    let throttledKeys = 0;
    all.forEach(({ name, key, consistent }, i) => {
      const table = this.#table(name);
      if (i >= processed) {
        leaveUnprocessed(name, key, consistent);
        return;
      }
      const id = this.#keyOf(table, key);
      const item = consistent ? this.#latest(table, id) : this.#eventual(table, id);
      const blocked = this.throughput.admit(table.name, 'read', [this.#itemReadCharge(table, key, item, consistent)]);
      if (blocked) {
        throttled ??= { table, charge: blocked };
        throttledKeys++;
        leaveUnprocessed(name, key, consistent);
        return;
      }
      responses[name] ??= [];
      if (item) responses[name].push(item);
    });
    if (throttled && throttledKeys === all.length) this.#throttle(throttled.table, 'read', throttled.charge);
    return { Responses: responses, UnprocessedKeys: unprocessed };
  }

  #query(input: Record<string, unknown>): Record<string, unknown> {
    const data = this.#parse(input);
    const table = this.#table(data.TableName);
    const indexName = data.IndexName as string | undefined;
    const index = indexName ? table.definition.indexes.find((i) => i.indexName === indexName) : undefined;
    if (indexName && !index) {
      throw new DynamoDbError('ValidationException', `The table does not have the specified index: ${indexName}`);
    }
    if (index && data.ConsistentRead === true) {
      throw new DynamoDbError('ValidationException', 'Consistent reads are not supported on global secondary indexes');
    }
    if (!data._keyCondition) throw new DynamoDbError('ValidationException', 'KeyConditionExpression is required');
    const keys = index ?? table.definition;
    const partition = partitionEquality(expressionOf(data._keyCondition), keys.partitionKey);
    if (!partition) throw new DynamoDbError('ValidationException', 'Query condition missed key schema element');
    let page: Page;
    if (index) page = this.#queryIndex(table, this.#indexState(table, index.indexName), data);
    else {
      const entries = this.#tableEntries(table, data.ConsistentRead === true);
      const matching = entries.filter((entry) => dynaliteDb.matchesExprFilter(entry, expressionOf(data._keyCondition)));
      page = this.#page(table, keys, matching, data);
    }
    // One partition: the bytes read (before the filter) rounded up once, at least one unit.
    const consistent = data.ConsistentRead === true;
    this.#admit(table, 'read', [
      { index: index?.indexName, key: keyText(partition), units: readUnits(page.bytes, consistent) },
    ]);
    return page.result;
  }

  #scan(input: Record<string, unknown>): Record<string, unknown> {
    const data = this.#parse(input);
    const table = this.#table(data.TableName);
    const indexName = data.IndexName as string | undefined;
    if (indexName) {
      const index = table.definition.indexes.find((i) => i.indexName === indexName);
      if (!index) {
        throw new DynamoDbError('ValidationException', `The table does not have the specified index: ${indexName}`);
      }
      if (data.ConsistentRead === true) {
        throw new DynamoDbError(
          'ValidationException',
          'Consistent reads are not supported on global secondary indexes',
        );
      }
      const page = this.#scanIndex(table, this.#indexState(table, index.indexName), data);
      this.#admit(table, 'read', scanCharges(page.evaluated, index, false));
      return page.result;
    }
    const consistent = data.ConsistentRead === true;
    const page = this.#page(table, table.definition, this.#tableEntries(table, consistent), data);
    this.#admit(table, 'read', scanCharges(page.evaluated, table.definition, consistent));
    return page.result;
  }

  /**
   * A Scan of an index: its entries as the index stands (so with its lag, and sparse: only items
   * carrying its keys), partition after partition (AWS's order is by a hash of the partition key;
   * here the partitions' ids, as stable), each in index order, resumed after ExclusiveStartKey;
   * then Limit, the 1 MB page and the filter.
   */
  #scanIndex(table: Table, index: IndexState, data: Record<string, unknown>): Page {
    const { definition } = index;
    const start = data.ExclusiveStartKey as AttributeMap | undefined;
    const startPartition = start?.[definition.partitionKey]
      ? partitionIdOf(start[definition.partitionKey]!)
      : undefined;
    let startEntry: IndexEntry | undefined;
    if (start) {
      const startSort = definition.sortKey ? start[definition.sortKey] : undefined;
      startEntry = {
        sort: startSort,
        sortText: sortTextOf(startSort),
        tableKey: this.#keyOf(table, start),
        projected: start,
      };
    }
    const ids = [...index.partitions.keys()]
      .sort()
      .filter((id) => startPartition === undefined || id >= startPartition);
    const limit = typeof data.Limit === 'number' ? data.Limit : Number.POSITIVE_INFINITY;
    const evaluated: AttributeMap[] = [];
    let bytes = 0;
    let last: AttributeMap | undefined;
    let more = false;
    scan: for (const id of ids) {
      const partition = index.partitions.get(id)!;
      let cursor =
        startEntry && id === startPartition
          ? partition.firstWhere((entry) => compareEntries(entry, startEntry) > 0)
          : partition.firstWhere(() => true);
      for (
        let entry = partition.at(cursor);
        entry;
        cursor = partition.step(cursor, true), entry = partition.at(cursor)
      ) {
        if (evaluated.length >= limit || bytes >= MAX_PAGE_BYTES) {
          more = true;
          break scan;
        }
        evaluated.push(entry.projected);
        entry.bytes ??= dynaliteDb.itemSize(entry.projected);
        bytes += entry.bytes;
        last = entry.projected;
      }
    }
    return { result: this.#pageResult(table, definition, evaluated, more, last, data), evaluated, bytes };
  }

  #tableEntries(table: Table, consistent: boolean): AttributeMap[] {
    const entries: AttributeMap[] = [];
    for (const key of table.items.keys()) {
      const item = consistent ? this.#latest(table, key) : this.#eventual(table, key);
      if (item) entries.push(item);
    }
    return entries;
  }

  #indexState(table: Table, indexName: string): IndexState {
    const nowMs = this.#behaviour.now();
    // Apply every write that has reached the indexes by now, in the order it reaches them.
    const due = table.unindexed;
    table.unindexed = [];
    for (let next = table.indexing.peek(); next && next.atMs <= nowMs; next = table.indexing.peek()) {
      due.push(table.indexing.pop()!);
    }
    if (due.length > 0) this.#index(table, due);
    return table.indexes.get(indexName)!;
  }

  /**
   * Writes reach every index of their table, in order: each item's entry moves, appears or goes.
   * Only an item's last write in the batch decides where its entry ends up, so the batch is
   * applied as one set of removals and one of additions per partition (SortedList applies a
   * large set by merging, a small one entry by entry).
   */
  #index(table: Table, writes: readonly PendingIndexWrite[]): void {
    const lastWrite = new Map<string, AttributeMap | undefined>();
    for (const write of writes) lastWrite.set(write.key, write.item);
    for (const index of table.indexes.values()) {
      const { definition } = index;
      const removals = new Map<string, IndexEntry[]>();
      const additions = new Map<string, IndexEntry[]>();
      const add = (to: Map<string, IndexEntry[]>, partition: string, entry: IndexEntry) => {
        const entries = to.get(partition);
        if (entries) entries.push(entry);
        else to.set(partition, [entry]);
      };
      for (const [key, item] of lastWrite) {
        const old = index.entryOf.get(key);
        if (old) {
          add(removals, old.partition, old.entry);
          index.entryOf.delete(key);
        }
        const projected = projectEntry(index, item);
        if (!projected) continue;
        const sort = definition.sortKey ? projected[definition.sortKey] : undefined;
        const entry: IndexEntry = { sort, sortText: sortTextOf(sort), tableKey: key, projected };
        const partition = partitionIdOf(projected[definition.partitionKey]!);
        add(additions, partition, entry);
        index.entryOf.set(key, { partition, entry });
      }
      for (const [id, entries] of removals) {
        const partition = index.partitions.get(id)!;
        partition.deleteAll(entries);
        if (partition.size === 0) index.partitions.delete(id);
      }
      for (const [id, entries] of additions) {
        let partition = index.partitions.get(id);
        if (!partition) {
          partition = new SortedList(compareEntries);
          index.partitions.set(id, partition);
        }
        partition.insertAll(entries);
      }
    }
  }

  /**
   * A Query of an index: the key condition's partition, the range its sort-key condition allows
   * (found by binary search), resumed after ExclusiveStartKey; then Limit, the 1 MB page and the
   * filter, as #page does for a sorted list of every match.
   */
  #queryIndex(table: Table, index: IndexState, data: Record<string, unknown>): Page {
    const { definition } = index;
    const keyCondition = expressionOf(data._keyCondition);
    const conditions: Expression[] = [];
    const flatten = (condition: Expression) => {
      if (condition?.type === 'and') for (const part of condition.args) flatten(part);
      else conditions.push(condition);
    };
    flatten(keyCondition);
    const onAttribute = (condition: Expression, name: string) =>
      Array.isArray(condition?.args?.[0]) && condition.args[0].length === 1 && condition.args[0][0] === name;
    const partitionCondition = conditions.find(
      (condition: Expression) => condition?.type === '=' && onAttribute(condition, definition.partitionKey),
    );
    if (!partitionCondition) {
      throw new DynamoDbError('ValidationException', 'Query condition missed key schema element');
    }
    const sortCondition = definition.sortKey
      ? conditions.find(
          (condition: Expression) => condition !== partitionCondition && onAttribute(condition, definition.sortKey!),
        )
      : undefined;
    const partition = index.partitions.get(partitionIdOf(partitionCondition.args[1]));
    const forward = data.ScanIndexForward !== false;
    const empty: Record<string, unknown> = { Count: 0, ScannedCount: 0 };
    if (data.Select !== 'COUNT') empty.Items = [];
    if (!partition) return { result: empty, evaluated: [], bytes: 0 };

    // Where each entry lies against the sort-key condition: below it, in it, or above it.
    const { below, above, exact } = sortRange(sortCondition);
    const first = partition.firstWhere((entry) => !below(entry.sort));
    const pastLast = partition.firstWhere((entry) => above(entry.sort));
    let cursor = forward ? first : partition.step(pastLast, false);
    const inRange = (at: Cursor) => SortedList.order(at, first) >= 0 && SortedList.order(at, pastLast) < 0;
    const start = data.ExclusiveStartKey as AttributeMap | undefined;
    if (start) {
      const startSort = definition.sortKey ? start[definition.sortKey] : undefined;
      const startEntry: IndexEntry = {
        sort: startSort,
        sortText: sortTextOf(startSort),
        tableKey: this.#keyOf(table, start),
        projected: start,
      };
      const after = partition.firstWhere((entry) => compareEntries(entry, startEntry) > 0);
      const resume = forward
        ? after
        : partition.step(
            partition.firstWhere((entry) => compareEntries(entry, startEntry) >= 0),
            false,
          );
      if (forward ? SortedList.order(resume, cursor) > 0 : SortedList.order(resume, cursor) < 0) cursor = resume;
    }
    const limit = typeof data.Limit === 'number' ? data.Limit : Number.POSITIVE_INFINITY;
    const evaluated: AttributeMap[] = [];
    let bytes = 0;
    let last: AttributeMap | undefined;
    let more = false;
    for (; inRange(cursor); cursor = partition.step(cursor, forward)) {
      const entry = partition.at(cursor)!;
      // In range is a match when the range is exact; otherwise the condition decides.
      if (!exact && !dynaliteDb.matchesExprFilter(entry.projected, keyCondition)) continue;
      if (evaluated.length >= limit || bytes >= MAX_PAGE_BYTES) {
        more = true;
        break;
      }
      evaluated.push(entry.projected);
      entry.bytes ??= dynaliteDb.itemSize(entry.projected);
      bytes += entry.bytes;
      last = entry.projected;
    }
    return { result: this.#pageResult(table, definition, evaluated, more, last, data), evaluated, bytes };
  }

  /** Sort, resume after ExclusiveStartKey, apply Limit and the 1 MB page, then the filter. */
  #page(
    table: Table,
    keys: { partitionKey: string; sortKey?: string },
    entries: AttributeMap[],
    data: Record<string, unknown>,
  ): Page {
    const tableKey = (entry: AttributeMap) => this.#keyOf(table, entry);
    const order = (a: AttributeMap, b: AttributeMap) =>
      compareValues(a[keys.partitionKey], b[keys.partitionKey]) ||
      (keys.sortKey ? compareValues(a[keys.sortKey], b[keys.sortKey]) : 0) ||
      (tableKey(a) < tableKey(b) ? -1 : tableKey(a) > tableKey(b) ? 1 : 0);
    entries.sort(order);
    if (data.ScanIndexForward === false) entries.reverse();
    const start = data.ExclusiveStartKey as AttributeMap | undefined;
    let from = 0;
    if (start) {
      const direction = data.ScanIndexForward === false ? -1 : 1;
      from = entries.findIndex((entry) => order(entry, start) * direction > 0);
      if (from < 0) from = entries.length;
    }
    const limit = typeof data.Limit === 'number' ? data.Limit : Number.POSITIVE_INFINITY;
    const evaluated: AttributeMap[] = [];
    let bytes = 0;
    let last: AttributeMap | undefined;
    for (let i = from; i < entries.length && evaluated.length < limit && bytes < MAX_PAGE_BYTES; i++) {
      const entry = entries[i]!;
      evaluated.push(entry);
      bytes += dynaliteDb.itemSize(entry);
      last = entry;
    }
    const more = from + evaluated.length < entries.length;
    return { result: this.#pageResult(table, keys, evaluated, more, last, data), evaluated, bytes };
  }

  #pageResult(
    table: Table,
    keys: { partitionKey: string; sortKey?: string },
    evaluated: AttributeMap[],
    more: boolean,
    last: AttributeMap | undefined,
    data: Record<string, unknown>,
  ): Record<string, unknown> {
    const items = data._filter
      ? evaluated.filter((entry) => dynaliteDb.matchesExprFilter(entry, expressionOf(data._filter)))
      : evaluated;
    const result: Record<string, unknown> = { Count: items.length, ScannedCount: evaluated.length };
    if (data.Select !== 'COUNT') result.Items = items;
    if (more && last) {
      const lastKey: AttributeMap = {};
      const keyNames = [table.definition.partitionKey, table.definition.sortKey, keys.partitionKey, keys.sortKey];
      for (const name of keyNames) if (name && last[name] !== undefined) lastKey[name] = last[name];
      result.LastEvaluatedKey = lastKey;
    }
    return result;
  }
}

/** A page of a Query or Scan: the answer, the entries read (before the filter) and their bytes. */
interface Page {
  readonly result: Record<string, unknown>;
  readonly evaluated: AttributeMap[];
  readonly bytes: number;
}

/** The entry an item has in an index (its projection), or undefined: the index is sparse. */
function projectEntry(index: IndexState, item: AttributeMap | undefined): AttributeMap | undefined {
  const { partitionKey, sortKey } = index.definition;
  if (!item?.[partitionKey] || (sortKey && !item[sortKey])) return undefined;
  const projected: AttributeMap = {};
  for (const name of index.projected) if (item[name] !== undefined) projected[name] = item[name];
  return projected;
}

const sameValue = (a: AttributeValue | undefined, b: AttributeValue | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && JSON.stringify(a) === JSON.stringify(b));

/** Two projected entries with the same attributes and values. */
function sameEntry(a: AttributeMap, b: AttributeMap): boolean {
  const names = Object.keys(a);
  if (names.length !== Object.keys(b).length) return false;
  return names.every((name) => sameValue(a[name], b[name]));
}

/** A partition key value as a report shows it: the string or number as written. */
const keyText = (value: AttributeValue): string =>
  typeof value.S === 'string' ? value.S : typeof value.N === 'string' ? value.N : JSON.stringify(value);

/** A key condition's `partitionKey = value`: the value, or undefined when it has none. */
function partitionEquality(keyCondition: Expression, partitionKey: string): AttributeValue | undefined {
  const conditions: Expression[] = [];
  const flatten = (condition: Expression) => {
    if (condition?.type === 'and') for (const part of condition.args) flatten(part);
    else conditions.push(condition);
  };
  flatten(keyCondition);
  const match = conditions.find(
    (condition: Expression) =>
      condition?.type === '=' &&
      Array.isArray(condition.args?.[0]) &&
      condition.args[0].length === 1 &&
      condition.args[0][0] === partitionKey,
  );
  return match?.args[1] as AttributeValue | undefined;
}

/** A Scan's read units, spread over the partition key values it read (their share of the bytes). */
function scanCharges(evaluated: readonly AttributeMap[], keys: KeySchemaLike, consistent: boolean): PartitionCharge[] {
  const bytes = new Map<string, number>();
  for (const entry of evaluated) {
    const key = keyText(entry[keys.partitionKey]!);
    bytes.set(key, (bytes.get(key) ?? 0) + dynaliteDb.itemSize(entry));
  }
  const index = 'indexName' in keys ? (keys.indexName as string) : undefined;
  return [...bytes].map(([key, total]) => ({ index, key, units: (total / 4096) * (consistent ? 1 : 0.5) }));
}

type KeySchemaLike = { readonly partitionKey: string; readonly indexName?: string };

/** An index partition's id: `S` and a string key (the common case), any other value as JSON (`{…`). */
const partitionIdOf = (value: AttributeValue): string =>
  typeof value.S === 'string' ? `S${value.S}` : JSON.stringify(value);

/** dynalite's parse result holds the expression tree under `expression`. */
const expressionOf = (parsed: unknown): Expression => (parsed as { expression: Expression }).expression;

/**
 * The entries below and above a key condition's sort-key part (each false, then true, along the
 * index order... for `below`, true then false): =, <, <=, >, >=, BETWEEN and begins_with.
 */
function sortRange(condition: Expression | undefined): {
  below: (value: AttributeValue | undefined) => boolean;
  above: (value: AttributeValue | undefined) => boolean;
  /** Every entry between below and above matches (no need to evaluate the condition). */
  exact: boolean;
} {
  const never = () => false;
  if (!condition) return { below: never, above: never, exact: true };
  const [, bound, upper] = condition.args as [unknown, AttributeValue, AttributeValue | undefined];
  const cmp = (value: AttributeValue | undefined, to: AttributeValue) => compareValues(value, to);
  switch (condition.type) {
    case '=':
      return { below: (v) => cmp(v, bound) < 0, above: (v) => cmp(v, bound) > 0, exact: true };
    case '<':
      return { below: never, above: (v) => cmp(v, bound) >= 0, exact: true };
    case '<=':
      return { below: never, above: (v) => cmp(v, bound) > 0, exact: true };
    case '>':
      return { below: (v) => cmp(v, bound) <= 0, above: never, exact: true };
    case '>=':
      return { below: (v) => cmp(v, bound) < 0, above: never, exact: true };
    case 'between':
      return { below: (v) => cmp(v, bound) < 0, above: (v) => cmp(v, upper!) > 0, exact: true };
    case 'function':
      if (condition.name === 'begins_with') {
        const prefix = bound;
        const starts = (v: AttributeValue | undefined) =>
          v !== undefined && 'S' in v && 'S' in prefix && String(v.S).startsWith(String(prefix.S));
        return {
          below: (v) => cmp(v, prefix) < 0,
          above: (v) => cmp(v, prefix) > 0 && !starts(v),
          exact: 'S' in prefix,
        };
      }
      break;
  }
  // Anything else: no narrowing; the key condition is still checked on every entry.
  return { below: never, above: never, exact: false };
}

/** DynamoDB's order of scalar key values: numbers numerically, strings and binaries by bytes. */
function compareValues(a: AttributeValue | undefined, b: AttributeValue | undefined): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1;
  if ('N' in a && 'N' in b) return Number(a.N) - Number(b.N);
  if ('S' in a && 'S' in b) {
    const fast = compareStrings(String(a.S), String(b.S));
    if (fast !== undefined) return fast;
  }
  const left = Buffer.from(String(a.S ?? a.B ?? ''), 'S' in a ? 'utf8' : 'base64');
  const right = Buffer.from(String(b.S ?? b.B ?? ''), 'S' in b ? 'utf8' : 'base64');
  return Buffer.compare(left, right);
}

/**
 * Two strings in UTF-8 byte order without encoding them, when their first difference is between
 * two code units outside the surrogate range (there code unit order is code point order, which
 * is UTF-8 byte order); undefined otherwise (the caller compares the bytes).
 */
function compareStrings(a: string, b: string): number | undefined {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  let i = 0;
  while (i < length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === length) {
    // A lone surrogate at the end of the shorter one encodes as U+FFFD: compare the bytes.
    return i > 0 && a.charCodeAt(i - 1) >= 0xd800 && a.charCodeAt(i - 1) <= 0xdfff ? undefined : a.length - b.length;
  }
  const x = a.charCodeAt(i);
  const y = b.charCodeAt(i);
  const surrogate = (c: number) => c >= 0xd800 && c <= 0xdfff;
  return surrogate(x) || surrogate(y) ? undefined : x - y;
}
