/**
 * Counts every AWS SDK call by service and operation (an SDK v3 middleware), with its latency and
 * the billable units it would cost on AWS: DynamoDB read/write request units estimated from item
 * sizes (GSI writes included), SQS requests in 64 KB chunks. The cost model turns counts per task
 * into dollars per million tasks at list prices, beside the same workload on Step Functions.
 *
 * The benchmarks attach it to the runtime's clients; production code never needs it.
 */
import { parseInsert } from '../../runtime/adapters/partiql-insert.ts';
import type { IndexDefinition } from '../../runtime/infra/resources.ts';

/** One operation's totals. Units are estimates (see the size rules below). */
export interface CallStat {
  count: number;
  errors: number;
  totalMs: number;
  /** DynamoDB read request units (strongly consistent = 1 per 4 KB, eventually = 0.5). */
  readUnits: number;
  /** DynamoDB write request units on the table (1 per KB, failed conditions included). */
  writeUnits: number;
  /** DynamoDB write request units on global secondary indexes. */
  indexWriteUnits: number;
  /** SQS billable requests (one per 64 KB chunk of payload). */
  sqsRequests: number;
}

/** What a middleware stack needs to offer (every SDK v3 client, the document client included). */
interface StackOwner {
  readonly middlewareStack: {
    add(middleware: unknown, options: { step: 'build'; name: string; override?: boolean }): void;
    remove(name: string): boolean;
  };
}

export interface CallCounterOptions {
  /** GSIs per physical table name, to estimate index writes from the items written. */
  readonly indexes?: Readonly<Record<string, readonly IndexDefinition[]>>;
  /** Partition key per physical table name (for the index estimate). Default `taskId`/`pk`. */
  readonly keys?: Readonly<Record<string, string>>;
  readonly clock?: () => number;
}

const MIDDLEWARE_NAME = 'benchCallCounter';
const KB = 1024;
const SQS_CHUNK = 64 * KB;

export class CallCounter {
  readonly #stats = new Map<string, CallStat>();
  readonly #options: CallCounterOptions;
  readonly #clock: () => number;
  /** Last written index keys per table item, so a write knows which index entries it moves. */
  readonly #indexShadow = new Map<string, Record<string, string>>();
  /**
   * Last known size of each item written (PutItem, BatchWriteItem): an UpdateItem or DeleteItem
   * is billed on the whole item, the larger of before and after, which its request does not show.
   */
  readonly #sizeShadow = new Map<string, number>();
  /** SQS calls per operation and queue (its name, the URL's last part): where the requests go. */
  readonly #sqsByQueue = new Map<string, number>();
  /** DynamoDB calls per operation and table (an index after a `/`): which table pays. */
  readonly #dynamoByTable = new Map<string, { count: number; readUnits: number }>();

  constructor(options: CallCounterOptions = {}) {
    this.#options = options;
    this.#clock = options.clock ?? (() => performance.now());
  }

  /**
   * Add the counter to clients' middleware stacks (the `build` step: after serialization, so
   * DynamoDB inputs are in wire form, and outside the retry loop, so a call is counted once).
   * A DocumentClient shares its DynamoDBClient's stack: attach one of the two, not both.
   */
  attach(...clients: StackOwner[]): this {
    for (const client of clients) {
      client.middlewareStack.add(this.middleware(), { step: 'build', name: MIDDLEWARE_NAME, override: true });
    }
    return this;
  }

  detach(...clients: StackOwner[]): void {
    for (const client of clients) client.middlewareStack.remove(MIDDLEWARE_NAME);
  }

