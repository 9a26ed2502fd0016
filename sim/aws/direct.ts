/**
 * SDK clients whose `send(command)` answers from the simulated account directly: the command's
 * input is marshalled as the Document client marshals it (its own key nodes and options), handed
 * to the in-memory DynamoDB or SQS in wire form, and the answer (or the typed exception the SDK
 * would raise) comes back as the SDK would return it. The SDK's middleware (serialisation,
 * signing, endpoint resolution, retries) is skipped, so nothing below `send` can be injected:
 * use these only where no transport fault is (the flood scenario). The project's adapters run
 * unchanged on them.
 *
 * Why: one call through the SDK's stack costs about a millisecond of CPU here; the flood's
 * million-task backlog is two million calls.
 */
import * as dynamodbErrors from '@aws-sdk/client-dynamodb';
import { DynamoDBServiceException } from '@aws-sdk/client-dynamodb';
import * as sqsErrors from '@aws-sdk/client-sqs';
import { SQSServiceException } from '@aws-sdk/client-sqs';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { type AwsClients, createAwsClients } from '../../runtime/adapters/aws-clients.ts';
import { DynamoDbError, type InMemoryDynamoDb } from './dynamodb.ts';
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

/** JSON as the wire carries it (binary as base64), detached from the caller's objects. */
function toWire(value: unknown): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(value, (_key, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v)),
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

// lib-dynamodb's processKeysInObj / processObj, with the same rules (key nodes: `null` = the
// value itself, `{}` = every member, `{ '*': …}` = every member one level down).
function processObj(value: unknown, apply: (v: unknown) => unknown, nodes: KeyNodes | undefined): unknown {
  if (value === undefined) return undefined;
  if (nodes === null || nodes === undefined) return apply(value);
  const keys = Object.keys(nodes);
  if (keys.length === 0) {
    if (Array.isArray(value)) return value.map((item) => apply(item));
    return Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, apply(v)]));
  }
  if (keys.length === 1 && keys[0] === '*') {
    const out: Record<string, unknown> | unknown[] = Array.isArray(value) ? [] : {};
    for (const [k, v] of Object.entries(value as object))
      (out as Record<string, unknown>)[k] = processObj(v, apply, nodes['*']);
    return out;
  }
  return processKeys(value as Record<string, unknown>, apply, nodes);
}

function processKeys(value: Record<string, unknown>, apply: (v: unknown) => unknown, nodes: KeyNodes): unknown {
  const out: Record<string, unknown> | unknown[] = Array.isArray(value) ? [...value] : { ...value };
  for (const [key, child] of Object.entries(nodes ?? {})) {
    const processed = processObj(value[key], apply, child);
    if (processed !== undefined) (out as Record<string, unknown>)[key] = processed;
  }
  return out;
}

/** Clients for one component that go straight to the simulated account (no faults possible). */
export function directClients(dynamodb: InMemoryDynamoDb, sqs: InMemorySqs): AwsClients {
  const clients = createAwsClients({
    region: 'us-east-1',
    credentials: { accessKeyId: 'simulated', secretAccessKey: 'simulated' },
  });
  // Inputs are handed over as they are: the Document client's are freshly marshalled, and the
  // simulated services keep only strings and fresh copies of what they are given.
  const answer = (operation: string, input: Record<string, unknown>) => {
    try {
      return dynamodb.handle(operation, input);
    } catch (error) {
      throw error instanceof DynamoDbError ? dynamoDbError(error) : error;
    }
  };
  const documents = async (command: DocumentCommand) => {
    const input = processKeys(
      command.input,
      (v) => marshall(v as Record<string, unknown>, MARSHALL),
      command.inputKeyNodes,
    ) as Record<string, unknown>;
    const output = answer(operationOf(command.clientCommand), input);
    return processKeys(output, (v) => unmarshall(v as Record<string, never>, UNMARSHALL), command.outputKeyNodes);
  };
  const queues = async (command: SdkCommand, options?: { abortSignal?: AbortSignal }) => {
    try {
      return await sqs.handle(operationOf(command), command.input, options?.abortSignal);
    } catch (error) {
      throw error instanceof SqsError ? sqsError(error) : error;
    }
  };
  // Low-level callers' input and answer are copied (the Document path marshals and unmarshalls).
  Object.assign(clients.dynamodb, {
    send: async (command: SdkCommand) => toWire(answer(operationOf(command), toWire(command.input))),
  });
  Object.assign(clients.documents, { send: documents });
  Object.assign(clients.sqs, { send: queues });
  return clients;
}
