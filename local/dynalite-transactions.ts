/**
 * TransactWriteItems for dynalite, which (4.x) answers it UnknownOperationException. The task
 * store writes a batch's tasks with it (adapters/task-store.ts `createMany`): up to 100 conditional
 * creates in one call, all or none, which BatchWriteItem (no conditions) cannot do.
 *
 * What is emulated, as DynamoDB documents it: `Put` actions (with or without a condition; the
 * other actions are refused with a ValidationException naming them); at most 100 actions, one per
 * item; every condition checked with the items locked, then every put applied, or none when one
 * fails: TransactionCanceledException with a `CancellationReasons` entry per action
 * (`ConditionalCheckFailed`, with the item when `ReturnValuesOnConditionCheckFailure` is
 * `ALL_OLD`, else `None`); a `ClientRequestToken` seen in the last 10 minutes answers success
 * again without writing (the SDK's retry of a lost answer), or IdempotentParameterMismatchException
 * for other actions. Each put is validated and written by dynalite's own PutItem code (item
 * checks, condition expressions, index updates). Not emulated: conflicts with concurrent
 * transactions (the locks serialise them), capacity, and the 4 MB request limit.
 */

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { crc32 } from 'node:zlib';

type Callback<T> = (error: (Error & { statusCode?: number; body?: unknown }) | null, value?: T) => void;
type Item = Record<string, unknown>;

interface ItemDb {
  get(key: string, cb: Callback<Item>): void;
  put(key: string, value: Item, cb: Callback<void>): void;
  lock(key: string, fn: (release: (cb: () => void) => () => void) => void): void;
}

interface DynaliteStore {
  getTable(name: string, cb: Callback<unknown>): void;
  getItemDb(name: string): ItemDb;
}

interface DynaliteDb {
  create(options: unknown): DynaliteStore;
  validateItem(item: Item, table: unknown): (Error & { statusCode?: number; body?: unknown }) | undefined;
  createKey(item: Item, table: unknown): string;
  checkConditional(data: unknown, existing: Item | undefined): (Error & { body?: unknown }) | null | undefined;
  updateIndexes(store: DynaliteStore, table: unknown, existing: Item | undefined, item: Item, cb: Callback<void>): void;
}

interface DynaliteValidations {
  checkTypes(data: unknown, types: unknown): Record<string, unknown>;
  checkValidations(data: unknown, types: unknown, custom: unknown, store: DynaliteStore): void;
}

const TARGET = 'DynamoDB_20120810.TransactWriteItems';
const MAX_ACTIONS = 100;
/** How long DynamoDB remembers a ClientRequestToken. */
const TOKEN_MS = 10 * 60_000;
const ACTIONS = ['Put', 'ConditionCheck', 'Update', 'Delete'] as const;

const fromDynalite = createRequire(createRequire(import.meta.url).resolve('dynalite'));
const db = fromDynalite('./db') as DynaliteDb;
const validations = fromDynalite('./validations') as DynaliteValidations;
const putItemRules = fromDynalite('./validations/putItem') as { types: unknown; custom: unknown };

/**
 * Start dynalite through `start` (which must call the dynalite factory once, synchronously) and
 * answer TransactWriteItems on its server; every other request goes to dynalite as before.
 */
export function withTransactions(start: () => Server): Server {
  const create = db.create;
  let store: DynaliteStore | undefined;
  db.create = (options: unknown) => {
    store = create(options);
    return store;
  };
  let server: Server;
  try {
    server = start();
  } finally {
    db.create = create;
  }
  if (!store) throw new Error('dynalite did not create its store');
  const captured = store;
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  const tokens = new Map<string, { readonly actions: string; readonly atMs: number }>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST' || req.headers['x-amz-target'] !== TARGET) {
      for (const handler of handlers) handler(req, res);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        send(res, 400, { __type: 'com.amazon.coral.service#SerializationException' });
        return;
      }
      transactWrite(captured, tokens, body).then(
        (answer) => send(res, answer.status, answer.body),
        (error: unknown) => send(res, 500, { __type: 'InternalServerError', message: String(error) }),
      );
    });
  });
  return server;
}

interface Answer {
  readonly status: number;
  readonly body: unknown;
}

interface PlannedPut {
  readonly data: Record<string, unknown> & { Item: Item; TableName: string };
  readonly table: unknown;
  readonly key: string;
  readonly itemDb: ItemDb;
  readonly returnOld: boolean;
}

