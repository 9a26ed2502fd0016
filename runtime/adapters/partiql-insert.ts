/**
 * The one PartiQL statement the task store sends: a conditional create of one item,
 *
 *   INSERT INTO "<table>" VALUE {'<attribute>': ?, '<attribute>': ?, ...}
 *
 * every attribute's value a parameter, in the order named. DynamoDB refuses an INSERT whose key
 * exists (`DuplicateItem`, with the stored item when the statement asks
 * `ReturnValuesOnConditionCheckFailure: ALL_OLD`), so it is a create conditional on the key, and
 * `BatchExecuteStatement` runs 25 of them, each on its own (adapters/task-store.ts `createMany`).
 *
 * `parseInsert` reads that shape back (the local emulator's shim, the simulation, the call meter
 * and the tests' write log); any other statement is refused with the reason.
 */

/** Attribute names the statement can name without escaping (the store's are identifiers). */
const ATTRIBUTE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Table names as DynamoDB allows them. */
const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;

/** A statement and its parameters, in the shape of a BatchStatementRequest. */
export interface InsertStatement<V> {
  readonly Statement: string;
  readonly Parameters: V[];
}

/** The INSERT of `item` into `tableName` (attributes left undefined are left out). */
export function insertStatement<V>(
  tableName: string,
  item: Readonly<Record<string, V | undefined>>,
): InsertStatement<V> {
  if (!TABLE_NAME.test(tableName)) throw new Error(`Table name not allowed in a statement: ${tableName}`);
  const names: string[] = [];
  const parameters: V[] = [];
  for (const [name, value] of Object.entries(item)) {
    if (value === undefined) continue;
    if (!ATTRIBUTE_NAME.test(name)) throw new Error(`Attribute name not allowed in a statement: ${name}`);
    names.push(`'${name}': ?`);
    parameters.push(value);
  }
  return { Statement: `INSERT INTO "${tableName}" VALUE {${names.join(', ')}}`, Parameters: parameters };
}

const INSERT = /^\s*INSERT\s+INTO\s+"([A-Za-z0-9_.-]{3,255})"\s+VALUE\s+\{(.*)\}\s*$/is;
const PAIR = /^\s*'([A-Za-z_][A-Za-z0-9_]*)'\s*:\s*\?\s*$/;

/** The table and item of an INSERT in `insertStatement`'s shape, or why it is not one. */
export function parseInsert<V>(
  statement: unknown,
  parameters: readonly V[] | undefined,
): { tableName: string; item: Record<string, V> } | { error: string } {
  if (typeof statement !== 'string') return { error: 'Statement must be a string' };
  const match = INSERT.exec(statement);
  if (!match) return { error: `Only INSERT INTO "table" VALUE {'attribute': ?, ...} is emulated: ${statement}` };
  const pairs = match[2]!.trim() === '' ? [] : match[2]!.split(',');
  const given = parameters ?? [];
  if (pairs.length === 0) return { error: 'The item must name at least one attribute' };
  if (pairs.length !== given.length) {
    return { error: `The statement has ${pairs.length} parameters, the request ${given.length}` };
  }
  const item: Record<string, V> = {};
  for (const [i, pair] of pairs.entries()) {
    const name = PAIR.exec(pair)?.[1];
    if (name === undefined) return { error: `Only 'attribute': ? pairs are emulated: ${pair.trim()}` };
    if (Object.hasOwn(item, name)) return { error: `Duplicate attribute ${name}` };
    item[name] = given[i]!;
  }
  return { tableName: match[1]!, item };
}
