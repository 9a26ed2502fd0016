/**
 * One simulated AWS account: the in-memory DynamoDB tables and SQS queues of
 * runtime/infra/resources.ts (the one definition of both), and SDK clients for each component
 * (API, scheduler invocation, worker) whose transport injects that component's faults and can
 * be killed with it.
 */
import { type AwsClients, createAwsClients } from '../../runtime/adapters/aws-clients.ts';
import type { Resources } from '../../runtime/app/wiring.ts';
import { seededRandom } from '../../runtime/core/random.ts';
import { CONTROL_TABLE, QUEUES, type QueueDefinition, TABLES, TASKS_TABLE } from '../../runtime/infra/resources.ts';
import { DYNAMODB_PARTITION_LIMITS, type PartitionLimits } from './capacity.ts';
import { directComponent } from './direct.ts';
import { InMemoryDynamoDb } from './dynamodb.ts';
import {
  type CallRecord,
  FaultyHandler,
  type FaultyHandlerOptions,
  type LatencyModel,
  type TransportFaults,
} from './faults.ts';
import { InMemoryAwsHandler } from './http.ts';
import { InMemorySqs, type SqsBehaviour } from './sqs.ts';

export interface WorldOptions {
  readonly seed: number;
  readonly now: () => number;
  /** Mean lag of a write reaching the indexes, ms. */
  readonly indexLagMs: number;
  readonly eventualLagMs: number;
  readonly unprocessedRate: number;
  /**
   * DynamoDB's per-partition throughput (default: AWS's 1,000 write and 3,000 read units a second
   * per partition key value); `null`: unlimited. `dynamodb.throughput.limits` changes it mid-run.
   */
  readonly partitionLimits?: PartitionLimits | null;
  readonly sqs: Omit<SqsBehaviour, 'random' | 'now'>;
  /** The queues to create (`queuesFor(scheduler.shards)`). @default QUEUES (one scheduler shard) */
  readonly queues?: readonly QueueDefinition[];
}

/** What a driver can do to a component's calls: kill them with it, or hold them for a while. */
export interface ComponentTransport {
  kill(): void;
  stall(ms: number): void;
  readonly dead: boolean;
}

export interface Component {
  readonly name: string;
  readonly clients: AwsClients;
  readonly transport: ComponentTransport;
}

export class SimulatedAws {
  readonly dynamodb: InMemoryDynamoDb;
  readonly sqs: InMemorySqs;
  readonly resources: Resources;
  readonly #handler: InMemoryAwsHandler;
  readonly #seed: number;
  #components = 0;

  constructor(options: WorldOptions) {
    this.#seed = options.seed;
    const tables = TABLES.map((definition) => ({ name: `sim-${definition.id}`, definition }));
    this.dynamodb = new InMemoryDynamoDb(tables, {
      random: seededRandom(options.seed * 31 + 1),
      now: options.now,
      indexLagMs: options.indexLagMs,
      eventualLagMs: options.eventualLagMs,
      unprocessedRate: options.unprocessedRate,
      partitionLimits:
        options.partitionLimits === null ? undefined : (options.partitionLimits ?? DYNAMODB_PARTITION_LIMITS),
    });
    this.dynamodb.recordTables.add(`sim-${TASKS_TABLE.id}`);
    this.sqs = new InMemorySqs(options.queues ?? QUEUES, {
      ...options.sqs,
      random: seededRandom(options.seed * 31 + 2),
      now: options.now,
    });
    this.#handler = new InMemoryAwsHandler(this.dynamodb, this.sqs);
    this.resources = {
      tables: Object.fromEntries(TABLES.map((table) => [table.id, `sim-${table.id}`])),
      queueUrls: this.sqs.queueUrls,
    };
  }

  /**
   * SDK clients for one component, its faults and latencies drawn from its own seeded stream.
   * `direct`: clients that hand each command to the account without the SDK's serialisation
   * (sim/aws/direct.ts: the SDK's retries kept, about a fifth of the CPU), where no transport
   * fault can be injected (they must be zero; a stall is refused).
   */
  component(
    name: string,
    faults: TransportFaults,
    options: {
      latency?: LatencyModel | undefined;
      onCall?: ((call: CallRecord) => void) | undefined;
      onRequest?: FaultyHandlerOptions['onRequest'];
      direct?: boolean | undefined;
    } = {},
  ): Component {
    const random = seededRandom(this.#seed * 7919 + ++this.#components);
    if (options.direct) {
      if (faults.lostResponseRate > 0 || faults.throttleRate > 0) {
        throw new Error('Direct clients cannot inject transport faults: use the SDK transport');
      }
      const direct = directComponent(this.dynamodb, this.sqs, {
        latency: options.latency,
        random,
        onCall: options.onCall,
        onRequest: options.onRequest,
      });
      return {
        name,
        clients: direct.clients,
        transport: {
          kill: () => direct.kill(),
          stall: () => {
            throw new Error('Direct clients cannot stall: use the SDK transport');
          },
          get dead() {
            return direct.dead;
          },
        },
      };
    }
    const transport = new FaultyHandler(this.#handler, {
      random,
      faults,
      latency: options.latency,
      onCall: options.onCall,
      ...(options.onRequest ? { onRequest: options.onRequest } : {}),
    });
    const clients = createAwsClients({
      region: 'us-east-1',
      credentials: { accessKeyId: 'simulated', secretAccessKey: 'simulated' },
      requestHandler: transport,
    });
    // The simulated services check no signature and no user agent: skip building them (a fifth
    // of a call's CPU). Nothing they do draws randomness or touches what the services answer.
    // (The Document client shares the DynamoDB client's middleware stack.)
    for (const client of [clients.dynamodb, clients.sqs]) {
      client.middlewareStack.remove('httpSigningMiddleware');
      client.middlewareStack.remove('getUserAgentMiddleware');
    }
    return { name, clients, transport };
  }
}