  /** The middleware itself (exposed for tests and custom stacks). */
  middleware() {
    // biome-ignore lint/suspicious/noExplicitAny: the SDK's middleware generics differ per client.
    return (next: (args: any) => Promise<any>, context: any) => async (args: any) => {
      const service = String(context.clientName ?? 'Unknown').replace(/Client$/, '');
      const operation = String(context.commandName ?? 'Unknown').replace(/Command$/, '');
      const started = this.#clock();
      let output: Record<string, unknown> | undefined;
      let failed = false;
      try {
        const result = await next(args);
        output = result?.output;
        return result;
      } catch (error) {
        failed = true;
        throw error;
      } finally {
        const stat = this.#stat(service, operation);
        stat.count++;
        stat.totalMs += this.#clock() - started;
        const queueUrl = service === 'SQS' ? args.input?.QueueUrl : undefined;
        if (typeof queueUrl === 'string') {
          const key = `${operation} ${queueUrl.split('/').pop()}`;
          this.#sqsByQueue.set(key, (this.#sqsByQueue.get(key) ?? 0) + 1);
        }
        if (failed) stat.errors++;
        const documentOutput = Boolean(context.__aws_sdk_context?.features?.DDB_MAPPER);
        const readBefore = stat.readUnits;
        this.#bill(stat, service, operation, args.input ?? {}, output, documentOutput, failed);
        const table = service === 'DynamoDB' ? args.input?.TableName : undefined;
        if (typeof table === 'string') {
          const index = typeof args.input?.IndexName === 'string' ? `/${args.input.IndexName}` : '';
          const key = `${operation} ${table}${index}`;
          const byTable = this.#dynamoByTable.get(key) ?? { count: 0, readUnits: 0 };
          byTable.count++;
          byTable.readUnits += stat.readUnits - readBefore;
          this.#dynamoByTable.set(key, byTable);
        }
      }
    };
  }

  /** Record a call by hand (tests, or calls made outside an SDK client). */
  record(service: string, operation: string, ms = 0): CallStat {
    const stat = this.#stat(service, operation);
    stat.count++;
    stat.totalMs += ms;
    return stat;
  }

  reset(): void {
    this.#stats.clear();
    this.#sqsByQueue.clear();
    this.#dynamoByTable.clear();
  }

