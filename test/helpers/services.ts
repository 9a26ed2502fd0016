/**
 * Shared fixture: the in-memory emulators (dynalite + fauxqs) with the real tables and queues,
 * and the services built on them exactly as the local runtime builds them.
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { type ConfigInput, parseConfig } from '../../runtime/core/config.ts';
import { CONTROL_TABLE, ENV, LEASES_TABLE, QUEUES, TASKS_TABLE } from '../../runtime/infra/resources.ts';
import type { TaskTypeRegistry } from '../../runtime/task-types/define.ts';

export interface TestServices extends Services {
  readonly emulators: Emulators;
  stop(): Promise<void>;
}

export interface TestServicesOptions {
  /** Configuration (defaults applied); the built-in defaults when absent. */
  readonly config?: ConfigInput;
  readonly registry?: TaskTypeRegistry;
  readonly now?: () => Date;
  /** Persist the emulators' state here (in memory when absent). */
  readonly dataDir?: string;
  /** The task store's event outbox, as the local runtime sets it with webhooks. */
  readonly events?: {
    readonly outbox: boolean;
    readonly dependencyOutbox?: boolean;
    readonly onOutboxEvent?: (taskId: string) => void;
  };
}

/** Start in-memory emulators and build the services on them. Call `stop()` in `afterAll`. */
export async function startTestServices(options: TestServicesOptions = {}): Promise<TestServices> {
  const config = parseConfig(options.config ?? {}, 'test configuration');
  const emulators = await startEmulators({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    shards: config.scheduler.shards,
  });
  const services = buildServices({
    config,
    clients: emulators.clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
    ...(options.registry ? { registry: options.registry } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.events ? { events: options.events } : {}),
  });
  return { ...services, emulators, stop: () => emulators.stop() };
}

/**
 * The environment a deployed Lambda handler gets from the stack, pointed at the emulators.
 * Handler modules build their services from it at load time: import them after setting it.
 */
export function lambdaEnvironment(emulators: Emulators, config: ConfigInput): Record<string, string> {
  return {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: emulators.dynamodbUrl,
    AWS_ENDPOINT_URL_SQS: emulators.sqsUrl,
    POWERTOOLS_LOG_LEVEL: 'ERROR',
    POWERTOOLS_METRICS_DISABLED: 'true',
    [ENV.tasksTable]: emulators.tables[TASKS_TABLE.id]!,
    [ENV.controlTable]: emulators.tables[CONTROL_TABLE.id]!,
    [ENV.leasesTable]: emulators.tables[LEASES_TABLE.id]!,
    [ENV.queueUrls]: JSON.stringify(emulators.queueUrls),
    [ENV.configJson]: JSON.stringify(config),
  };
}

/** What a request can have written: items per table and messages waiting per queue. */
export interface WriteSnapshot {
  readonly tasks: number;
  readonly control: number;
  /** Visible + delayed + in-flight messages, by queue id. */
  readonly queues: Readonly<Record<string, number>>;
}

/**
 * Count everything a request could have written, to prove a refused request wrote nothing.
 * Consistent scans: the tables in tests are small.
 */
export async function snapshotWrites(services: TestServices): Promise<WriteSnapshot> {
  const [tasks, control] = await Promise.all([
    countItems(services, services.emulators.tables[TASKS_TABLE.id]!),
    countItems(services, services.emulators.tables[CONTROL_TABLE.id]!),
  ]);
  const queues: Record<string, number> = {};
  await Promise.all(
    QUEUES.map(async (queue) => {
      const { Attributes } = await services.clients.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: services.emulators.queueUrls[queue.id],
          AttributeNames: [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesDelayed',
            'ApproximateNumberOfMessagesNotVisible',
          ],
        }),
      );
      queues[queue.id] =
        Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
        Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0) +
        Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
    }),
  );
  return { tasks, control, queues };
}

async function countItems(services: TestServices, tableName: string): Promise<number> {
  let count = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const response = await services.clients.documents.send(
      new ScanCommand({ TableName: tableName, Select: 'COUNT', ConsistentRead: true, ExclusiveStartKey: startKey }),
    );
    count += response.Count ?? 0;
    startKey = response.LastEvaluatedKey;
  } while (startKey);
  return count;
}
