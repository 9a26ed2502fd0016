/**
 * Crash consistency for dynalite's on-disk store.
 *
 * dynalite applies a PutItem as separate LevelDB writes: it deletes the item's old index entries,
 * puts the new ones, and only then puts the item. A `kill -9` between those writes leaves the
 * secondary indexes disagreeing with the items. The case that bit us: a completion write
 * (RUNNING → SUCCEEDED) deleted the task's `byActive` entry and died before writing the item, so
 * the task stayed RUNNING with no index entry and lease recovery never saw it. DynamoDB itself
 * never shows this (an item write and its index propagation cannot be torn).
 *
 * So the local runtime marks a clean shutdown, and after an unclean one (or on first use of a
 * store written before the marker existed) rebuilds every secondary index from the items, in one
 * atomic LevelDB batch, before dynalite opens the store. The items themselves are always whole:
 * the item is the last write, so a torn PutItem simply did not happen, which its caller saw as
 * an ambiguous failure and handles as such.
 */
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Level } from 'level';

/** The subset of dynalite's stored table description the rebuild reads. */
interface StoredTable {
  readonly TableName: string;
  readonly LocalSecondaryIndexes?: readonly unknown[];
  readonly GlobalSecondaryIndexes?: readonly unknown[];
}
type StoredItem = Record<string, unknown>;
interface IndexActions {
  readonly puts: readonly { index: string; key: string; item: StoredItem }[];
}
interface DynaliteDb {
  getIndexActions(
    indexes: readonly unknown[],
    existing: StoredItem | undefined,
    item: StoredItem,
    table: StoredTable,
  ): IndexActions;
}

// dynalite's own index-key and projection code, so the rebuilt entries are exactly what it writes.
const dynaliteDb = createRequire(import.meta.url)('dynalite/db/index.js') as DynaliteDb;

/** dynalite's key layout in its single LevelDB: `<sub-db name>~<key>`. */
const TABLE_PREFIX = 'table~';
const itemPrefix = (table: string) => `item-${table}~`;
const indexPrefix = (type: IndexType, table: string, index?: string) =>
  `index-${type}~${table}~${index === undefined ? '' : `${index}~`}`;
type IndexType = 'local' | 'global';

const CLEAN_MARKER = 'clean-shutdown';
const marker = (path: string) => join(path, CLEAN_MARKER);

export interface IndexRepairResult {
  readonly tables: number;
  readonly items: number;
  /** Index entries that were missing, stale or orphaned, and are now right. */
  readonly entriesFixed: number;
}

/** A table as the code now defines it: what a store written by an older version may lack. */
export interface ExpectedTable {
  readonly TableName?: string | undefined;
  readonly AttributeDefinitions?:
    | readonly { AttributeName?: string | undefined; AttributeType?: string | undefined }[]
    | undefined;
  readonly GlobalSecondaryIndexes?: readonly { IndexName?: string | undefined }[] | undefined;
}

/**
 * Call before dynalite opens `path`. Adds global secondary indexes the code defines and the
 * stored tables lack (a store written before an index was added: dynalite cannot create an
 * index on an existing table), then rebuilds the indexes unless the last run shut down cleanly
 * and nothing was added, and clears the marker so that a crash from now on is detected next time.
 */
export async function prepareDynaliteStore(
  path: string,
  expected: readonly ExpectedTable[] = [],
): Promise<IndexRepairResult | undefined> {
  const cleanlyStopped = existsSync(marker(path));
  const empty = !existsSync(path) || readdirSync(path).filter((name) => name !== CLEAN_MARKER).length === 0;
  const added = empty ? 0 : await addMissingIndexes(path, expected);
  const result = (cleanlyStopped && added === 0) || empty ? undefined : await rebuildIndexes(path);
  rmSync(marker(path), { force: true });
  return result;
}

