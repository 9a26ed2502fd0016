/**
 * BatchExecuteStatement for dynalite, which (4.x) has no PartiQL. The task store writes a batch's
 * tasks with it (adapters/task-store.ts `createMany`): up to 25 INSERTs a call, each a create
 * conditional on its key, each on its own.
 *
 * What is emulated: only the statement the store sends (adapters/partiql-insert.ts),
 * `INSERT INTO "table" VALUE {'attribute': ?, ...}` with every value a parameter; any other
 * statement, more than 25, or two on one item refuse the whole request with a
 * ValidationException. Each INSERT is checked and written by dynalite's own PutItem code (item
 * checks, index updates) with its item locked; an item whose key exists is not written and the
 * statement answers `Error: { Code: 'DuplicateItem' }`, with the stored item when it asks
 * `ReturnValuesOnConditionCheckFailure: ALL_OLD` (AWS API reference, BatchStatementError); an
 * item dynalite refuses answers `ValidationError` in its own statement. The others are written
 * whatever befalls one. Not emulated: capacity (no per-statement throttling) and request size.
 */

import { parseInsert } from '../runtime/adapters/partiql-insert.ts';
import {
  type Answer,
  compare,
  type DynaliteStore,
  existingItem,
  type Item,
  lockItem,
  type PlannedPut,
  planPut,
  validation,
  writePut,
} from './dynalite-shim.ts';

const MAX_STATEMENTS = 25;

interface StatementRequest {
  readonly Statement?: unknown;
  readonly Parameters?: unknown;
  readonly ReturnValuesOnConditionCheckFailure?: unknown;
}

/** BatchExecuteStatement of INSERTs, for local/dynalite-shim.ts `withOperations`. */
export async function batchExecuteStatement(store: DynaliteStore, body: unknown): Promise<Answer> {
  const statements = (body as { Statements?: unknown } | null)?.Statements;
  if (!Array.isArray(statements) || statements.length === 0 || statements.length > MAX_STATEMENTS) {
    return validation(`Statements must hold 1 to ${MAX_STATEMENTS} statements`);
  }
  const inserts: { tableName: string; item: Item; returnOld: boolean }[] = [];
  for (const [index, request] of (statements as StatementRequest[]).entries()) {
    const parameters = request?.Parameters;
    if (parameters !== undefined && !Array.isArray(parameters)) {
      return validation(`Statements[${index}].Parameters must be a list`);
    }
    const parsed = parseInsert<unknown>(request?.Statement, parameters as unknown[] | undefined);
    if ('error' in parsed) return validation(`Statements[${index}]: ${parsed.error}`);
    inserts.push({ ...parsed, returnOld: request.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' });
  }

  // Each statement checked as a PutItem of its item; one refused answers in its own response.
  const responses: Record<string, unknown>[] = [];
  const planned: (PlannedPut | undefined)[] = [];
  const keys = new Set<string>();
  for (const insert of inserts) {
    const plan = await planPut(store, { TableName: insert.tableName, Item: insert.item });
    if (!('key' in plan)) {
      const refusal = plan.body as { __type?: string; message?: string } | undefined;
      // A table that does not exist refuses the whole request, as it would a PutItem.
      if (refusal?.__type?.endsWith('ResourceNotFoundException')) return plan;
      responses.push({
        TableName: insert.tableName,
        Error: { Code: 'ValidationError', Message: refusal?.message ?? 'Invalid item' },
      });
      planned.push(undefined);
      continue;
    }
    const lockName = `${plan.data.TableName}\u0000${plan.key}`;
    if (keys.has(lockName)) return validation('Provided list of item keys contains duplicates');
    keys.add(lockName);
    responses.push({ TableName: insert.tableName });
    planned.push(plan);
  }

  // Locked in one order (table, key), as a transaction locks, so that calls over the same items
  // cannot deadlock; each statement then stands alone.
  const order = planned
    .filter((put): put is PlannedPut => put !== undefined)
    .sort((a, b) => compare(`${a.data.TableName}\u0000${a.key}`, `${b.data.TableName}\u0000${b.key}`));
  const releases: (() => void)[] = [];
  try {
    for (const put of order) releases.push(await lockItem(put));
    for (const [i, put] of planned.entries()) {
      if (!put) continue;
      const existing = await existingItem(put);
      if (existing) {
        responses[i] = {
          TableName: put.data.TableName,
          Error: {
            Code: 'DuplicateItem',
            Message: 'Duplicate primary key exists in table',
            ...(inserts[i]!.returnOld ? { Item: existing } : {}),
          },
        };
        continue;
      }
      await writePut(store, put, undefined);
    }
  } finally {
    for (const release of releases) release();
  }
  return { status: 200, body: { Responses: responses } };
}
