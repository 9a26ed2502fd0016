/**
 * The durable records of flow control, in the control table: each tenant's start-rate bucket and
 * each concurrency key's holders. They are the arbiters: the scheduler's engine only mirrors them,
 * and what it remembers is gone at its next invocation, while two invocations may overlap. Every
 * change is a conditional PutItem on what was read (no UpdateItem: the simulation has none), so
 * two schedulers serialize on the item, and a write whose response was lost is recognised when
 * the SDK's retry is refused.
 *
 * Cost (on-demand, items under 1 KB): a rate-limited tenant's bucket takes one write per dispatch
 * round that starts any of its tasks (not per task: a round's starts are granted together) and a
 * consistent read only when another writer moved it; one bucket item is one partition key value,
 * good for 1,000 writes a second, far above the scheduler's rounds. A concurrency key costs a
 * consistent read and a write to acquire and again to release, per task that names one; its item
 * grows with its limit (about 40 bytes a holder, hence the limit's cap of 100).
 */
import { randomBytes } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { type Grant, grantStarts } from '../core/policy/rate.ts';
import type { StartRate } from '../core/tenant-settings.ts';

const rateKey = (tenantId: string) => `rate#${tenantId}`;
/** JSON of the pair: neither a tenant id nor a key can make two pairs one key. */
const concurrencyKeyOf = (tenantId: string, key: string) => `ckey#${JSON.stringify([tenantId, key])}`;

const TOKENS_KEPT = 4;
const ATTEMPTS = 6;

/** Holders of a concurrency key: taskId → the fence of the attempt that holds it, and since when. */
export type KeyHolders = Readonly<Record<string, { readonly fence: number; readonly sinceMs: number }>>;

export interface KeyAcquisition {
  readonly acquired: boolean;
  /** Holders after the attempt (ours included when acquired). */
  readonly holders: number;
}

/**
 * Says which holders no longer hold (their attempt is over), from the tasks' items: the caller
 * reads them consistently. A holder whose dispatch may still be landing must be kept.
 */
export type StaleHolders = (holders: KeyHolders, nowMs: number) => Promise<string[]>;

export class FlowStore {
  readonly #documents: DynamoDBDocumentClient;
  readonly #tableName: string;
  /** The bucket's TAT as our last write or read left it, per tenant (saves a read per round). */
  readonly #known = new Map<string, number>();

  constructor(documents: DynamoDBDocumentClient, tableName: string) {
    this.#documents = documents;
    this.#tableName = tableName;
  }

