import { Duration, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { MAX_SCHEDULER_SHARDS } from '../runtime/core/shards.ts';
import {
  COMPLETIONS_QUEUE,
  completionQueuesFor,
  QUEUES,
  type QueueDefinition,
  TIER_QUEUES,
  tierQueuesFor,
  WORKER_QUEUES,
} from '../runtime/infra/resources.ts';

/** A queue together with the definition it was built from (consumers check their timeout against it). */
export interface DefinedQueue {
  readonly definition: QueueDefinition;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue?: sqs.Queue;
}

export interface TaskQueuesProps {
  /**
   * Queues are named `${namePrefix}-${queue id}`: operators find them by name, and the short
   * names keep QUEUE_URLS small (Lambda allows 4 KB of environment in all).
   */
  readonly namePrefix: string;
  /** @default QUEUES from runtime/infra/resources.ts (tiers, worker pools, completions) */
  readonly definitions?: readonly QueueDefinition[];
}

/** SQS queue names: letters, digits, hyphens and underscores, at most 80 characters. */
const MAX_QUEUE_NAME_LENGTH = 80;

const MAX_VISIBILITY_SECONDS = 12 * 3600;
const MIN_RETENTION_SECONDS = 60;
const MAX_RETENTION_SECONDS = 14 * 86_400;
/**
 * Dead-letter queues are drained by the redrive function; the shared definitions leave their
 * visibility to the deployment, so it is pinned here (SQS's default) and checked against the
 * redrive function's timeout.
 */
export const DEAD_LETTER_VISIBILITY_SECONDS = 30;
/** AWS advises against 1 (a message can count as received without reaching a consumer). */
const MIN_MAX_RECEIVE_COUNT = 3;

/**
 * Every queue and dead-letter queue from the shared definitions: SSE-SQS encryption, TLS-only
 * queue policies, visibility, retention and redrive exactly as defined.
 */
export class TaskQueues extends Construct {
  /** Queue id (e.g. `tier-high`) → queue. */
  public readonly byId: ReadonlyMap<string, DefinedQueue>;
  /** Every shard's tier queues. */
  public readonly tiers: readonly DefinedQueue[];
  public readonly workers: readonly DefinedQueue[];
  /** Shard 0's completions queue. */
  public readonly completions: DefinedQueue;
  /** Every shard's completions queue. */
  public readonly completionQueues: readonly DefinedQueue[];

  constructor(scope: Construct, id: string, props: TaskQueuesProps) {
    super(scope, id);
    const definitions = props.definitions ?? QUEUES;
    const queueName = (queueId: string) => `${props.namePrefix}-${queueId}`;
    for (const definition of definitions) {
      for (const queueId of [definition.id, ...(definition.deadLetter ? [definition.deadLetter.id] : [])]) {
        const name = queueName(queueId);
        if (name.length > MAX_QUEUE_NAME_LENGTH || !/^[A-Za-z0-9_-]+$/.test(name)) {
          throw new Error(
            `TaskQueues: queue name "${name}" must be at most 80 letters, digits, hyphens or underscores; use a shorter name prefix (stack name)`,
          );
        }
      }
    }
    definitions.forEach(validateDefinition);
    // The workers, scheduler and API are wired to these ids; a definition list without one cannot deploy.
    for (const required of [...TIER_QUEUES, ...WORKER_QUEUES, COMPLETIONS_QUEUE]) {
      if (!definitions.some((definition) => definition.id === required.id)) {
        throw new Error(`TaskQueues: definitions must include queue "${required.id}"`);
      }
    }

    const byId = new Map<string, DefinedQueue>();
    for (const definition of definitions) {
      let deadLetterQueue: sqs.Queue | undefined;
      if (definition.deadLetter) {
        deadLetterQueue = new sqs.Queue(this, constructId(definition.deadLetter.id), {
          queueName: queueName(definition.deadLetter.id),
          visibilityTimeout: Duration.seconds(DEAD_LETTER_VISIBILITY_SECONDS),
          retentionPeriod: Duration.seconds(definition.deadLetter.retentionSeconds),
          encryption: sqs.QueueEncryption.SQS_MANAGED,
          enforceSSL: true,
        });
      }
      const queue = new sqs.Queue(this, constructId(definition.id), {
        queueName: queueName(definition.id),
        visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
        retentionPeriod: Duration.seconds(definition.retentionSeconds),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        ...(deadLetterQueue && definition.deadLetter
          ? { deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: definition.deadLetter.maxReceiveCount } }
          : {}),
      });
      if (!definition.deadLetter) {
        Validations.of(queue).acknowledge({
          id: 'AwsSolutions-SQS3',
          reason:
            'Advisory messages: losing one only delays freeing capacity until the scheduler reconciles leases from DynamoDB, so a dead-letter queue would hold nothing worth acting on.',
        });
      }
      byId.set(definition.id, { definition, queue, deadLetterQueue });
    }
    this.byId = byId;

    const shardTierIds = new Set(tierQueuesFor(MAX_SCHEDULER_SHARDS).map((definition) => definition.id));
    const shardCompletionIds = new Set(completionQueuesFor(MAX_SCHEDULER_SHARDS).map((definition) => definition.id));
    this.tiers = definitions.filter((definition) => shardTierIds.has(definition.id)).map((d) => this.get(d.id));
    this.workers = WORKER_QUEUES.map((definition) => this.get(definition.id));
    this.completions = this.get(COMPLETIONS_QUEUE.id);
    this.completionQueues = definitions
      .filter((definition) => shardCompletionIds.has(definition.id))
      .map((definition) => this.get(definition.id));
  }

  /** The queue defined under `id`; throws when no definition has that id. */
  public get(id: string): DefinedQueue {
    const found = this.byId.get(id);
    if (!found) throw new Error(`TaskQueues: no queue "${id}" (known: ${[...this.byId.keys()].join(', ')})`);
    return found;
  }

  /**
   * Every queue and dead-letter queue by id, as the QUEUE_URLS environment variable lists them;
   * with `only`, the queues of those ids (and their dead-letter queues).
   */
  public urlsById(only?: ReadonlySet<string>): Record<string, string> {
    const urls: Record<string, string> = {};
    for (const { definition, queue, deadLetterQueue } of this.byId.values()) {
      if (only && !only.has(definition.id)) continue;
      urls[definition.id] = queue.queueUrl;
      if (definition.deadLetter && deadLetterQueue) urls[definition.deadLetter.id] = deadLetterQueue.queueUrl;
    }
    return urls;
  }

  /** Every dead-letter queue, with the id of the queue it serves. */
  public deadLetterQueues(): { readonly id: string; readonly sourceId: string; readonly queue: sqs.Queue }[] {
    return [...this.byId.values()].flatMap(({ definition, deadLetterQueue }) =>
      definition.deadLetter && deadLetterQueue
        ? [{ id: definition.deadLetter.id, sourceId: definition.id, queue: deadLetterQueue }]
        : [],
    );
  }
}

