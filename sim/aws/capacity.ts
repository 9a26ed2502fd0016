/**
 * DynamoDB's per-partition throughput limits, as the simulated DynamoDB enforces them.
 *
 * AWS: every partition of a table and of each global secondary index serves at most 1,000 write
 * units and 3,000 read units a second, in on-demand and provisioned mode alike; a request above
 * it is refused with ProvisionedThroughputExceededException (reason `<Table|Index><Read|Write>
 * KeyRangeThroughputExceeded`), which the SDK retries with backoff. All items of one partition
 * key value live in one partition, so that value is the smallest unit that can be hot.
 *
 * The model here, and what it leaves out:
 * - one token bucket per partition key value, per table or index, per kind (read, write); it
 *   holds at most one second of units (1,000 or 3,000) and refills continuously at that rate.
 *   Sustained, a key gets exactly its limit; a burst gets at most one second's worth. Not
 *   modelled: burst credits (AWS may keep up to 300 s of unused provisioned capacity), adaptive
 *   capacity and split-for-heat (AWS may move or split a hot partition within minutes), several
 *   cold key values sharing one partition, and the table-wide quotas (40,000 units a second per
 *   on-demand table by default). So the limits bind exactly at the documented per-key rates;
 *   AWS may do better after a while, never reliably before.
 * - a request is admitted only if every bucket it draws from holds its units; then all are
 *   debited. A refused request consumes nothing and changes nothing.
 * - units as DynamoDB computes them: a write 1 unit per started KB of the larger of the item
 *   before and after (a failed condition still pays that); a read 1 unit per started 4 KB
 *   strongly consistent, half that eventually consistent; a Query rounds the total of the items
 *   it read (before any filter; at least one unit, also when it finds nothing); a BatchGetItem
 *   rounds each item on its own (at least one unit each, also when missing).
 * - each GSI a write touches pays on its own partitions (the index's partition key value): an
 *   entry added or removed is one write there, an entry whose keys move is a removal on the old
 *   key and an addition on the new one, an entry whose projected attributes change is one write,
 *   and an entry that stays the same costs nothing. Sized by the projected entry (table key,
 *   index keys, projected attributes). A GSI partition that cannot take its write throttles the
 *   table write itself (GSI back-pressure).
 * - a Scan reads across partitions: each partition key value it reads is charged its share of
 *   the bytes (no rounding per key; a Scan is spread, it is not what makes a key hot).
 */

/** The documented per-partition limits. */
export interface PartitionLimits {
  readonly writeUnitsPerSecond: number;
  readonly readUnitsPerSecond: number;
}

export const DYNAMODB_PARTITION_LIMITS: PartitionLimits = { writeUnitsPerSecond: 1000, readUnitsPerSecond: 3000 };

export type ThroughputKind = 'read' | 'write';

/** Write units of an item (or index entry) of this many bytes: 1 per started KB, at least 1. */
export const writeUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));

/** Read units of this many bytes read: 1 per started 4 KB strongly consistent, half that eventually. */
export const readUnits = (bytes: number, consistent: boolean): number =>
  Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);

/** Units one request draws from one partition key value of the table (`index` undefined) or an index. */
export interface PartitionCharge {
  readonly index?: string | undefined;
  /** The partition key value as text (`S` or `N` as written; other types as JSON). */
  readonly key: string;
  readonly units: number;
}

/** Requests refused for one partition key value of a table or index. */
export interface ThrottleCount {
  readonly table: string;
  readonly index?: string;
  readonly kind: ThroughputKind;
  readonly key: string;
  requests: number;
}

/** Units consumed by one table or index since the start, by kind. */
export interface ConsumedUnits {
  readonly table: string;
  readonly index?: string;
  read: number;
  write: number;
}

interface Bucket {
  tokens: number;
  atMs: number;
}

/** Full buckets are forgotten every this many admissions (a million task items, a million keys). */
const SWEEP_EVERY = 8192;

export class PartitionThroughput {
  /** Undefined: nothing is refused (units are still counted). */
  limits: PartitionLimits | undefined;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();
  readonly #throttled = new Map<string, ThrottleCount>();
  readonly #consumed = new Map<string, ConsumedUnits>();
  #admissions = 0;

  constructor(limits: PartitionLimits | undefined, now: () => number) {
    this.limits = limits;
    this.#now = now;
  }

