/**
 * SDK clients whose `send(command)` answers from the simulated account directly: the command's
 * input is marshalled as the Document client marshals it (its own key nodes and options), handed
 * to the in-memory DynamoDB or SQS in wire form, and the answer (or the typed exception the SDK
 * would raise) comes back as the SDK would return it. The SDK's middleware (serialisation,
 * signing, endpoint resolution) is skipped, so nothing below `send` can be injected: use these
 * only where no transport fault is (the flood and throughput scenarios). The project's adapters
 * run unchanged on them.
 *
 * What the SDK does with an error the service returns is kept: each call goes through the SDK's
 * own retry middleware and the client's own retry strategy (`@smithy/core/retry`, the client's
 * `config`: DynamoDB 4 attempts, SQS 3, a throttle backed off by up to 1 s × 2^attempt with full
 * jitter, a retry quota per client), so a throttled request is retried, waits and gives up as it
 * would through the full SDK. Optionally a call takes a latency (half before the service answers,
 * half after, as FaultyHandler does), and a component's calls can die with it (`kill`).
 *
 * Why: one call through the SDK's stack costs about a millisecond of CPU here; the flood's
 * million-task backlog is two million calls.
 */
import * as dynamodbErrors from '@aws-sdk/client-dynamodb';
import { DynamoDBServiceException } from '@aws-sdk/client-dynamodb';
import * as sqsErrors from '@aws-sdk/client-sqs';
import { SQSServiceException } from '@aws-sdk/client-sqs';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { retryMiddleware } from '@smithy/core/retry';
import { type HandlerExecutionContext, SMITHY_CONTEXT_KEY } from '@smithy/types';
import { type AwsClients, createAwsClients } from '../../runtime/adapters/aws-clients.ts';
import { DynamoDbError, type InMemoryDynamoDb } from './dynamodb.ts';
import type { CallRecord, FaultyHandlerOptions, LatencyModel } from './faults.ts';
import { type InMemorySqs, SqsError } from './sqs.ts';

/** The subset of a lib-dynamodb command this needs (its key nodes are public fields). */
interface DocumentCommand {
  readonly input: Record<string, unknown>;
  readonly inputKeyNodes: KeyNodes;
  readonly outputKeyNodes: KeyNodes;
  readonly clientCommand: { constructor: { name: string } };
}
type KeyNodes = { readonly [key: string]: KeyNodes } | null;
interface SdkCommand {
  readonly input: Record<string, unknown>;
  constructor: { name: string };
}

const metadata = { httpStatusCode: 400, attempts: 1, totalRetryDelay: 0 };
/** The Document client's translation options, as runtime/adapters/aws-clients.ts sets them. */
const MARSHALL = { removeUndefinedValues: true, convertEmptyValues: false, convertTopLevelContainer: true };
const UNMARSHALL = { convertWithoutMapWrapper: true };

/** `PutItemCommand` → `PutItem`. */
const operationOf = (command: { constructor: { name: string } }) => command.constructor.name.replace(/Command$/, '');

const fromBase64 = (text: string) => new Uint8Array(Buffer.from(text, 'base64'));

/**
 * JSON as the wire carries it (binary as base64), detached from the caller's objects. The raw
 * member is looked at, not the replacer's value: JSON.stringify hands a Buffer (what gzipSync
 * returns) to the replacer already turned into `{ type: 'Buffer', data: [...] }` by its toJSON.
 */
function toWire(value: unknown): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(value, function (this: Record<string, unknown>, key, v) {
      const raw = this[key];
      return raw instanceof Uint8Array ? Buffer.from(raw).toString('base64') : v;
    }),
  ) as Record<string, unknown>;
}

function dynamoDbError(error: DynamoDbError): Error {
  const ErrorClass = (dynamodbErrors as unknown as Record<string, unknown>)[error.type];
  const options = { message: error.message, $metadata: { ...metadata, httpStatusCode: error.status }, ...error.extra };
  if (typeof ErrorClass === 'function' && ErrorClass.prototype instanceof DynamoDBServiceException) {
    return new (ErrorClass as new (o: typeof options) => Error)(options);
  }
  return new DynamoDBServiceException({ ...options, name: error.type, $fault: 'client' });
}

function sqsError(error: SqsError): Error {
  const ErrorClass = (sqsErrors as unknown as Record<string, unknown>)[error.code];
  const options = { message: error.message, $metadata: metadata };
  if (typeof ErrorClass === 'function' && ErrorClass.prototype instanceof SQSServiceException) {
    return new (ErrorClass as new (o: typeof options) => Error)(options);
  }
  return new SQSServiceException({ ...options, name: error.code, $fault: error.senderFault ? 'client' : 'server' });
}