  /**
   * DynamoDB calls since the last reset and their estimated read units, keyed `Operation table`
   * (`Operation table/index` for an index), for single-table calls (not the batch operations).
   */
  dynamoByTable(): Map<string, { count: number; readUnits: number }> {
    return new Map([...this.#dynamoByTable].map(([key, value]) => [key, { ...value }]));
  }

  /** SQS calls since the last reset, keyed `Operation queue-name`. */
  sqsByQueue(): Map<string, number> {
    return new Map(this.#sqsByQueue);
  }

  /** A copy of the totals, keyed `Service.Operation`. */
  snapshot(): Map<string, CallStat> {
    return new Map([...this.#stats].map(([key, stat]) => [key, { ...stat }]));
  }

  #stat(service: string, operation: string): CallStat {
    const key = `${service}.${operation}`;
    let stat = this.#stats.get(key);
    if (!stat) {
      stat = {
        count: 0,
        errors: 0,
        totalMs: 0,
        readUnits: 0,
        writeUnits: 0,
        indexWriteUnits: 0,
        sqsRequests: 0,
      };
      this.#stats.set(key, stat);
    }
    return stat;
  }

  #bill(
    stat: CallStat,
    service: string,
    operation: string,
    input: Record<string, unknown>,
    output: Record<string, unknown> | undefined,
    documentOutput: boolean,
    failed: boolean,
  ): void {
    if (service === 'SQS') {
      stat.sqsRequests += sqsChunks(operation, input, output);
      return;
    }
    if (service !== 'DynamoDB') return;
    const outSize = (value: unknown) => (documentOutput ? nativeItemSize(value) : wireItemSize(value));
    const factor = input.ConsistentRead === true ? 1 : 0.5;
    switch (operation) {
      case 'PutItem': {
        const item = input.Item as WireItem;
        const table = String(input.TableName);
        // The larger of the item before and after (a put replaces the whole item).
        const size = wireItemSize(item);
        stat.writeUnits += writeUnits(Math.max(size, this.#knownSize(table, item) ?? 0));
        if (!failed) this.#rememberSize(table, item, size);
        // A refused condition still costs the table write, but moves no index entry.
        if (!failed) stat.indexWriteUnits += this.#indexWrites(String(input.TableName), item);
        break;
      }
      case 'UpdateItem':
      case 'DeleteItem': {
        const attributes = output?.Attributes;
        const table = String(input.TableName);
        const key = input.Key as WireItem;
        // The whole item, before or after, whichever is larger: the returned attributes when
        // asked for, else the size last written (an item this counter never saw written: 1 KB).
        const known = this.#knownSize(table, key);
        const returned = attributes ? outSize(attributes) : undefined;
        stat.writeUnits += writeUnits(Math.max(returned ?? 0, known ?? 0));
        if (operation === 'DeleteItem' && !failed) this.#sizeShadow.delete(this.#itemKey(table, key));
        else if (!failed && returned !== undefined) this.#rememberSize(table, key, Math.max(returned, known ?? 0));
        if (operation === 'DeleteItem' && !failed) {
          stat.indexWriteUnits += this.#indexWrites(String(input.TableName), undefined, input.Key as WireItem);
        }
        break;
      }
      case 'BatchWriteItem': {
        const requests = input.RequestItems as Record<string, { PutRequest?: { Item: WireItem } }[]> | undefined;
        for (const [table, writes] of Object.entries(requests ?? {})) {
          for (const write of writes) {
            stat.writeUnits += write.PutRequest ? writeUnits(wireItemSize(write.PutRequest.Item)) : 1;
            if (write.PutRequest && !failed) {
              this.#rememberSize(table, write.PutRequest.Item, wireItemSize(write.PutRequest.Item));
            }
            if (write.PutRequest && !failed) stat.indexWriteUnits += this.#indexWrites(table, write.PutRequest.Item);
          }
        }
        break;
      }
      case 'BatchExecuteStatement': {
        // Non-transactional PartiQL statements are billed as the writes they are: an INSERT as a
        // conditional PutItem, 1 unit per KB of the item (an INSERT refused because its key exists
        // as a refused condition: the table write, the larger of the items, no index entry). A
        // statement answered throttled or invalid, or a call that failed, wrote nothing and is not
        // billed. A statement of another kind (none is sent) is billed as a 1 KB write.
        if (failed) break;
        const statements = (input.Statements ?? []) as { Statement?: unknown; Parameters?: WireItem[string][] }[];
        const responses = (output?.Responses ?? []) as { Error?: { Code?: string; Item?: unknown } }[];
        statements.forEach((statement, i) => {
          const code = responses[i]?.Error?.Code;
          const insert = parseInsert(statement.Statement, statement.Parameters);
          if (!('item' in insert)) {
            if (code === undefined) stat.writeUnits += 1;
            return;
          }
          const { tableName, item } = insert;
          const size = wireItemSize(item);
          if (code === undefined) {
            stat.writeUnits += writeUnits(size);
            this.#rememberSize(tableName, item, size);
            stat.indexWriteUnits += this.#indexWrites(tableName, item);
          } else if (code === 'DuplicateItem' || code === 'ConditionalCheckFailed') {
            const existing = responses[i]!.Error!.Item;
            const stored = existing ? outSize(existing) : (this.#knownSize(tableName, item) ?? 0);
            stat.writeUnits += writeUnits(Math.max(size, stored));
          }
        });
        break;
      }
      case 'TransactWriteItems': {
        // Transactional writes cost twice a standard write (a prepare and a commit of every item):
        // 2 units per KB of each item. A ConditionCheck, an Update or a Delete (sizes not in the
        // request) is billed as a 1 KB item. A cancelled transaction is billed as tried, and moves
        // no index entry. Index entries are billed as for standard writes (not doubled).
        const actions = (input.TransactItems ?? []) as {
          Put?: { TableName: string; Item: WireItem };
          Update?: unknown;
          Delete?: { TableName: string; Key: WireItem };
          ConditionCheck?: unknown;
        }[];
        for (const action of actions) {
          stat.writeUnits += 2 * (action.Put ? writeUnits(wireItemSize(action.Put.Item)) : 1);
          if (failed) continue;
          if (action.Put) stat.indexWriteUnits += this.#indexWrites(action.Put.TableName, action.Put.Item);
          if (action.Delete) {
            stat.indexWriteUnits += this.#indexWrites(action.Delete.TableName, undefined, action.Delete.Key);
          }
        }
        break;
      }
      case 'TransactGetItems': {
        // Transactional reads: 2 units per 4 KB of each item (a missing one the minimum).
        const found = (output?.Responses ?? []) as { Item?: unknown }[];
        const requested = ((input.TransactItems ?? []) as unknown[]).length;
        for (let i = 0; i < requested; i++)
          stat.readUnits += 2 * readUnits(found[i]?.Item ? outSize(found[i]!.Item) : 0);
        break;
      }
      case 'GetItem':
        // A missing item still costs the minimum read.
        stat.readUnits += readUnits(output?.Item ? outSize(output.Item) : 0) * factor;
        break;
      case 'BatchGetItem': {
        // Billed as one GetItem per key; keys not found cost the minimum.
        const requested = input.RequestItems as Record<string, { Keys: unknown[]; ConsistentRead?: boolean }>;
        const responses = (output?.Responses ?? {}) as Record<string, unknown[]>;
        for (const [table, request] of Object.entries(requested ?? {})) {
          const perItem = request.ConsistentRead === true ? 1 : 0.5;
          const found = responses[table] ?? [];
          for (const item of found) stat.readUnits += readUnits(outSize(item)) * perItem;
          stat.readUnits += Math.max(0, request.Keys.length - found.length) * perItem;
        }
        break;
      }
      case 'Query':
      case 'Scan': {
        // Billed on the total size read, rounded up to 4 KB once per call.
        const items = (output?.Items ?? []) as unknown[];
        let bytes = items.reduce<number>((sum, item) => sum + outSize(item), 0);
        // COUNT returns no items but reads them: assume 100 bytes each (KEYS_ONLY index entries).
        if (items.length === 0 && typeof output?.Count === 'number') bytes = output.Count * 100;
        stat.readUnits += readUnits(bytes) * factor;
        break;
      }
      default:
        break;
    }
  }

  #itemKey(table: string, itemOrKey: WireItem): string {
    const keyAttribute = this.#options.keys?.[table] ?? 'taskId';
    return `${table}\u0000${JSON.stringify(itemOrKey[keyAttribute] ?? null)}`;
  }

  #knownSize(table: string, itemOrKey: WireItem | undefined): number | undefined {
    return itemOrKey ? this.#sizeShadow.get(this.#itemKey(table, itemOrKey)) : undefined;
  }

  #rememberSize(table: string, itemOrKey: WireItem, size: number): void {
    this.#sizeShadow.set(this.#itemKey(table, itemOrKey), size);
  }

  /**
   * Index write units of writing `item` (undefined: deleting the item with `key`): each GSI entry
   * created or removed costs 1 (small entries), a moved one (key changed) 2, an unchanged 0.
   */
  #indexWrites(table: string, item: WireItem | undefined, key?: WireItem): number {
    const indexes = this.#options.indexes?.[table];
    if (!indexes || indexes.length === 0) return 0;
    const keyAttribute = this.#options.keys?.[table] ?? 'taskId';
    const idValue = (item ?? key)?.[keyAttribute];
    if (!idValue) return 0;
    const shadowKey = `${table}\u0000${JSON.stringify(idValue)}`;
    const before = this.#indexShadow.get(shadowKey) ?? {};
    const after: Record<string, string> = {};
    let units = 0;
    for (const index of indexes) {
      const entry = item ? indexEntry(item, index) : undefined;
      if (entry !== undefined) after[index.indexName] = entry;
      const old = before[index.indexName];
      if (old === entry) continue;
      if (old === undefined || entry === undefined) units += 1;
      else units += sameIndexKey(old, entry) ? 1 : 2;
    }
    if (item) this.#indexShadow.set(shadowKey, after);
    else this.#indexShadow.delete(shadowKey);
    return units;
  }
}

type WireItem = Record<string, Record<string, unknown>>;

/** The GSI entry an item projects into an index (undefined when the item lacks its keys). */
function indexEntry(item: WireItem, index: IndexDefinition): string | undefined {
  const partition = item[index.partitionKey];
  const sort = index.sortKey ? item[index.sortKey] : undefined;
  if (!partition || (index.sortKey && !sort)) return undefined;
  const projected = index.nonKeyAttributes.map((name) => item[name] ?? null);
  return JSON.stringify([[partition, sort ?? null], projected]);
}

function sameIndexKey(a: string, b: string): boolean {
  return JSON.stringify(JSON.parse(a)[0]) === JSON.stringify(JSON.parse(b)[0]);
}

const writeUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / KB));
const readUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / (4 * KB)));

