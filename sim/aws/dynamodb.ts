/**
 * An in-memory DynamoDB that answers the JSON wire protocol (DynamoDB_20120810.*) the way AWS
 * documents it, including what the emulators never do:
 * - eventually consistent reads (GetItem, Scan, BatchGetItem without ConsistentRead) may return
 *   an item as it was up to `eventualLagMs` ago;
 * - global secondary indexes are updated asynchronously: each write reaches an index after its
 *   own lag (drawn from the seed, in write order per item), so an index read can miss an entry,
 *   still list an entry the table has moved on from, or return it with stale projected values;
 * - BatchGetItem may return some keys as UnprocessedKeys;
 * - items over 400 KB are refused.
 * Expressions (conditions, key conditions, filters) are parsed and evaluated by dynalite's own
 * parser and comparator, so their semantics match the local emulator's.
 * TTL deletion is not modelled (runs are far shorter than the 30-day retention).
 */
import { createRequire } from 'node:module';
import type { TableDefinition } from '../../runtime/infra/resources.ts';

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
  /** Chance that a BatchGetItem call leaves some of its keys unprocessed. */
  readonly unprocessedRate: number;
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
}

/** Versions kept per item beyond the newest: enough for any lag the behaviour allows. */
const HISTORY_MS = 600_000;

export class InMemoryDynamoDb {
  readonly #tables = new Map<string, Table>();
  readonly #behaviour: DynamoDbBehaviour;
  /** Every applied write, for the checker: table, key, the item after it (undefined: deleted). */
  readonly writes: { tableName: string; atMs: number; item: AttributeMap | undefined }[] = [];
  /** Record applied writes in `writes` (the chaos driver turns it on for the tasks table). */
  recordTables = new Set<string>();

  constructor(tables: readonly { name: string; definition: TableDefinition }[], behaviour: DynamoDbBehaviour) {
    for (const { name, definition } of tables) this.#tables.set(name, { name, definition, items: new Map() });
    this.#behaviour = behaviour;
  }

  /** Answer one operation (`target` is the X-Amz-Target operation name). */
  handle(operation: string, input: Record<string, unknown>): Record<string, unknown> {
    switch (operation) {
      case 'PutItem':
        return this.#putItem(input);
      case 'DeleteItem':
        return this.#deleteItem(input);
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
    const data = { ...input };
    const problem = validations.validateExpressions(data);
    if (problem) throw new DynamoDbError('ValidationException', problem);
    return data;
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
    if (this.recordTables.has(table.name)) this.writes.push({ tableName: table.name, atMs: nowMs, item });
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
    if (this.#conditionFails(data, existing)) {
      const returnOld = data.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && existing;
      throw new DynamoDbError(
        'ConditionalCheckFailedException',
        'The conditional request failed',
        returnOld ? { Item: existing } : {},
      );
    }
    this.#write(table, key, structuredClone(item));
    return data.ReturnValues === 'ALL_OLD' && existing ? { Attributes: existing } : {};
  }

  #deleteItem(input: Record<string, unknown>): Record<string, unknown> {
    const data = this.#parse(input);
    const table = this.#table(data.TableName);
    const key = this.#keyOf(table, data.Key as AttributeMap);
    const existing = this.#latest(table, key);
    if (this.#conditionFails(data, existing)) {
      throw new DynamoDbError('ConditionalCheckFailedException', 'The conditional request failed');
    }
    if (existing) this.#write(table, key, undefined);
    return data.ReturnValues === 'ALL_OLD' && existing ? { Attributes: existing } : {};
  }

  #getItem(input: Record<string, unknown>): Record<string, unknown> {
    const table = this.#table(input.TableName);
    const key = this.#keyOf(table, input.Key as AttributeMap);
    const item = input.ConsistentRead === true ? this.#latest(table, key) : this.#eventual(table, key);
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
    all.forEach(({ name, key, consistent }, i) => {
      const table = this.#table(name);
      if (i >= processed) {
        const entry = unprocessed[name] ?? { Keys: [], ...(consistent ? { ConsistentRead: true } : {}) };
        entry.Keys.push(key);
        unprocessed[name] = entry;
        return;
      }
      const id = this.#keyOf(table, key);
      const item = consistent ? this.#latest(table, id) : this.#eventual(table, id);
      responses[name] ??= [];
      if (item) responses[name].push(item);
    });
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
    const entries = index ? this.#indexEntries(table, index) : this.#tableEntries(table, data.ConsistentRead === true);
    const matching = entries.filter((entry) => dynaliteDb.matchesExprFilter(entry, expressionOf(data._keyCondition)));
    return this.#page(table, keys, matching, data);
  }

  #scan(input: Record<string, unknown>): Record<string, unknown> {
    const data = this.#parse(input);
    const table = this.#table(data.TableName);
    if (data.IndexName) throw new DynamoDbError('ValidationException', 'Scans of indexes are not simulated');
    return this.#page(table, table.definition, this.#tableEntries(table, data.ConsistentRead === true), data);
  }

  #tableEntries(table: Table, consistent: boolean): AttributeMap[] {
    const entries: AttributeMap[] = [];
    for (const key of table.items.keys()) {
      const item = consistent ? this.#latest(table, key) : this.#eventual(table, key);
      if (item) entries.push(item);
    }
    return entries;
  }

  /** Each item's newest version that has reached the index, projected as the index projects. */
  #indexEntries(table: Table, index: TableDefinition['indexes'][number]): AttributeMap[] {
    const nowMs = this.#behaviour.now();
    const projected = [
      table.definition.partitionKey,
      ...(table.definition.sortKey ? [table.definition.sortKey] : []),
      index.partitionKey,
      ...(index.sortKey ? [index.sortKey] : []),
      ...index.nonKeyAttributes,
    ];
    const entries: AttributeMap[] = [];
    for (const versions of table.items.values()) {
      let item: AttributeMap | undefined;
      for (let i = versions.length - 1; i >= 0; i--) {
        if (versions[i]!.indexedAtMs <= nowMs) {
          item = versions[i]!.item;
          break;
        }
      }
      // Sparse: only items carrying the index's key attributes are in it.
      if (!item?.[index.partitionKey] || (index.sortKey && !item[index.sortKey])) continue;
      const entry: AttributeMap = {};
      for (const name of projected) if (item[name] !== undefined) entry[name] = item[name];
      entries.push(entry);
    }
    return entries;
  }

  /** Sort, resume after ExclusiveStartKey, apply Limit and the 1 MB page, then the filter. */
  #page(
    table: Table,
    keys: { partitionKey: string; sortKey?: string },
    entries: AttributeMap[],
    data: Record<string, unknown>,
  ): Record<string, unknown> {
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

/** dynalite's parse result holds the expression tree under `expression`. */
const expressionOf = (parsed: unknown): Expression => (parsed as { expression: Expression }).expression;

/** DynamoDB's order of scalar key values: numbers numerically, strings and binaries by bytes. */
function compareValues(a: AttributeValue | undefined, b: AttributeValue | undefined): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1;
  if ('N' in a && 'N' in b) return Number(a.N) - Number(b.N);
  const left = Buffer.from(String(a.S ?? a.B ?? ''), 'S' in a ? 'utf8' : 'base64');
  const right = Buffer.from(String(b.S ?? b.B ?? ''), 'S' in b ? 'utf8' : 'base64');
  return Buffer.compare(left, right);
}