/** Writes missing GSIs (and their key attributes) into the stored table descriptions. */
async function addMissingIndexes(path: string, expected: readonly ExpectedTable[]): Promise<number> {
  if (expected.length === 0) return 0;
  const db = new Level<string, unknown>(path, { valueEncoding: 'json' });
  await db.open();
  try {
    let added = 0;
    for (const want of expected) {
      const key = `${TABLE_PREFIX}${want.TableName}`;
      const stored = (await db.get(key)) as (StoredTable & Record<string, unknown>) | undefined;
      if (!stored) continue;
      const indexes = [...((stored.GlobalSecondaryIndexes ?? []) as { IndexName?: string }[])];
      const missing = (want.GlobalSecondaryIndexes ?? []).filter(
        (index) => !indexes.some((have) => have.IndexName === index.IndexName),
      );
      if (missing.length === 0) continue;
      const arn = typeof stored.TableArn === 'string' ? stored.TableArn : `table/${stored.TableName}`;
      for (const index of missing) {
        indexes.push({
          ...index,
          IndexArn: `${arn}/index/${index.IndexName}`,
          IndexSizeBytes: 0,
          ItemCount: 0,
          IndexStatus: 'ACTIVE',
          ProvisionedThroughput: { ReadCapacityUnits: 0, WriteCapacityUnits: 0, NumberOfDecreasesToday: 0 },
        } as { IndexName?: string });
      }
      const attributes = [...((stored.AttributeDefinitions ?? []) as { AttributeName?: string | undefined }[])];
      for (const attribute of want.AttributeDefinitions ?? []) {
        if (!attributes.some((have) => have.AttributeName === attribute.AttributeName)) attributes.push(attribute);
      }
      await db.put(key, { ...stored, GlobalSecondaryIndexes: indexes, AttributeDefinitions: attributes });
      added += missing.length;
    }
    return added;
  } finally {
    await db.close();
  }
}

/** Call after dynalite has closed `path`: the indexes are consistent, the next start may trust them. */
export function markDynaliteStoreClean(path: string): void {
  writeFileSync(marker(path), `${new Date().toISOString()}\n`);
}

export async function rebuildIndexes(path: string): Promise<IndexRepairResult> {
  const db = new Level<string, unknown>(path, { valueEncoding: 'json' });
  await db.open();
  try {
    let items = 0;
    let entriesFixed = 0;
    const tables = (await db.values({ gte: TABLE_PREFIX, lt: `${TABLE_PREFIX}\uffff` }).all()) as StoredTable[];
    const operations: ({ type: 'put'; key: string; value: unknown } | { type: 'del'; key: string })[] = [];
    for (const table of tables) {
      const groups = [
        { type: 'local' as const, indexes: table.LocalSecondaryIndexes ?? [] },
        { type: 'global' as const, indexes: table.GlobalSecondaryIndexes ?? [] },
      ];
      // What the indexes should hold, computed from the items.
      const wanted = new Map<string, StoredItem>();
      for await (const item of db.values({
        gte: itemPrefix(table.TableName),
        lt: `${itemPrefix(table.TableName)}\uffff`,
      })) {
        items++;
        for (const { type, indexes } of groups) {
          if (indexes.length === 0) continue;
          for (const put of dynaliteDb.getIndexActions(indexes, undefined, item as StoredItem, table).puts) {
            wanted.set(indexPrefix(type, table.TableName, put.index) + put.key, put.item);
          }
        }
      }
      // What they hold: drop what no item explains, rewrite what differs, add what is missing.
      for (const type of ['local', 'global'] as const) {
        const prefix = indexPrefix(type, table.TableName);
        for await (const [key, value] of db.iterator({ gte: prefix, lt: `${prefix}\uffff` })) {
          const expected = wanted.get(key);
          if (expected === undefined) {
            operations.push({ type: 'del', key });
            entriesFixed++;
          } else {
            if (JSON.stringify(expected) !== JSON.stringify(value)) {
              operations.push({ type: 'put', key, value: expected });
              entriesFixed++;
            }
            wanted.delete(key);
          }
        }
      }
      for (const [key, value] of wanted) {
        operations.push({ type: 'put', key, value });
        entriesFixed++;
      }
    }
    // One batch: a crash during the repair leaves the store as it was, and the marker absent.
    if (operations.length > 0) await db.batch(operations);
    return { tables: tables.length, items, entriesFixed };
  } finally {
    await db.close();
  }
}