/** DynamoDB's item size rule: attribute name bytes plus value bytes, on the wire form. */
export function wireItemSize(item: unknown): number {
  if (!item || typeof item !== 'object') return 0;
  let size = 0;
  for (const [name, value] of Object.entries(item as WireItem)) size += utf8(name) + wireValueSize(value);
  return size;
}

function wireValueSize(value: Record<string, unknown>): number {
  const [type, raw] = Object.entries(value)[0] ?? ['NULL', true];
  switch (type) {
    case 'S':
      return utf8(String(raw));
    case 'N':
      return numberSize(String(raw));
    case 'B':
      return raw instanceof Uint8Array ? raw.byteLength : utf8(String(raw));
    case 'BOOL':
    case 'NULL':
      return 1;
    case 'SS':
    case 'NS':
    case 'BS':
      return (raw as unknown[]).reduce<number>(
        (sum, v) => sum + (type === 'NS' ? numberSize(String(v)) : utf8(String(v))),
        0,
      );
    case 'L':
      return 3 + (raw as Record<string, unknown>[]).reduce<number>((sum, v) => sum + 1 + wireValueSize(v), 0);
    case 'M':
      return (
        3 + Object.entries(raw as WireItem).reduce<number>((sum, [k, v]) => sum + 1 + utf8(k) + wireValueSize(v), 0)
      );
    default:
      return 1;
  }
}

