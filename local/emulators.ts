/**
 * The embedded AWS emulators for the local runtime and the tests: dynalite (DynamoDB API,
 * LevelDB on disk when given a path) and fauxqs (SQS and S3 APIs, SQLite on disk when given a
 * data directory). Tables and queues are created from the shared definitions in
 * runtime/infra/resources.ts, exactly as the CDK stack creates them on AWS.
 */
import { mkdirSync } from 'node:fs';
import { type AddressInfo, type ListenOptions, Server } from 'node:net';
import { join } from 'node:path';
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
  type TableDescription,
  UpdateTableCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
// dynalite ships no types; its factory returns a node http.Server.
import dynalite from 'dynalite';
import { startFauxqs } from 'fauxqs';
import {
  type AwsClients,
  type AwsEndpoints,
  createAwsClients,
  localEndpoints,
} from '../runtime/adapters/aws-clients.ts';
import { type QueueDefinition, queuesFor, TABLES, type TableDefinition } from '../runtime/infra/resources.ts';
import { createTableInput } from '../runtime/infra/table-input.ts';
import { closeDynaliteIterators } from './dynalite-iterators.ts';
import { batchExecuteStatement } from './dynalite-partiql.ts';
import { withOperations } from './dynalite-shim.ts';
import { type ExternalAws, externalEndpoints } from './external-aws.ts';
import { type IndexRepairResult, markDynaliteStoreClean, prepareDynaliteStore } from './index-repair.ts';

export interface Emulators {
  readonly clients: AwsClients;
  /** What `clients` were built from (endpoints, region, credentials). */
  readonly endpoints: AwsEndpoints;
  readonly dynamodbUrl: string;
  readonly sqsUrl: string;
  /** Set when the tables and queues live at an external AWS-compatible endpoint (no emulator runs). */
  readonly external?: ExternalAws | undefined;
  /** Physical table names by table id. */
  readonly tables: Readonly<Record<string, string>>;
  /** Queue URLs by queue id. */
  readonly queueUrls: Readonly<Record<string, string>>;
  /** Set when the persisted DynamoDB store was not shut down cleanly and its indexes were rebuilt. */
  readonly indexRepair?: IndexRepairResult | undefined;
  stop(): Promise<void>;
}

export interface EmulatorOptions {
  /** Persist state under this folder (`dynamodb/` and `sqs/`); in memory when absent. */
  readonly dataDir?: string | undefined;
  /** Prefix of physical table names. */
  readonly prefix?: string;
  /** Bind address of both emulators. @default '127.0.0.1' */
  readonly host?: string | undefined;
  /** `scheduler.shards`: the tier and completions queues of this many shards. @default 1 */
  readonly shards?: number | undefined;
}

export async function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const prefix = options.prefix ?? 'scheduler';
  const dynamoPath = options.dataDir ? join(options.dataDir, 'dynamodb') : undefined;
  const sqsPath = options.dataDir ? join(options.dataDir, 'sqs') : undefined;
  if (dynamoPath) mkdirSync(dynamoPath, { recursive: true });
  if (sqsPath) mkdirSync(sqsPath, { recursive: true });
  // dynalite's writes are not crash-atomic: after a kill, rebuild its indexes from the items.
  // Also adds indexes defined since the store was written (dynalite cannot add one to a table).
  const expectedTables = TABLES.map((table) => createTableInput(table, `${prefix}-${table.id}`));
  const indexRepair = dynamoPath ? await prepareDynaliteStore(dynamoPath, expectedTables) : undefined;

  // createTableMs 0: tables are ACTIVE at once (dynalite simulates AWS's delay by default).
  const host = options.host ?? '127.0.0.1';
  // Without it every Query and Scan leaks a LevelDB iterator (memory and disk grow per task).
  closeDynaliteIterators();
  // With BatchExecuteStatement (the INSERTs of a batch's creates), which dynalite lacks.
  const dynamoServer = withOperations(
    () => dynalite({ path: dynamoPath, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 }),
    { BatchExecuteStatement: batchExecuteStatement },
  );
  await new Promise<void>((resolve, reject) => {
    dynamoServer.once('error', reject);
    dynamoServer.listen(0, host, () => resolve());
  });
  const dynamodbUrl = `http://${urlHost(host)}:${(dynamoServer.address() as AddressInfo).port}`;

  const sqsServer = await listeningOn(host, () =>
    startFauxqs({ port: 0, logger: false, host, ...(sqsPath ? { dataDir: sqsPath } : {}) }),
  );
  const sqsUrl = `http://${urlHost(host)}:${sqsServer.port}`;

  const endpoints = localEndpoints(dynamodbUrl, sqsUrl);
  const clients = createAwsClients(endpoints);
  const { tables, queueUrls } = await ensureResources(clients, prefix, options.shards ?? 1);

  return {
    clients,
    endpoints,
    dynamodbUrl,
    sqsUrl,
    tables,
    queueUrls,
    indexRepair,
    async stop() {
      destroyClients(clients);
      await sqsServer.stop();
      const closed = await new Promise<boolean>((resolve) => dynamoServer.close((error) => resolve(!error)));
      // A forced close may have cut writes short: leave the marker absent so the next start repairs.
      if (dynamoPath && closed) markDynaliteStoreClean(dynamoPath);
    },
  };
}