/**
 * The Document client's marshall of one value, the same result as util-dynamodb's `marshall`
 * with MARSHALL's options: strings, safe finite numbers, booleans, null, plain objects and
 * arrays are converted here (the flood marshals millions of attributes); anything else (sets,
 * binaries, NumberValue, bigint, numbers the SDK refuses) goes to the SDK's own code, and its
 * binaries are sent as the wire sends them (base64), never as the caller's buffer.
 */
function marshallValue(value: unknown): unknown {
  switch (typeof value) {
    case 'string':
      return { S: value };
    case 'number':
      return Number.isFinite(value) && Number.isSafeInteger(Math.trunc(value))
        ? { N: String(value) }
        : toWire(marshall(value as never, MARSHALL));
    case 'boolean':
      return { BOOL: value };
    case 'object': {
      if (value === null) return { NULL: true };
      if (Array.isArray(value)) {
        const list: unknown[] = [];
        for (const member of value) {
          if (member !== undefined && typeof member !== 'function') list.push(marshallValue(member));
        }
        return { L: list };
      }
      if (value.constructor === Object) {
        const map: Record<string, unknown> = {};
        for (const key in value) {
          const member = (value as Record<string, unknown>)[key];
          if (member !== undefined && typeof member !== 'function') map[key] = marshallValue(member);
        }
        return { M: map };
      }
      return toWire(marshall(value as never, MARSHALL));
    }
    default:
      return toWire(marshall(value as never, MARSHALL));
  }
}

/**
 * util-dynamodb's `unmarshall` of one attribute value with UNMARSHALL's options, after the SDK's
 * deserialiser has turned base64 binaries into fresh bytes: the same result. S, BOOL, NULL,
 * safe N, M, L, B and BS here; anything else through the SDK's own code.
 */
function unmarshallValue(value: Record<string, unknown>): unknown {
  if (typeof value.S === 'string') return value.S;
  if (typeof value.N === 'string') {
    const number = Number(value.N);
    return number <= Number.MAX_SAFE_INTEGER && number >= Number.MIN_SAFE_INTEGER
      ? number
      : unmarshall(value as never, UNMARSHALL);
  }
  if (value.BOOL !== undefined) return Boolean(value.BOOL);
  if (value.NULL !== undefined) return null;
  if (value.M !== undefined && typeof value.M === 'object') {
    const map: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value.M as Record<string, Record<string, unknown>>)) {
      map[key] = unmarshallValue(member);
    }
    return map;
  }
  if (Array.isArray(value.L)) return value.L.map((member: Record<string, unknown>) => unmarshallValue(member));
  if (typeof value.B === 'string') return fromBase64(value.B);
  if (Array.isArray(value.BS)) return new Set(value.BS.map((member: string) => fromBase64(member)));
  return unmarshall(value as never, UNMARSHALL);
}

// lib-dynamodb's processObj / processKeysInObj / processAllKeysInObj, rule for rule (key nodes:
// `null` = the value itself, `{}` = every member, `{ '*': …}` = every member one level down;
// function members are dropped, and so are members that convert to undefined).
type Apply = (v: unknown) => unknown;

function processObj(value: unknown, apply: Apply, nodes: KeyNodes | undefined): unknown {
  if (value === undefined) return undefined;
  if (nodes === null || nodes === undefined) return apply(value);
  const keys = Object.keys(nodes);
  if (keys.length === 0) return processAllKeys(value as object, apply);
  if (keys.length === 1 && keys[0] === '*') {
    const out: Record<string, unknown> | unknown[] = Array.isArray(value) ? [] : {};
    for (const [k, v] of Object.entries(value ?? {})) {
      if (typeof v !== 'function') (out as Record<string, unknown>)[k] = processObj(v, apply, nodes['*']);
    }
    return out;
  }
  return processKeys(value as Record<string, unknown>, apply, nodes);
}

function processKeys(value: Record<string, unknown>, apply: Apply, nodes: KeyNodes): unknown {
  let out: Record<string, unknown> | unknown[];
  if (Array.isArray(value)) out = value.filter((item) => typeof item !== 'function');
  else {
    out = {};
    for (const [k, v] of Object.entries(value)) if (typeof v !== 'function') out[k] = v;
  }
  for (const [key, child] of Object.entries(nodes ?? {})) {
    if (typeof value[key] === 'function') continue;
    const processed = processObj(value[key], apply, child);
    if (processed !== undefined && typeof processed !== 'function') (out as Record<string, unknown>)[key] = processed;
  }
  return out;
}

function processAllKeys(value: object, apply: Apply): unknown {
  if (Array.isArray(value)) {
    return value.filter((item) => typeof item !== 'function').map((item) => processObj(item, apply, null));
  }
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    if (typeof member === 'function') continue;
    const processed = processObj(member, apply, null);
    if (processed !== undefined && typeof processed !== 'function') out[key] = processed;
  }
  return out;
}

