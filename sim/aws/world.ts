/**
 * One simulated AWS account: the in-memory DynamoDB tables and SQS queues of
 * runtime/infra/resources.ts (the one definition of both), and SDK clients for each component
 * (API, scheduler invocation, worker) whose transport injects that component's faults and can
 * be killed with it.
 */
import { type AwsClients, createAwsClients } from '../../runtime/adapters/aws-clients.ts';
import type { Resources } from '../../runtime/app/wiring.ts';
import { seededRandom } from '../../runtime/core/random.ts';
import { CONTROL_TABLE, QUEUES, TABLES, TASKS_TABLE } from '../../runtime/infra/resources.ts';
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
  readonly sqs: Omit<SqsBehaviour, 'random' | 'now'>;
}

export interface Component {
  readonly name: string;
  readonly clients: AwsClients;
  readonly transport: FaultyHandler;
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
    });
    this.dynamodb.recordTables.add(`sim-${TASKS_TABLE.id}`);
    this.sqs = new InMemorySqs(QUEUES, {
      ...options.sqs,
      random: seededRandom(options.seed * 31 + 2),
      now: options.now,
    });
    this.#handler = new InMemoryAwsHandler(this.dynamodb, this.sqs);
    this.resources = {
      tables: { [TASKS_TABLE.id]: `sim-${TASKS_TABLE.id}`, [CONTROL_TABLE.id]: `sim-${CONTROL_TABLE.id}` },
      queueUrls: this.sqs.queueUrls,
    };
  }

  /** SDK clients for one component, its faults drawn from its own seeded stream. */
  component(
    name: string,
    faults: TransportFaults,
    options: {
      latency?: LatencyModel | undefined;
      onCall?: ((call: CallRecord) => void) | undefined;
      onRequest?: FaultyHandlerOptions['onRequest'];
    } = {},
  ): Component {
    const transport = new FaultyHandler(this.#handler, {
      random: seededRandom(this.#seed * 7919 + ++this.#components),
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