/**
 * The same tables and queues at an external AWS-compatible endpoint (local/external-aws.ts):
 * created from the shared definitions where missing, an existing table given the indexes it
 * lacks; nothing is started here and stop() only closes the clients.
 */
export async function connectExternalAws(
  external: ExternalAws,
  options: { prefix?: string; shards?: number } = {},
): Promise<Emulators> {
  const prefix = options.prefix ?? 'scheduler';
  const endpoints = externalEndpoints(external);
  const clients = createAwsClients(endpoints);
  try {
    const { tables, queueUrls } = await ensureResources(clients, prefix, options.shards ?? 1);
    return {
      clients,
      endpoints,
      dynamodbUrl: external.dynamodb,
      sqsUrl: external.sqs,
      external,
      tables,
      queueUrls,
      async stop() {
        destroyClients(clients);
      },
    };
  } catch (error) {
    destroyClients(clients);
    throw new ExternalAwsError(external, error);
  }
}

/** The external endpoint could not be reached or refused the set-up: one line naming it. */
export class ExternalAwsError extends Error {
  constructor(external: ExternalAws, cause: unknown) {
    const reason = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(`Cannot set up the tables and queues at ${external.dynamodb} (${external.variables.join(', ')}): ${reason}`, {
      cause,
    });
    this.name = 'ExternalAwsError';
  }
}

const WILDCARDS = new Set(['0.0.0.0', '::', '']);
let listenRedirect: Promise<unknown> = Promise.resolve();

/**
 * Runs `start` with every wildcard listen in this process redirected to `host`. fauxqs 2.4.1
 * calls fastify's `app.listen({ port, host: '0.0.0.0' })` whatever `host` it is given, which
 * put every queue and bucket on the network, unauthenticated; and its server object is handed
 * back only once it listens, so the address cannot be corrected afterwards. Node's listen is
 * wrapped only while `start` runs, one call at a time, and only turns a wildcard address into
 * `host`: at worst another server starting in the same moment also binds to `host` (no wider).
 * When `host` is itself a wildcard nothing changes.
 */
async function listeningOn<T>(host: string, start: () => Promise<T>): Promise<T> {
  const run = listenRedirect.then(async () => {
    const listen = Server.prototype.listen;
    Server.prototype.listen = function listenOnHost(this: Server, ...args: unknown[]) {
      const [first] = args;
      if (first && typeof first === 'object' && WILDCARDS.has((first as ListenOptions).host ?? '')) {
        args[0] = { ...(first as ListenOptions), host };
      }
      return (listen as (...a: unknown[]) => Server).apply(this, args);
    } as typeof listen;
    try {
      return await start();
    } finally {
      Server.prototype.listen = listen;
    }
  });
  listenRedirect = run.catch(() => undefined);
  return run;
}