/** `tier-critical-dlq` → `TierCriticalDlq`. */
export const constructId = (queueId: string): string =>
  queueId
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');

function validateDefinition(definition: QueueDefinition): void {
  const { id, visibilityTimeoutSeconds, retentionSeconds, deadLetter } = definition;
  if (visibilityTimeoutSeconds < 0 || visibilityTimeoutSeconds > MAX_VISIBILITY_SECONDS) {
    throw new Error(`Queue ${id}: visibilityTimeoutSeconds must be from 0 to 43200, got ${visibilityTimeoutSeconds}`);
  }
  if (retentionSeconds < MIN_RETENTION_SECONDS || retentionSeconds > MAX_RETENTION_SECONDS) {
    throw new Error(`Queue ${id}: retentionSeconds must be from 60 to 1209600, got ${retentionSeconds}`);
  }
  if (!deadLetter) return;
  if (!Number.isInteger(deadLetter.maxReceiveCount) || deadLetter.maxReceiveCount < MIN_MAX_RECEIVE_COUNT) {
    throw new Error(`Queue ${id}: maxReceiveCount must be an integer of at least 3, got ${deadLetter.maxReceiveCount}`);
  }
  // A dead letter keeps its original enqueue time, so a shorter-lived DLQ would drop it early.
  if (deadLetter.retentionSeconds < retentionSeconds || deadLetter.retentionSeconds > MAX_RETENTION_SECONDS) {
    throw new Error(
      `Queue ${id}: dead-letter retention (${deadLetter.retentionSeconds} s) must be at least the queue's own (${retentionSeconds} s) and at most 1209600 s`,
    );
  }
}