  /**
   * Take `charges` from their partitions' buckets if every one of them can give its units now
   * (charges to the same partition add up); otherwise take nothing, count a throttled request on
   * the first partition short of units, and return that charge.
   */
  admit(table: string, kind: ThroughputKind, charges: readonly PartitionCharge[]): PartitionCharge | undefined {
    const limits = this.limits;
    if (limits) {
      const nowMs = this.#now();
      const rate = kind === 'read' ? limits.readUnitsPerSecond : limits.writeUnitsPerSecond;
      const wanted = new Map<string, { charge: PartitionCharge; units: number }>();
      for (const charge of charges) {
        const id = bucketId(table, kind, charge);
        const entry = wanted.get(id);
        if (entry) entry.units += charge.units;
        else wanted.set(id, { charge, units: charge.units });
      }
      for (const [id, { charge, units }] of wanted) {
        if (this.#tokens(id, rate, nowMs) < units) {
          this.#countThrottle(table, kind, charge);
          return charge;
        }
      }
      for (const [id, { units }] of wanted) this.#buckets.get(id)!.tokens -= units;
      if (++this.#admissions % SWEEP_EVERY === 0) this.#sweep(nowMs);
    }
    for (const charge of charges) this.#consume(table, kind, charge);
    return undefined;
  }

  /** Every partition that refused a request, most refused first. */
  throttles(): ThrottleCount[] {
    return [...this.#throttled.values()]
      .map((count) => ({ ...count }))
      .sort((a, b) => b.requests - a.requests || (a.key < b.key ? -1 : 1));
  }

  /** Requests refused in all. */
  get throttledRequests(): number {
    let total = 0;
    for (const count of this.#throttled.values()) total += count.requests;
    return total;
  }

  /** Units consumed per table and index. */
  consumed(): ConsumedUnits[] {
    return [...this.#consumed.values()].map((units) => ({ ...units }));
  }

  /** The bucket's tokens now (created full), refilled for the time since it was last touched. */
  #tokens(id: string, rate: number, nowMs: number): number {
    let bucket = this.#buckets.get(id);
    if (!bucket) {
      bucket = { tokens: rate, atMs: nowMs };
      this.#buckets.set(id, bucket);
    } else if (nowMs > bucket.atMs) {
      bucket.tokens = Math.min(rate, bucket.tokens + ((nowMs - bucket.atMs) / 1000) * rate);
      bucket.atMs = nowMs;
    }
    return bucket.tokens;
  }

  /** Forget buckets idle long enough to be full again (a new one starts full: the same). */
  #sweep(nowMs: number): void {
    for (const [id, bucket] of this.#buckets) if (nowMs - bucket.atMs >= 1000) this.#buckets.delete(id);
  }

  #countThrottle(table: string, kind: ThroughputKind, charge: PartitionCharge): void {
    const id = bucketId(table, kind, charge);
    const count = this.#throttled.get(id);
    if (count) count.requests++;
    else {
      this.#throttled.set(id, {
        table,
        ...(charge.index === undefined ? {} : { index: charge.index }),
        kind,
        key: charge.key,
        requests: 1,
      });
    }
  }

  #consume(table: string, kind: ThroughputKind, charge: PartitionCharge): void {
    const id = `${table}\u0000${charge.index ?? ''}`;
    let units = this.#consumed.get(id);
    if (!units) {
      units = { table, ...(charge.index === undefined ? {} : { index: charge.index }), read: 0, write: 0 };
      this.#consumed.set(id, units);
    }
    units[kind] += charge.units;
  }
}

const bucketId = (table: string, kind: ThroughputKind, charge: PartitionCharge) =>
  `${table}\u0000${charge.index ?? ''}\u0000${kind}\u0000${charge.key}`;

/** The reason AWS gives in ThrottlingReasons, e.g. `IndexWriteKeyRangeThroughputExceeded`. */
export const throttlingReason = (kind: ThroughputKind, index: string | undefined): string =>
  `${index === undefined ? 'Table' : 'Index'}${kind === 'read' ? 'Read' : 'Write'}KeyRangeThroughputExceeded`;

/** The throttled resource's ARN, as ThrottlingReasons names it (a simulated account and region). */
export const throttledResource = (table: string, index: string | undefined): string =>
  `arn:aws:dynamodb:us-east-1:000000000000:table/${table}${index === undefined ? '' : `/index/${index}`}`;

/** What on-demand DynamoDB says when a partition is hot. */
export const HOT_PARTITION_MESSAGE =
  'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html';
