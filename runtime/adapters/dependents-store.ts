/**
 * Who depends on a task: the edges of `dependsOn`, read when the task ends (app/dependencies.ts).
 *
 * A dependency's dependents are kept in DEPENDENT_BUCKETS small items of the task table, keyed
 * `dependents#<dependencyId>#<bucket>` (`#` is not allowed in a task id, so no task collides),
 * the bucket a hash of the dependent's id. Not in the dependency's own item: every state write of a
 * task rewrites its whole item, and 1,000 dependents' registrations would each rewrite a growing
 * one. 1,000 dependents spread over 16 buckets are about 63 ids (≈2.5 KB) an item, far below the
 * 400 KB limit, and registrations contend on 16 items rather than one. The ending task reads all
 * 16 in one consistent BatchGetItem (a table read: no index lag). A bucket of BUCKET_MAX_IDS ids
 * continues in pages (`…#<bucket>#<page>`): read in further rounds, only for full buckets.
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

/**
 * Task ids a bucket item holds at most (about 74 KB): a full one continues in pages
 * `dependents#<dependencyId>#<bucket>#<page>`, filled in order. One item holds at most 11,066 ids
 * under DynamoDB's 400 KB, so without pages a registration past that failed for good (about
 * 177,000 dependents of one task) and each registration rewrote up to 400 KB. Readers look at a
 * bucket's next page only when it is at this size: never lower it while dependents are registered.
 */
export const BUCKET_MAX_IDS = 2_000;

/** Prefix of the bucket items' keys in the task table; never the start of a task id. */
export const DEPENDENTS_KEY_PREFIX = 'dependents#';

/**
 * An unsettled bucket is deleted by DynamoDB TTL after this long (a dependency may wait up to a
 * year for its `runAt`, and then run): settled buckets are deleted at once.
 */
const BUCKET_RETENTION_SECONDS = 400 * 86_400;

const bucketKey = (dependencyId: string, bucket: number) => `${DEPENDENTS_KEY_PREFIX}${dependencyId}#${bucket}`;
/** A bucket's page: page 0 is the bucket's own item (the key older versions wrote). */
const pageKey = (dependencyId: string, bucket: number, page: number) =>
  page === 0 ? bucketKey(dependencyId, bucket) : `${bucketKey(dependencyId, bucket)}#${page}`;

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
  readonly #bucketMaxIds: number;

  constructor(
    documents: DynamoDBDocumentClient,
    tableName: string,
    nowMs: () => number = Date.now,
    options: { readonly bucketMaxIds?: number } = {},
  ) {
    this.#documents = documents;
    this.#tableName = tableName;
    this.#nowMs = nowMs;
    this.#bucketMaxIds = options.bucketMaxIds ?? BUCKET_MAX_IDS;
  }

  /**
   * Record that `dependentId` depends on `dependencyId` (idempotent): in its bucket's first page
   * that holds it or has room (pages fill in order, so an id already there is met on the way).
   */
  async add(dependencyId: string, dependentId: string): Promise<void> {
    const bucket = taskIdHash(dependentId) % DEPENDENT_BUCKETS;
    for (let page = 0; ; page++) {
      if (await this.#addToPage(pageKey(dependencyId, bucket, page), dependencyId, dependentId)) return;
    }
  }

  /**
   * Read the page consistently, add the id if missing, write back on the version read; on a
   * concurrent write, again. False when the page is full without the id.
   */
  async #addToPage(key: string, dependencyId: string, dependentId: string): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      const { Item } = await this.#documents.send(
        new GetCommand({ TableName: this.#tableName, Key: { taskId: key }, ConsistentRead: true }),
      );
      const current = Item as Bucket | undefined;
      if (current?.dependents.includes(dependentId)) return true;
      if (current && current.dependents.length >= this.#bucketMaxIds) return false;
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
        return true;
      } catch (error) {
        // Another registration wrote the bucket first (or ours landed and its answer was lost): read again.
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        if (attempt >= 50)
          throw new ConcurrentUpdateError(key, { states: [], version: current?.version ?? 0 }, undefined);
        await sleep(Math.random() * 20 * Math.min(attempt, 10));
      }
    }
  }

  /** Every dependent registered on `dependencyId`, read consistently from all its buckets and their pages. */
  async of(dependencyId: string): Promise<Dependents> {
    const pageOf = new Map<string, { bucket: number; page: number }>();
    let keys: Record<string, unknown>[] = Array.from({ length: DEPENDENT_BUCKETS }, (_, bucket) => {
      const key = pageKey(dependencyId, bucket, 0);
      pageOf.set(key, { bucket, page: 0 });
      return { taskId: key };
    });
    const dependents = new Set<string>();
    const buckets: DependentsBucket[] = [];
    for (let round = 0; keys.length > 0; round++) {
      const response = await this.#documents.send(
        new BatchGetCommand({ RequestItems: { [this.#tableName]: { Keys: keys, ConsistentRead: true } } }),
      );
      const unprocessed =
        (response.UnprocessedKeys?.[this.#tableName]?.Keys as Record<string, unknown>[] | undefined) ?? [];
      const nextPages: Record<string, unknown>[] = [];
      for (const item of (response.Responses?.[this.#tableName] ?? []) as Bucket[]) {
        for (const id of item.dependents) dependents.add(id);
        buckets.push({ key: item.taskId, version: item.version, dependents: item.dependents });
        // A full page may have a next one.
        const at = pageOf.get(item.taskId);
        if (at && item.dependents.length >= this.#bucketMaxIds) {
          const key = pageKey(dependencyId, at.bucket, at.page + 1);
          pageOf.set(key, { bucket: at.bucket, page: at.page + 1 });
          nextPages.push({ taskId: key });
        }
      }
      keys = [...unprocessed, ...nextPages];
      if (unprocessed.length > 0) await sleep(Math.min(1000, 25 * 2 ** round));
    }
    // Bucket by bucket; within one, its last page first: a settle cut short (it clears each as it
    // goes) leaves a bucket's first pages, full, so the next read still reaches every page left.
    const place = (key: string) => pageOf.get(key) ?? { bucket: 0, page: 0 };
    buckets.sort((a, b) => place(a.key).bucket - place(b.key).bucket || place(b.key).page - place(a.key).page);
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