/** The same rule on an unmarshalled (document client) item. */
export function nativeItemSize(item: unknown): number {
  if (!item || typeof item !== 'object') return 0;
  let size = 0;
  for (const [name, value] of Object.entries(item as Record<string, unknown>)) size += utf8(name) + nativeSize(value);
  return size;
}

function nativeSize(value: unknown): number {
  if (value === null || value === undefined || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return utf8(value);
  if (typeof value === 'number' || typeof value === 'bigint') return numberSize(String(value));
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Set) return [...value].reduce<number>((sum, v) => sum + nativeSize(v), 0);
  if (Array.isArray(value)) return 3 + value.reduce<number>((sum, v) => sum + 1 + nativeSize(v), 0);
  if (typeof value === 'object') {
    return 3 + Object.entries(value).reduce<number>((sum, [k, v]) => sum + 1 + utf8(k) + nativeSize(v), 0);
  }
  return 1;
}

/** Numbers: about one byte per two significant digits, plus one. */
function numberSize(text: string): number {
  const digits = text
    .replace(/[^0-9]/g, '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

/** Billable SQS requests: each 64 KB chunk of a request's payload counts as one request. */
function sqsChunks(operation: string, input: Record<string, unknown>, output?: Record<string, unknown>): number {
  let bytes = 0;
  if (operation === 'SendMessage') bytes = utf8(String(input.MessageBody ?? ''));
  if (operation === 'SendMessageBatch') {
    for (const entry of (input.Entries ?? []) as { MessageBody?: string }[]) bytes += utf8(entry.MessageBody ?? '');
  }
  if (operation === 'ReceiveMessage') {
    for (const message of (output?.Messages ?? []) as { Body?: string }[]) bytes += utf8(message.Body ?? '');
  }
  return Math.max(1, Math.ceil(bytes / SQS_CHUNK));
}

// ─── Cost model ─────────────────────────────────────────────────────────────────────────────

/** us-east-1 list prices (docs/REFERENCE: SQS, DynamoDB on-demand, Lambda ARM, API Gateway HTTP). */
export const LIST_PRICES = {
  sqsPerMillionRequests: 0.4,
  dynamoWritePerMillionUnits: 0.625,
  dynamoReadPerMillionUnits: 0.125,
  lambdaPerMillionRequests: 0.2,
  lambdaPerGbSecond: 0.0000133334,
  apiGatewayHttpPerMillion: 1.0,
  stepFunctionsPerMillionTransitions: 25,
  eventBridgePerMillionEvents: 1.0,
  /** SQS FIFO queues (the webhook deliveries), us-east-1 list price. */
  sqsFifoPerMillionRequests: 0.5,
} as const;

export type Prices = { readonly [K in keyof typeof LIST_PRICES]: number };

/** Billable usage per task. */
export interface UsagePerTask {
  readonly sqsRequests: number;
  readonly dynamoWriteUnits: number;
  readonly dynamoReadUnits: number;
  readonly lambdaInvocations: number;
  readonly lambdaGbSeconds: number;
  readonly apiRequests: number;
  readonly eventBridgeEvents?: number;
  readonly stateTransitions?: number;
  readonly sqsFifoRequests?: number;
}

export interface CostLine {
  readonly item: string;
  readonly perTask: number;
  readonly usdPerMillionTasks: number;
}

export interface CostEstimate {
  readonly lines: readonly CostLine[];
  readonly usdPerMillionTasks: number;
}

/** Dollars per million tasks: usage per task × price per unit × 10⁶. */
export function costPerMillionTasks(usage: UsagePerTask, prices: Prices = LIST_PRICES): CostEstimate {
  const line = (item: string, perTask: number, pricePerMillionUnits: number): CostLine => ({
    item,
    perTask,
    usdPerMillionTasks: perTask * pricePerMillionUnits,
  });
  const lines = [
    line('SQS requests', usage.sqsRequests, prices.sqsPerMillionRequests),
    line('DynamoDB write units', usage.dynamoWriteUnits, prices.dynamoWritePerMillionUnits),
    line('DynamoDB read units', usage.dynamoReadUnits, prices.dynamoReadPerMillionUnits),
    line('Lambda requests', usage.lambdaInvocations, prices.lambdaPerMillionRequests),
    line('Lambda GB-s', usage.lambdaGbSeconds, prices.lambdaPerGbSecond * 1e6),
    line('API Gateway HTTP requests', usage.apiRequests, prices.apiGatewayHttpPerMillion),
    line('EventBridge events', usage.eventBridgeEvents ?? 0, prices.eventBridgePerMillionEvents),
    line('SQS FIFO requests', usage.sqsFifoRequests ?? 0, prices.sqsFifoPerMillionRequests),
    line('Step Functions transitions', usage.stateTransitions ?? 0, prices.stepFunctionsPerMillionTransitions),
  ].filter((l) => l.perTask > 0);
  return { lines, usdPerMillionTasks: lines.reduce((sum, l) => sum + l.usdPerMillionTasks, 0) };
}

/** Totals of a counter snapshot divided by the number of tasks. */
export function usageFromCalls(
  stats: ReadonlyMap<string, CallStat>,
  tasks: number,
): Pick<UsagePerTask, 'sqsRequests' | 'dynamoWriteUnits' | 'dynamoReadUnits'> {
  let sqs = 0;
  let write = 0;
  let read = 0;
  for (const stat of stats.values()) {
    sqs += stat.sqsRequests;
    write += stat.writeUnits + stat.indexWriteUnits;
    read += stat.readUnits;
  }
  return { sqsRequests: sqs / tasks, dynamoWriteUnits: write / tasks, dynamoReadUnits: read / tasks };
}

/**
 * The minimal Step Functions Standard state machine for the same work:
 *   Submit (DynamoDB PutItem task) → Wait for capacity (.waitForTaskToken) → Run (Lambda invoke)
 *   → Record (DynamoDB UpdateItem task)
 * Four states entered per execution = 4 state transitions (the start and the end are not billed
 * separately). Concurrency control still needs something to hand out tokens: not counted here,
 * so this is a lower bound for Step Functions.
 */
export const STEP_FUNCTIONS_MINIMAL = {
  states: ['Submit', 'WaitForCapacity', 'Run', 'Record'],
  transitionsPerTask: 4,
} as const;

export function stepFunctionsUsage(options: {
  /** Lambda GB-s of running the task handler (the same as ours: the work does not change). */
  readonly workerGbSeconds: number;
  readonly taskItemWriteUnits?: number;
}): UsagePerTask {
  return {
    stateTransitions: STEP_FUNCTIONS_MINIMAL.transitionsPerTask,
    apiRequests: 1, // API Gateway → StartExecution
    lambdaInvocations: 1, // Run
    lambdaGbSeconds: options.workerGbSeconds,
    // Submit and Record each write the task item once (no indexes, no queue messages).
    dynamoWriteUnits: 2 * (options.taskItemWriteUnits ?? 1),
    dynamoReadUnits: 0,
    sqsRequests: 0,
  };
}

/** A plain-text table of a counter snapshot: calls per task, mean latency, share of time. */
/** SQS calls a task per operation and queue, most first (`bench/aws-calls.ts --by-queue`). */
export function formatSqsByQueue(byQueue: ReadonlyMap<string, number>, tasks: number): string {
  const rows = [...byQueue].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const lines = ['SQS operation and queue                            calls/task'];
  for (const [key, count] of rows) lines.push(`${key.padEnd(48)} ${(count / tasks).toFixed(2).padStart(10)}`);
  return lines.join('\n');
}

export function formatCallTable(stats: ReadonlyMap<string, CallStat>, tasks: number): string {
  const rows = [...stats].sort((a, b) => b[1].count - a[1].count);
  const totalMs = rows.reduce((sum, [, s]) => sum + s.totalMs, 0) || 1;
  const lines = [
    `${'operation'.padEnd(40)}${'calls/task'.padStart(11)}${'mean ms'.padStart(9)}${'time %'.padStart(8)}${'RRU/task'.padStart(10)}${'WRU/task'.padStart(10)}`,
  ];
  let calls = 0;
  for (const [key, s] of rows) {
    calls += s.count;
    lines.push(
      `${key.padEnd(40)}${(s.count / tasks).toFixed(2).padStart(11)}${(s.totalMs / Math.max(1, s.count)).toFixed(2).padStart(9)}${((100 * s.totalMs) / totalMs).toFixed(1).padStart(8)}${(s.readUnits / tasks).toFixed(2).padStart(10)}${((s.writeUnits + s.indexWriteUnits) / tasks).toFixed(2).padStart(10)}`,
    );
  }
  lines.push(`${'total'.padEnd(40)}${(calls / tasks).toFixed(2).padStart(11)}`);
  return lines.join('\n');
}

export function formatCost(title: string, estimate: CostEstimate): string {
  const lines = [title];
  for (const l of estimate.lines) {
    lines.push(
      `  ${l.item.padEnd(30)}${l.perTask.toFixed(3).padStart(10)} /task  $${l.usdPerMillionTasks.toFixed(2)} /M`,
    );
  }
  lines.push(`  ${'total'.padEnd(30)}${''.padStart(16)}$${estimate.usdPerMillionTasks.toFixed(2)} /M tasks`);
  return lines.join('\n');
}
