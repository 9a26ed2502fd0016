/**
 * The lease ledger's pages in the `leases` table (resources.ts `LEASES_TABLE`): what replaced the
 * `byLeased` index (issue 25). A scheduler writes one page per dispatch round, before the round's
 * dispatch writes, naming every attempt it is about to lease; it deletes the page once every
 * attempt on it has ended. So every DISPATCHED or RUNNING task is on a page (a task an older
 * version dispatched is in `byLeased` or `byActive` until its next write: task-store.ts reads
 * those too, for one release), and a page may name attempts that never landed or have ended:
 * readers read the items before acting, as they did with the index's lagging entries.
 *
 * Why: an index entry added at dispatch and removed at the end cost 2 write units a task; a page
 * costs 2 write units per KB (about 10 attempts) however many it names, written and deleted once.
 * And the table is read with strong consistency, where the index lagged.
 *
 *   partition `P<k>` (k = 0 … LEASE_PARTITIONS − 1, round robin: no hot key)
 *   page      `<shard>#<recordedAtMs, 15 digits>#<writer>#<seq>`
 *   refsGz    gzipped JSON: an array of compact tuples (encodeRef); a round's attempts share their
 *             tenant, tier and times, so they take far less than their 120 bytes each
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/lib-dynamodb';
import type { Task } from '../core/task.ts';
import { LEASE_PARTITIONS } from '../infra/resources.ts';
import { inParallel } from './in-parallel.ts';

/**
 * A dispatched or running task as the lease ledger (and older versions' `byLeased` index) lists
 * it: enough to rebuild the scheduler's count of running work. Not its state or lease (start and
 * renewals write neither): read the item for those.
 */
export interface LeasedTaskRef {
  readonly taskId: string;
  readonly tenantId: string;
  readonly priority: Task['priority'];
  readonly runtime: Task['runtime'];
  readonly resources: Task['resources'];
  readonly fence: number;
  readonly runAt: string;
  readonly agingFrom: string;
  readonly submittedAt: string;
  /** When it was dispatched (`dispatchedAt`). */
  readonly leasedAt: string;
}

/**
 * Keep `ref` in `latest` (taskId → ref) unless an attempt of its task with a higher fence is
 * there: a task can be on several pages, one per attempt, until the older ones are deleted.
 */
export function keepLatestAttempt<T extends LeasedTaskRef>(latest: Map<string, T>, ref: T): void {
  const known = latest.get(ref.taskId);
  if (!known || known.fence < ref.fence) latest.set(ref.taskId, ref);
}

/** Where a page is stored. */
export interface LeasePageKey {
  readonly partition: string;
  readonly page: string;
}

export interface LeasePage extends LeasePageKey {
  /** The scheduler shard that wrote it (and deletes it). */
  readonly shard: number;
  /** When it was written, by its writer's clock (epoch ms). */
  readonly recordedAtMs: number;
  readonly refs: readonly LeasedTaskRef[];
}

/** What a scheduler needs of the pages (runtime/scheduler/lease-ledger.ts). */
export interface LeasePageStore {
  put(page: LeasePage): Promise<void>;
  delete(key: LeasePageKey): Promise<void>;
  /** Every page, read consistently (a page put before the read began is in it). */
  all(): Promise<LeasePage[]>;
}

/** Attempts on one page at most: 120 KB of JSON at most before gzip, far under the 400 KB item limit. */
export const MAX_REFS_PER_PAGE = 1_000;

const ms = (iso: string): number => Date.parse(iso);
const iso = (epochMs: number): string => new Date(epochMs).toISOString();

type EncodedRef = [string, string, string, string, LeasedTaskRef['resources'], number, string, number, number, number];

/**
 * A ref as a tuple, the other times as offsets from `submittedAt` (kept as written: listings key
 * on it): about 120 bytes instead of 300.
 */