export interface DirectOptions {
  /** Milliseconds each call takes (virtual under the simulation's clock); none by default. */
  readonly latency?: LatencyModel | undefined;
  /** Draws for the latency model (a seeded stream per component). */
  readonly random?: (() => number) | undefined;
  /** Told of every call the service answered or refused (a retry is a call). */
  readonly onCall?: ((call: CallRecord) => void) | undefined;
  /** Told of each DynamoDB request of these operations that reaches the service (its wire input). */
  readonly onRequest?: FaultyHandlerOptions['onRequest'] | undefined;
}

/** A component's clients and the switch that kills them with it. */
export interface DirectComponent {
  readonly clients: AwsClients;
  /** The component died: no call of it is answered any more, those in flight included. */
  kill(): void;
  readonly dead: boolean;
}

const never = new Promise<never>(() => {});

/** Clients for one component that go straight to the simulated account (no faults possible). */
export function directClients(dynamodb: InMemoryDynamoDb, sqs: InMemorySqs, options: DirectOptions = {}): AwsClients {
  return directComponent(dynamodb, sqs, options).clients;
}

/** directClients, with a kill switch (a crashed process, a Lambda timeout). */
export function directComponent(
  dynamodb: InMemoryDynamoDb,
  sqs: InMemorySqs,
  options: DirectOptions = {},
): DirectComponent {
  const clients = createAwsClients({
    region: 'us-east-1',
    credentials: { accessKeyId: 'simulated', secretAccessKey: 'simulated' },
  });
  let dead = false;
  const { latency, onCall } = options;
  const random = options.random ?? Math.random;
  /** One attempt: the latency's first half, the service, the second half; nothing once dead. */
  const attempt = async <T>(service: 'dynamodb' | 'sqs', operation: string, serve: () => Promise<T> | T) => {
    if (dead) return never;
    const delay = latency?.(service, operation, random) ?? 0;
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay / 2));
    if (dead) return never;
    let result: T;
    try {
      result = await serve();
    } catch (error) {
      onCall?.({
        service,
        operation,
        outcome: (error as { name?: string }).name === 'ProvisionedThroughputExceededException' ? 'throttled' : 'ok',
      });
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay / 2));
      if (dead) return never;
      throw error;
    }
    onCall?.({ service, operation, outcome: 'ok' });
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay / 2));
    if (dead) return never;
    return result;
  };
  // Inputs are handed over as they are: the Document client's are freshly marshalled, and the
  // simulated services keep only strings and fresh copies of what they are given.
  const answer = (operation: string, input: Record<string, unknown>) =>
    attempt('dynamodb', operation, () => {
      if (options.onRequest?.operations.has(operation)) options.onRequest.listener(operation, input);
      try {
        return dynamodb.handle(operation, input);
      } catch (error) {
        throw error instanceof DynamoDbError ? dynamoDbError(error) : error;
      }
    });
  const documents = async (command: DocumentCommand) => {
    const input = processKeys(command.input, marshallValue, command.inputKeyNodes) as Record<string, unknown>;
    const output = await withRetries(clients.documents.config, () => answer(operationOf(command.clientCommand), input));
    return processKeys(output, (v) => unmarshallValue(v as Record<string, unknown>), command.outputKeyNodes);
  };
  const queues = (command: SdkCommand, sendOptions?: { abortSignal?: AbortSignal }) =>
    withRetries(
      clients.sqs.config,
      () =>
        attempt('sqs', operationOf(command), async () => {
          try {
            return await sqs.handle(operationOf(command), command.input, sendOptions?.abortSignal);
          } catch (error) {
            throw error instanceof SqsError ? sqsError(error) : error;
          }
        }),
      sendOptions?.abortSignal,
    );
  // Low-level callers' input and answer are copied (the Document path marshals and unmarshalls).
  Object.assign(clients.dynamodb, {
    send: async (command: SdkCommand) =>
      toWire(await withRetries(clients.dynamodb.config, () => answer(operationOf(command), toWire(command.input)))),
  });
  Object.assign(clients.documents, { send: documents });
  Object.assign(clients.sqs, { send: queues });
  return {
    clients,
    kill() {
      dead = true;
    },
    get dead() {
      return dead;
    },
  };
}

/**
 * One call through the SDK's own retry middleware and the client's retry strategy (what `send`
 * runs below the serialiser): retryable errors (throttling, transient) are retried after the
 * strategy's backoff, others thrown at once, and the last error once attempts or the client's
 * retry quota run out.
 */
async function withRetries<T>(config: object, call: () => Promise<T>, abortSignal?: AbortSignal): Promise<T> {
  const context = { [SMITHY_CONTEXT_KEY]: { abortSignal } } as unknown as HandlerExecutionContext;
  const handler = retryMiddleware(config as Parameters<typeof retryMiddleware>[0])(
    async () => ({ response: undefined, output: { ...((await call()) as object), $metadata: {} } }),
    context,
  );
  const { output } = await handler({ input: {} } as never);
  const { $metadata: _metadata, ...rest } = output as Record<string, unknown>;
  return rest as T;
}