  /** The bucket's theoretical arrival time (µs), read consistently; undefined: never used (full). */
  async bucket(tenantId: string): Promise<number | undefined> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { pk: rateKey(tenantId) }, ConsistentRead: true }),
    );
    const tat = typeof Item?.tatUs === 'number' ? Item.tatUs : undefined;
    if (tat !== undefined) this.#known.set(tenantId, tat);
    return tat;
  }

  /**
   * Take up to `want` starts from the tenant's bucket at `nowMs` (rate.ts): one conditional write
   * on the TAT it read. Returns how many were granted and the TAT after. A write applied whose
   * answer was lost finds its token in the item on the refused retry and counts as granted.
   */
  async grant(tenantId: string, rate: StartRate, nowMs: number, want: number): Promise<Grant> {
    let known: { tatUs: number | undefined; tokens: string[] } | undefined = this.#known.has(tenantId)
      ? { tatUs: this.#known.get(tenantId), tokens: [] }
      : undefined;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      known ??= await this.#readBucket(tenantId);
      const grant = grantStarts(rate, known.tatUs, nowMs * 1000, want);
      if (grant.granted === 0) return grant;
      const token = randomBytes(8).toString('base64url');
      try {
        await this.#documents.send(
          new PutCommand({
            TableName: this.#tableName,
            Item: {
              pk: rateKey(tenantId),
              kind: 'rate',
              tenantId,
              tatUs: grant.tatUs,
              tokens: [...known.tokens.slice(1 - TOKENS_KEPT), token],
            },
            ...(known.tatUs === undefined
              ? { ConditionExpression: 'attribute_not_exists(pk)' }
              : {
                  ConditionExpression: 'tatUs = :tat',
                  ExpressionAttributeValues: { ':tat': known.tatUs },
                }),
          }),
        );
        this.#known.set(tenantId, grant.tatUs);
        return grant;
      } catch (error) {
        // Refused, or not answered: read what is there. Our token there: it was ours.
        const current = await this.#readBucket(tenantId);
        if (current.tokens.includes(token)) {
          this.#known.set(tenantId, grant.tatUs);
          return grant;
        }
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        known = current;
      }
    }
    // Other writers kept moving it: grant nothing this round (never more than the bucket).
    return { granted: 0, tatUs: this.#known.get(tenantId) ?? nowMs * 1000 };
  }

  async #readBucket(tenantId: string): Promise<{ tatUs: number | undefined; tokens: string[] }> {
    const { Item } = await this.#documents.send(
      new GetCommand({ TableName: this.#tableName, Key: { pk: rateKey(tenantId) }, ConsistentRead: true }),
    );
    const tatUs = typeof Item?.tatUs === 'number' ? Item.tatUs : undefined;
    if (tatUs !== undefined) this.#known.set(tenantId, tatUs);
    else this.#known.delete(tenantId);
    return { tatUs, tokens: Array.isArray(Item?.tokens) ? (Item.tokens as string[]) : [] };
  }

  /** A key's holders, read consistently. */
  async keyHolders(tenantId: string, key: string): Promise<KeyHolders> {
    return (await this.#readKey(tenantId, key)).holders;
  }

  /**
   * Hold one of the key's `limit` places for attempt `fence` of `taskId` before it is dispatched.
   * Idempotent: the same attempt again (a retried write, a redelivered message, a second round)
   * holds the same place; an older attempt of the same task is replaced, never counted twice.
   * When the key is full, `stale` says which holders' attempts are over (a release that never
   * came: a crash, a lost completion), and they are removed first.
   */
  async acquireKey(
    tenantId: string,
    key: string,
    limit: number,
    taskId: string,
    fence: number,
    nowMs: number,
    stale: StaleHolders,
  ): Promise<KeyAcquisition> {
    let repaired = false;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const current = await this.#readKey(tenantId, key);
      const holders: Record<string, { fence: number; sinceMs: number }> = { ...current.holders };
      if (holders[taskId]?.fence === fence) return { acquired: true, holders: Object.keys(holders).length };
      if (holders[taskId] === undefined && Object.keys(holders).length >= limit) {
        if (repaired) return { acquired: false, holders: Object.keys(holders).length };
        repaired = true;
        const gone = await stale(current.holders, nowMs);
        if (gone.length === 0) return { acquired: false, holders: Object.keys(holders).length };
        for (const id of gone) delete holders[id];
        if (Object.keys(holders).length >= limit) {
          await this.#writeKey(tenantId, key, holders, current.version).catch(() => undefined);
          return { acquired: false, holders: Object.keys(holders).length };
        }
      }
      holders[taskId] = { fence, sinceMs: nowMs };
      if (await this.#writeKey(tenantId, key, holders, current.version)) {
        return { acquired: true, holders: Object.keys(holders).length };
      }
    }
    return { acquired: false, holders: limit };
  }

  /** The attempt `fence` of `taskId` no longer holds the key (it ended). A later attempt's place stays. */
  async releaseKey(tenantId: string, key: string, taskId: string, fence: number): Promise<void> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const current = await this.#readKey(tenantId, key);
      const held = current.holders[taskId];
      if (!held || held.fence > fence) return;
      const holders = { ...current.holders };
      delete holders[taskId];
      if (await this.#writeKey(tenantId, key, holders, current.version)) return;
    }
  }

  async #readKey(tenantId: string, key: string): Promise<{ holders: KeyHolders; version: string | undefined }> {
    const { Item } = await this.#documents.send(
      new GetCommand({
        TableName: this.#tableName,
        Key: { pk: concurrencyKeyOf(tenantId, key) },
        ConsistentRead: true,
      }),
    );
    const holders = typeof Item?.holdersJson === 'string' ? (JSON.parse(Item.holdersJson) as KeyHolders) : {};
    return { holders, version: typeof Item?.version === 'string' ? Item.version : undefined };
  }

  /**
   * Write the holders if the item is still at `version`, a random token each write replaces (never
   * a counter: an item deleted and created again must not repeat a version a slow writer read).
   * False when another writer moved it first
   * (the caller reads again). A lost answer is retried by the SDK and refused: false too, and the
   * caller's next read finds its own write (acquire and release are idempotent on the holders).
   */
  async #writeKey(
    tenantId: string,
    key: string,
    holders: Record<string, { fence: number; sinceMs: number }>,
    version: string | undefined,
  ): Promise<boolean> {
    try {
      if (Object.keys(holders).length === 0 && version !== undefined) {
        // No holder left: the item goes, so keys used once do not pile up in the control table
        // (its settings scans read every item).
        await this.#documents.send(
          new DeleteCommand({
            TableName: this.#tableName,
            Key: { pk: concurrencyKeyOf(tenantId, key) },
            ConditionExpression: 'version = :v',
            ExpressionAttributeValues: { ':v': version },
          }),
        );
        return true;
      }
      await this.#documents.send(
        new PutCommand({
          TableName: this.#tableName,
          Item: {
            pk: concurrencyKeyOf(tenantId, key),
            kind: 'concurrency-key',
            tenantId,
            key,
            version: randomBytes(8).toString('base64url'),
            // Task ids are map keys here: JSON text keeps any id (DynamoDB map keys are fine too, but
            // the text form is one attribute and sized as such).
            holdersJson: JSON.stringify(holders),
          },
          ...(version === undefined
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': version } }),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}
