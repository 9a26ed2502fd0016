/**
 * Operations dynalite (4.x) lacks, answered beside it on its own server: `withOperations` starts
 * dynalite, keeps hold of its store, and answers the named operations (X-Amz-Target) from it with
 * dynalite's own item code (validation, keys, locks, index updates); every other request goes to
 * dynalite as before. The operation: local/dynalite-partiql.ts (BatchExecuteStatement with INSERT).
 */

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { crc32 } from 'node:zlib';

type Callback<T> = (error: (Error & { statusCode?: number; body?: unknown }) | null, value?: T) => void;
export type Item = Record<string, unknown>;

export interface ItemDb {
  get(key: string, cb: Callback<Item>): void;
  put(key: string, value: Item, cb: Callback<void>): void;
  lock(key: string, fn: (release: (cb: () => void) => () => void) => void): void;
}

export interface DynaliteStore {
  getTable(name: string, cb: Callback<unknown>): void;
  getItemDb(name: string): ItemDb;
}

interface DynaliteDb {
  create(options: unknown): DynaliteStore;
  validateItem(item: Item, table: unknown): (Error & { statusCode?: number; body?: unknown }) | undefined;
  createKey(item: Item, table: unknown): string;
  updateIndexes(store: DynaliteStore, table: unknown, existing: Item | undefined, item: Item, cb: Callback<void>): void;
}

interface DynaliteValidations {
  checkTypes(data: unknown, types: unknown): Record<string, unknown>;
  checkValidations(data: unknown, types: unknown, custom: unknown, store: DynaliteStore): void;
}

const fromDynalite = createRequire(createRequire(import.meta.url).resolve('dynalite'));
export const db = fromDynalite('./db') as DynaliteDb;
const validations = fromDynalite('./validations') as DynaliteValidations;
const putItemRules = fromDynalite('./validations/putItem') as { types: unknown; custom: unknown };

export interface Answer {
  readonly status: number;
  readonly body: unknown;
}

/** An operation answered by the shim: the parsed request body in, the answer out. */
export type Operation = (store: DynaliteStore, body: unknown) => Promise<Answer>;

/**
 * Start dynalite through `start` (which must call the dynalite factory once, synchronously) and
 * answer the `operations` (by X-Amz-Target operation name) on its server.
 */
export function withOperations(start: () => Server, operations: Readonly<Record<string, Operation>>): Server {
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
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const target = req.headers['x-amz-target'];
    const operation =
      req.method === 'POST' && typeof target === 'string' && target.startsWith('DynamoDB_20120810.')
        ? operations[target.slice('DynamoDB_20120810.'.length)]
        : undefined;
    if (!operation) {
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
      operation(captured, body).then(
        (answer) => send(res, answer.status, answer.body),
        (error: unknown) => send(res, 500, { __type: 'InternalServerError', message: String(error) }),
      );
    });
  });
  return server;
}

/** A PutItem request checked as dynalite's PutItem checks it, ready to write. */
export interface PlannedPut {
  readonly data: Record<string, unknown> & { Item: Item; TableName: string };
  readonly table: unknown;
  readonly key: string;
  readonly itemDb: ItemDb;
}

/** Check a PutItem-shaped request (types, item size, key, table): the put, or dynalite's error. */
export async function planPut(store: DynaliteStore, put: Record<string, unknown>): Promise<PlannedPut | Answer> {
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
  return { data, table, key: db.createKey(data.Item, table), itemDb: store.getItemDb(data.TableName) };
}

/** Lock an item's key; resolves with its release. */
export const lockItem = (put: PlannedPut) =>
  new Promise<() => void>((resolve) => put.itemDb.lock(put.key, (release) => resolve(release(() => {}))));

/** The item stored under a planned put's key (undefined when there is none). */
export const existingItem = (put: PlannedPut) =>
  call<Item>((cb) => put.itemDb.get(put.key, cb)).catch((error: { name?: string }) => {
    if (error?.name === 'NotFoundError') return undefined;
    throw error;
  });

/** Write a planned put over `existing`: its index entries, then the item. */
export async function writePut(store: DynaliteStore, put: PlannedPut, existing: Item | undefined): Promise<void> {
  await call<void>((cb) => db.updateIndexes(store, put.table, existing, put.data.Item, cb));
  await call<void>((cb) => put.itemDb.put(put.key, put.data.Item, cb));
}

export function call<T>(fn: (cb: Callback<T>) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => fn((error, value) => (error ? reject(error) : resolve(value as T))));
}

export const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function validation(message: string): Answer {
  return { status: 400, body: { __type: 'com.amazon.coral.validate#ValidationException', message } };
}

function send(res: ServerResponse, status: number, data: unknown): void {
  const body = JSON.stringify(data);
  res.statusCode = status;
  res.setHeader('x-amzn-RequestId', `shim-${Date.now().toString(36)}`);
  res.setHeader('x-amz-crc32', crc32(body));
  res.setHeader('Content-Type', 'application/x-amz-json-1.0');
  res.setHeader('Content-Length', Buffer.byteLength(body, 'utf8'));
  res.end(body);
}