/** A host as it goes in a URL: a wildcard bind is reached on loopback; IPv6 gets brackets. */
function urlHost(host: string): string {
  if (WILDCARDS.has(host)) return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * The table as the definition says (createTableInput, which the CDK construct mirrors): created
 * when missing; an existing table given each index it lacks (a store written by an older
 * version), one UpdateTable at a time as DynamoDB allows, waiting until the index is ACTIVE.
 * dynalite cannot add an index; its store is brought up to date beforehand (index-repair.ts).
 */
async function ensureTable(client: DynamoDBClient, table: TableDefinition, tableName: string): Promise<string> {
  const input = createTableInput(table, tableName);
  let existing: TableDescription | undefined;
  try {
    existing = (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  if (!existing) {
    await client.send(new CreateTableCommand(input));
    return tableName;
  }
  const present = new Set((existing.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
  for (const index of input.GlobalSecondaryIndexes ?? []) {
    if (present.has(index.IndexName)) continue;
    await client.send(
      new UpdateTableCommand({
        TableName: tableName,
        AttributeDefinitions: input.AttributeDefinitions,
        GlobalSecondaryIndexUpdates: [{ Create: index }],
      }),
    );
    await waitForIndex(client, tableName, index.IndexName!);
  }
  return tableName;
}

/** Polls until the new index is ACTIVE (at most INDEX_WAIT_MS; an endpoint building it for longer is refused). */
const INDEX_WAIT_MS = 10 * 60_000;
async function waitForIndex(client: DynamoDBClient, tableName: string, indexName: string): Promise<void> {
  for (let waited = 0; waited < INDEX_WAIT_MS; waited += 1_000) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const status = Table?.GlobalSecondaryIndexes?.find((index) => index.IndexName === indexName)?.IndexStatus;
    if (status === undefined || status === 'ACTIVE') return;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  throw new Error(`index ${indexName} of ${tableName} was not ACTIVE after ${INDEX_WAIT_MS / 60_000} minutes`);
}

async function ensureQueues(client: SQSClient, queues: readonly QueueDefinition[]): Promise<Record<string, string>> {
  const urls: Record<string, string> = {};
  const queueUrl = async (name: string, attributes: Record<string, string>) => {
    try {
      const existing = await client.send(new GetQueueUrlCommand({ QueueName: name }));
      if (existing.QueueUrl) return existing.QueueUrl;
    } catch {
      // Not there yet: create it below.
    }
    const created = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    if (!created.QueueUrl) throw new Error(`Queue ${name} was not created`);
    return created.QueueUrl;
  };
  for (const queue of queues) {
    let redrive: Record<string, string> = {};
    if (queue.deadLetter) {
      const dlqUrl = await queueUrl(queue.deadLetter.id, {
        MessageRetentionPeriod: String(queue.deadLetter.retentionSeconds),
      });
      urls[queue.deadLetter.id] = dlqUrl;
      const attributes = await client.send(
        new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }),
      );
      const dlqArn = attributes.Attributes?.QueueArn;
      if (!dlqArn) throw new Error(`Queue ${queue.deadLetter.id} has no ARN`);
      redrive = {
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn,
          maxReceiveCount: queue.deadLetter.maxReceiveCount,
        }),
      };
    }
    urls[queue.id] = await queueUrl(queue.id, {
      VisibilityTimeout: String(queue.visibilityTimeoutSeconds),
      MessageRetentionPeriod: String(queue.retentionSeconds),
      ...redrive,
    });
  }
  return urls;
}

/** The shared tables and queues, created where missing (an existing table gets the indexes it lacks). */
async function ensureResources(clients: Emulators['clients'], prefix: string, shards: number) {
  const tables: Record<string, string> = {};
  for (const table of TABLES) tables[table.id] = await ensureTable(clients.dynamodb, table, `${prefix}-${table.id}`);
  const queueUrls = await ensureQueues(clients.sqs, queuesFor(shards));
  return { tables, queueUrls };
}

function destroyClients(clients: Emulators['clients']): void {
  clients.dynamodb.destroy();
  clients.sqs.destroy();
  clients.s3.destroy();
}