function encodeRef(ref: LeasedTaskRef): EncodedRef {
  const submitted = ms(ref.submittedAt);
  return [
    ref.taskId,
    ref.tenantId,
    ref.priority,
    ref.runtime,
    ref.resources,
    ref.fence,
    ref.submittedAt,
    ms(ref.runAt) - submitted,
    ms(ref.agingFrom) - submitted,
    ms(ref.leasedAt) - submitted,
  ];
}

function decodeRef(encoded: EncodedRef): LeasedTaskRef {
  const [taskId, tenantId, priority, runtime, resources, fence, submittedAt, runAt, agingFrom, leasedAt] = encoded;
  const submitted = ms(submittedAt);
  return {
    taskId,
    tenantId,
    priority: priority as LeasedTaskRef['priority'],
    runtime: runtime as LeasedTaskRef['runtime'],
    resources,
    fence,
    submittedAt,
    runAt: iso(submitted + runAt),
    agingFrom: iso(submitted + agingFrom),
    leasedAt: iso(submitted + leasedAt),
  };
}

/** The sort key of a page: its shard first, so one shard's pages could be read by prefix. */
export const pageKeyOf = (shard: number, recordedAtMs: number, writer: string, seq: number): string =>
  `${shard}#${String(recordedAtMs).padStart(15, '0')}#${writer}#${seq}`;

export const partitionOf = (seq: number): string => `P${seq % LEASE_PARTITIONS}`;

export class LeasePages implements LeasePageStore {
  readonly #documents: DynamoDBDocumentClient;
  readonly #tableName: string;

  constructor(documents: DynamoDBDocumentClient, tableName: string) {
    this.#documents = documents;
    this.#tableName = tableName;
  }

  /** Idempotent: the same page put again (an SDK retry of a lost response) writes the same item. */
  async put(page: LeasePage): Promise<void> {
    await this.#documents.send(
      new PutCommand({
        TableName: this.#tableName,
        Item: {
          partition: page.partition,
          page: page.page,
          shard: page.shard,
          recordedAtMs: page.recordedAtMs,
          refsGz: gzipSync(JSON.stringify(page.refs.map(encodeRef))),
        },
      }),
    );
  }

  async delete(key: LeasePageKey): Promise<void> {
    await this.#documents.send(
      new DeleteCommand({ TableName: this.#tableName, Key: { partition: key.partition, page: key.page } }),
    );
  }

  /**
   * Every page of every shard (a shard counts the attempts of its own tenants wherever they are
   * written: the shard count may have changed since), read consistently. The ledger holds no more
   * attempts than the pools run, plus those ended on pages not yet deleted.
   */
  async all(): Promise<LeasePage[]> {
    const partitions = Array.from({ length: LEASE_PARTITIONS }, (_, k) => `P${k}`);
    const pages = await inParallel(partitions, LEASE_PARTITIONS, async (partition) => {
      const items: Record<string, unknown>[] = [];
      let startKey: Record<string, unknown> | undefined;
      do {
        const response = await this.#documents.send(
          new QueryCommand({
            TableName: this.#tableName,
            KeyConditionExpression: '#p = :p',
            ExpressionAttributeNames: { '#p': 'partition' },
            ExpressionAttributeValues: { ':p': partition },
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
          }),
        );
        items.push(...(response.Items ?? []));
        startKey = response.LastEvaluatedKey;
      } while (startKey);
      return items;
    });
    return pages.flat().map((item) => ({
      partition: item.partition as string,
      page: item.page as string,
      shard: Number(item.shard),
      recordedAtMs: Number(item.recordedAtMs),
      refs: (JSON.parse(gunzipSync(item.refsGz as Uint8Array).toString('utf8')) as EncodedRef[]).map(decodeRef),
    }));
  }

  /** Whether any page exists: one Limit-1 Scan (the idle tick's check; 0.5 read units when empty). */
  async any(): Promise<boolean> {
    const scan = await this.#documents.send(new ScanCommand({ TableName: this.#tableName, Limit: 1 }));
    return (scan.Items ?? []).length > 0 || scan.LastEvaluatedKey !== undefined;
  }
}