async function transactWrite(
  store: DynaliteStore,
  tokens: Map<string, { readonly actions: string; readonly atMs: number }>,
  body: unknown,
): Promise<Answer> {
  const request = (body ?? {}) as { TransactItems?: unknown; ClientRequestToken?: unknown };
  const actions = request.TransactItems;
  if (!Array.isArray(actions) || actions.length === 0 || actions.length > MAX_ACTIONS) {
    return validation(`TransactItems must hold 1 to ${MAX_ACTIONS} actions`);
  }
  const nowMs = Date.now();
  for (const [token, seen] of tokens) if (nowMs - seen.atMs > TOKEN_MS) tokens.delete(token);
  const token = typeof request.ClientRequestToken === 'string' ? request.ClientRequestToken : undefined;
  const fingerprint = JSON.stringify(actions);
  const seen = token === undefined ? undefined : tokens.get(token);
  if (seen) {
    if (seen.actions === fingerprint) return { status: 200, body: {} };
    return {
      status: 400,
      body: {
        __type: 'com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException',
        message: 'The request uses the same client token as a previous, but non-identical request.',
      },
    };
  }

  const planned: PlannedPut[] = [];
  const keys = new Set<string>();
  for (const [index, action] of actions.entries()) {
    const kinds = ACTIONS.filter((kind) => (action as Record<string, unknown> | null)?.[kind] !== undefined);
    if (kinds.length !== 1) return validation(`TransactItems[${index}] must name exactly one of ${ACTIONS.join(', ')}`);
    if (kinds[0] !== 'Put') return validation(`TransactItems[${index}]: only Put is emulated, not ${kinds[0]}`);
    const { ReturnValuesOnConditionCheckFailure: returnValues, ...put } = (action as { Put: Record<string, unknown> })
      .Put;
    let data: PlannedPut['data'];
    try {
      data = validations.checkTypes(put, putItemRules.types) as PlannedPut['data'];
      validations.checkValidations(data, putItemRules.types, putItemRules.custom, store);
    } catch (error) {
      const failure = error as { statusCode?: number; body?: unknown };
      if (failure.statusCode) return { status: failure.statusCode, body: failure.body };
      throw error;
    }
    const table = await call<unknown>((cb) => store.getTable(data.TableName, cb)).catch((error: unknown) => error);
    if (table instanceof Error) {
      const failure = table as { statusCode?: number; body?: unknown };
      if (failure.statusCode) return { status: failure.statusCode, body: failure.body };
      throw table;
    }
    const invalid = db.validateItem(data.Item, table);
    if (invalid) return { status: invalid.statusCode ?? 400, body: invalid.body };
    const key = db.createKey(data.Item, table);
    const lockName = `${data.TableName}\u0000${key}`;
    if (keys.has(lockName)) return validation('Transaction request cannot include multiple operations on one item');
    keys.add(lockName);
    planned.push({ data, table, key, itemDb: store.getItemDb(data.TableName), returnOld: returnValues === 'ALL_OLD' });
  }

  // Locked in one order (table, key) so that two transactions over the same items cannot deadlock.
  const order = [...planned].sort((a, b) =>
    compare(`${a.data.TableName}\u0000${a.key}`, `${b.data.TableName}\u0000${b.key}`),
  );
  const releases: (() => void)[] = [];
  try {
    for (const put of order) {
      releases.push(
        await new Promise<() => void>((resolve) => put.itemDb.lock(put.key, (release) => resolve(release(() => {})))),
      );
    }
    const existing = await Promise.all(
      planned.map((put) =>
        call<Item>((cb) => put.itemDb.get(put.key, cb)).catch((error: { name?: string }) => {
          if (error?.name === 'NotFoundError') return undefined;
          throw error;
        }),
      ),
    );
    const failed = planned.map((put, i) => db.checkConditional(put.data, existing[i]) != null);
    if (failed.some(Boolean)) {
      const reasons = planned.map((put, i) =>
        failed[i]
          ? {
              Code: 'ConditionalCheckFailed',
              Message: 'The conditional request failed',
              ...(put.returnOld && existing[i] ? { Item: existing[i] } : {}),
            }
          : { Code: 'None' },
      );
      return {
        status: 400,
        body: {
          __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
          message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((reason) => reason.Code).join(', ')}]`,
          CancellationReasons: reasons,
        },
      };
    }
    for (const [i, put] of planned.entries()) {
      await call<void>((cb) => db.updateIndexes(store, put.table, existing[i], put.data.Item, cb));
      await call<void>((cb) => put.itemDb.put(put.key, put.data.Item, cb));
    }
    if (token !== undefined) tokens.set(token, { actions: fingerprint, atMs: nowMs });
    return { status: 200, body: {} };
  } finally {
    for (const release of releases) release();
  }
}

function call<T>(fn: (cb: Callback<T>) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => fn((error, value) => (error ? reject(error) : resolve(value as T))));
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function validation(message: string): Answer {
  return { status: 400, body: { __type: 'com.amazon.coral.validate#ValidationException', message } };
}

function send(res: ServerResponse, status: number, data: unknown): void {
  const body = JSON.stringify(data);
  res.statusCode = status;
  res.setHeader('x-amzn-RequestId', `transact-${Date.now().toString(36)}`);
  res.setHeader('x-amz-crc32', crc32(body));
  res.setHeader('Content-Type', 'application/x-amz-json-1.0');
  res.setHeader('Content-Length', Buffer.byteLength(body, 'utf8'));
  res.end(body);
}
