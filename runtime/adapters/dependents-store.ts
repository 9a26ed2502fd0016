/**
 * Who depends on a task: the edges of `dependsOn`, read when the task ends (app/dependencies.ts).
 *
 * A dependency's dependents are kept in DEPENDENT_BUCKETS small items of the task table, keyed
 * `dependents#<dependencyId>#<bucket>` (`#` is not allowed in a task id, so no task collides),
 * the bucket a hash of the dependent's id. Not in the dependency's own item: every state write of a
 * task rewrites its whole item, and 1,000 dependents' registrations would each rewrite a growing
 * one. 1,000 dependents spread over 16 buckets are about 63 ids (≈2.5 KB) an item, far below the
 * 400 KB limit, and registrations contend on 16 items rather than one. The ending task reads all
 * 16 in one consistent BatchGetItem (a table read: no index lag).
 *
 * Every write is a conditional PutItem on the bucket's `version` (read-modify-write), so adding an
 * id twice, or a retried write whose response was lost, leaves one copy.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
} from '@aws-sdk/lib-dynamodb';
import { ConcurrentUpdateError } from '../core/errors.ts';
import { taskIdHash } from './index-keys.ts';

/** Buckets per dependency (see the header). */
export const DEPENDENT_BUCKETS = 16;

/** Prefix of the bucket items' keys in the task table; never the start of a task id. */
export const DEPENDENTS_KEY_PREFIX = 'dependents#';

/**
 * An unsettled bucket is deleted by DynamoDB TTL after this long (a dependency may wait up to a
 * year for its `runAt`, and then run): settled buckets are deleted at once.
 */
const BUCKET_RETENTION_SECONDS = 400 * 86_400;

const bucketKey = (dependencyId: string, bucket: number) => `${DEPENDENTS_KEY_PREFIX}${dependencyId}#${bucket}`;

/** Whether a task-table key is a dependents bucket rather than a task. */
export const isDependentsKey = (taskId: string): boolean => taskId.startsWith(DEPENDENTS_KEY_PREFIX);

interface Bucket {
  readonly taskId: string;
  readonly dependencyId: string;
  readonly dependents: string[];
  readonly version: number;
  readonly expiresAt: number;
}

/** One bucket as read: its version (to delete exactly what was read) and its dependents. */
export interface DependentsBucket {
  readonly key: string;
  readonly version: number;
  readonly dependents: readonly string[];
}

/** The dependents of one task as read: all of them, and bucket by bucket (in key order). */
export interface Dependents {
  readonly dependents: string[];
  readonly buckets: readonly DependentsBucket[];
}

export class DependentsStore {
  readonly #documents: DynamoDBDocumentClient;
  readonly #tableName: string;
  readonly #nowMs: () => number;

  constructor(documents: DynamoDBDocumentClient, tableName: string, nowMs: () => number = Date.now) {
    this.#documents = documents;
    this.#tableName = tableName;
    this.#nowMs = nowMs;
  }

  /**
   * Record that `dependentId` depends on `dependencyId` (idempotent): read its bucket consistently,
   * add the id if missing, write back on the version read; on a concurrent write, again.
   */
  async add(dependencyId: string, dependentId: string): Promise<void> {
    const key = bucketKey(dependencyId, taskIdHash(dependentId) % DEPENDENT_BUCKETS);
    for (let attempt = 1; ; attempt++) {
      const { Item } = await this.#documents.send(
        new GetCommand({ TableName: this.#tableName, Key: { taskId: key }, ConsistentRead: true }),
      );
      const current = Item as Bucket | undefined;
      if (current?.dependents.includes(dependentId)) return;
      const next: Bucket = {
        taskId: key,
        dependencyId,
        dependents: [...(current?.dependents ?? []), dependentId],
        version: (current?.version ?? 0) + 1,
        expiresAt: Math.floor(this.#nowMs() / 1000) + BUCKET_RETENTION_SECONDS,
      };
      try {
        await this.#documents.send(
          new PutCommand({
            TableName: this.#tableName,
            Item: next,
            ConditionExpression: current ? '#version = :version' : 'attribute_not_exists(taskId)',
            ...(current
              ? {
                  ExpressionAttributeNames: { '#version': 'version' },
                  ExpressionAttributeValues: { ':version': current.version },
                }
              : {}),
          }),
        );
        return;
      } catch (error) {
        // Another registration wrote the bucket first (or ours landed and its answer was lost): read again.
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        if (attempt >= 50)
          throw new ConcurrentUpdateError(key, { states: [], version: current?.version ?? 0 }, undefined);
        await sleep(Math.random() * 20 * Math.min(attempt, 10));
      }
    }
  }

  /** Every dependent registered on `dependencyId`, read consistently from all its buckets. */
  async of(dependencyId: string): Promise<Dependents> {
    let keys: Record<string, unknown>[] = Array.from({ length: DEPENDENT_BUCKETS }, (_, bucket) => ({
      taskId: bucketKey(dependencyId, bucket),
    }));
    const dependents = new Set<string>();
    const buckets: DependentsBucket[] = [];
    for (let round = 0; keys.length > 0; round++) {
      const response = await this.#documents.send(
        new BatchGetCommand({ RequestItems: { [this.#tableName]: { Keys: keys, ConsistentRead: true } } }),
      );
      for (const item of (response.Responses?.[this.#tableName] ?? []) as Bucket[]) {
        for (const id of item.dependents) dependents.add(id);
        buckets.push({ key: item.taskId, version: item.version, dependents: item.dependents });
      }
      keys = (response.UnprocessedKeys?.[this.#tableName]?.Keys as Record<string, unknown>[] | undefined) ?? [];
      if (keys.length > 0) await sleep(Math.min(1000, 25 * 2 ** round));
    }
    buckets.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return { dependents: [...dependents].sort(), buckets };
  }

  /**
   * Delete the buckets as read, once their dependents are settled. A bucket written since (a late
   * registration, which settles itself: it reads the ended dependency after writing here) stays,
   * to be removed by TTL.
   */
  async clear(read: Pick<Dependents, 'buckets'>): Promise<void> {
    await Promise.all(
      read.buckets.map(async ({ key, version }) => {
        try {
          await this.#documents.send(
            new DeleteCommand({
              TableName: this.#tableName,
              Key: { taskId: key },
              ConditionExpression: '#version = :version',
              ExpressionAttributeNames: { '#version': 'version' },
              ExpressionAttributeValues: { ':version': version },
            }),
          );
        } catch (error) {
          if (!(error instanceof ConditionalCheckFailedException)) throw error;
        }
      }),
    );
  }
}
