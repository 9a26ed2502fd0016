/**
 * DynamoDB's per-partition limits in the simulated DynamoDB (sim/aws/capacity.ts): 1,000 write
 * units and 3,000 read units a second per partition key value, for the table and each GSI, with
 * units as DynamoDB computes them. Every expected figure is worked out by hand in the comments.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../runtime/core/random.ts';
import { DYNAMODB_PARTITION_LIMITS, PartitionThroughput, readUnits, writeUnits } from '../../sim/aws/capacity.ts';
import { type AttributeMap, DynamoDbError, InMemoryDynamoDb } from '../../sim/aws/dynamodb.ts';

const TABLE = {
  id: 'things',
  partitionKey: 'id',
  indexes: [{ indexName: 'byGroup', partitionKey: 'group', sortKey: 'rank', nonKeyAttributes: ['note'] }],
};

/** A DynamoDB at a clock the test moves, with AWS's limits. */
function newDb() {
  const clock = { nowMs: 0 };
  const db = new InMemoryDynamoDb([{ name: 'things', definition: TABLE }], {
    random: seededRandom(3),
    now: () => clock.nowMs,
    indexLagMs: 0,
    eventualLagMs: 0,
    unprocessedRate: 0,
    partitionLimits: DYNAMODB_PARTITION_LIMITS,
  });
  return { db, clock };
}

/**
 * Item sizes as DynamoDB (and dynalite) count them: each attribute's name plus its value's UTF-8
 * bytes. `{ id: 'k0001', group: 'g', rank: 'r0001', note: 'n' }` is 2+5 + 5+1 + 4+5 + 4+1 = 27 bytes.
 */
const thing = (id: string, group: string, extra: Record<string, string> = {}): AttributeMap => ({
  id: { S: id },
  group: { S: group },
  rank: { S: `r${id.slice(1)}` },
  note: { S: 'n' },
  ...Object.fromEntries(Object.entries(extra).map(([name, value]) => [name, { S: value }])),
});
const put = (db: InMemoryDynamoDb, item: AttributeMap, extra: Record<string, unknown> = {}) =>
  db.handle('PutItem', { TableName: 'things', Item: item, ...extra });
const key = (n: number) => `k${String(n).padStart(4, '0')}`;

/** The error the simulated service answers with (the SDK builds its exception from it). */
function refusal(run: () => unknown): DynamoDbError {
  try {
    run();
  } catch (error) {
    if (error instanceof DynamoDbError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('Units as DynamoDB computes them', () => {
  it.each([
    [0, 1],
    [1, 1],
    [1024, 1],
    [1025, 2],
    [2506, 3],
    [409_600, 400],
  ])('a write of %i bytes takes %i write units', (bytes, units) => {
    expect(writeUnits(bytes)).toBe(units);
  });

  it.each([
    [0, true, 1],
    [4096, true, 1],
    [4097, true, 2],
    [100, false, 0.5],
    [4097, false, 1],
    [1_048_576, false, 128],
  ])('a read of %i bytes (consistent %s) takes %f read units', (bytes, consistent, units) => {
    expect(readUnits(bytes, consistent)).toBe(units);
  });
});

describe('Class: PartitionThroughput', () => {
  it('gives a key one second of units at once, then its rate, and other keys their own', () => {
    // Prepare
    let nowMs = 0;
    const throughput = new PartitionThroughput(DYNAMODB_PARTITION_LIMITS, () => nowMs);
    const one = [{ key: 'hot', units: 1 }];

    // Act / Assess: a full bucket holds 1,000 write units
    for (let i = 0; i < 1000; i++) expect(throughput.admit('t', 'write', one)).toBeUndefined();
    expect(throughput.admit('t', 'write', one)).toEqual({ key: 'hot', units: 1 });
    expect(throughput.admit('t', 'write', [{ key: 'cold', units: 1 }])).toBeUndefined();
    // 250 ms refill 250 units, no more
    nowMs = 250;
    for (let i = 0; i < 250; i++) expect(throughput.admit('t', 'write', one)).toBeUndefined();
    expect(throughput.admit('t', 'write', one)).toBeDefined();
    // Reads have their own bucket of 3,000
    expect(throughput.admit('t', 'read', [{ key: 'hot', units: 3000 }])).toBeUndefined();
    expect(throughput.admit('t', 'read', [{ key: 'hot', units: 0.5 }])).toBeDefined();
    // A bucket never holds more than one second of units, however long it rested
    nowMs = 60_000;
    expect(throughput.admit('t', 'write', [{ key: 'hot', units: 1001 }])).toBeDefined();
    expect(throughput.admit('t', 'write', [{ key: 'hot', units: 1000 }])).toBeUndefined();

    expect(throughput.throttles()).toEqual([
      { table: 't', kind: 'write', key: 'hot', requests: 3 },
      { table: 't', kind: 'read', key: 'hot', requests: 1 },
    ]);
    expect(throughput.throttledRequests).toBe(4);
  });

  it('takes nothing when one partition of a request is short (a table write and its index writes)', () => {
    let nowMs = 0;
    const throughput = new PartitionThroughput(DYNAMODB_PARTITION_LIMITS, () => nowMs);
    expect(throughput.admit('t', 'write', [{ index: 'i', key: 'g', units: 1000 }])).toBeUndefined();
    const refused = throughput.admit('t', 'write', [
      { key: 'a', units: 1 },
      { index: 'i', key: 'g', units: 1 },
    ]);
    expect(refused).toEqual({ index: 'i', key: 'g', units: 1 });
    // 'a' kept its 1,000 units: nothing was taken from it
    expect(throughput.admit('t', 'write', [{ key: 'a', units: 1000 }])).toBeUndefined();
    nowMs = 1;
    expect(throughput.admit('t', 'write', [{ index: 'i', key: 'g', units: 1 }])).toBeUndefined();
  });

  it('counts units and refuses nothing without limits', () => {
    const throughput = new PartitionThroughput(undefined, () => 0);
    for (let i = 0; i < 5000; i++) throughput.admit('t', 'write', [{ key: 'hot', units: 1 }]);
    expect(throughput.throttledRequests).toBe(0);
    expect(throughput.consumed()).toEqual([{ table: 't', read: 0, write: 5000 }]);
  });
});

describe('Class: InMemoryDynamoDb, per-partition limits', () => {
  it('refuses the 1,001st write of a second to one GSI partition, applies nothing of it, and names the index', () => {
    // Prepare: every item (27 bytes, 1 WCU) has its own table key but the same group: the
    // table's partitions each take 1 unit, byGroup's partition `g` takes 1,000.
    const { db, clock } = newDb();
    for (let i = 0; i < 1000; i++) put(db, thing(key(i), 'g'));

    // Act
    const error = refusal(() => put(db, thing(key(1000), 'g')));

    // Assess
    expect(error.type).toBe('ProvisionedThroughputExceededException');
    expect(error.extra).toEqual({
      ThrottlingReasons: [
        {
          reason: 'IndexWriteKeyRangeThroughputExceeded',
          resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/things/index/byGroup',
        },
      ],
    });
    expect(db.item('things', { id: { S: key(1000) } })).toBeUndefined();
    // Another group's partition is not hot
    expect(() => put(db, thing(key(1001), 'h'))).not.toThrow();
    // 1 ms later byGroup/g has refilled one unit
    clock.nowMs = 1;
    expect(() => put(db, thing(key(1000), 'g'))).not.toThrow();
    expect(db.throughput.throttles()).toEqual([
      { table: 'things', index: 'byGroup', kind: 'write', key: 'g', requests: 1 },
    ]);
    expect(db.throughput.consumed()).toEqual([
      { table: 'things', read: 0, write: 1002 },
      { table: 'things', index: 'byGroup', read: 0, write: 1002 },
    ]);
  });

  it('charges a 2,506-byte item 3 write units: 333 writes of it to one key fit in a second, not 334', () => {
    // { id: 'k' } is 2+1 bytes, { pad: 2,500 × 'x' } 3+2,500: 2,506 bytes, 3 units; no GSI entry (no group).
    const { db } = newDb();
    const item = { id: { S: 'k' }, pad: { S: 'x'.repeat(2500) } };
    for (let i = 0; i < 333; i++) put(db, item);
    const error = refusal(() => put(db, item));
    expect(error.extra.ThrottlingReasons).toEqual([
      {
        reason: 'TableWriteKeyRangeThroughputExceeded',
        resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/things',
      },
    ]);
    expect(db.throughput.consumed()).toEqual([{ table: 'things', read: 0, write: 999 }]);
  });

  it('charges an index only for an entry that changes: projected value 1, moved key 2, unchanged 0', () => {
    const { db } = newDb();
    const byGroupWrites = () => db.throughput.consumed().find((units) => units.index === 'byGroup')?.write;
    put(db, thing('k0001', 'g'));
    expect(byGroupWrites()).toBe(1);
    // Same keys and projection, another unprojected attribute: no index write
    put(db, thing('k0001', 'g', { other: 'o' }));
    expect(byGroupWrites()).toBe(1);
    // The projected `note` changes: one write
    put(db, { ...thing('k0001', 'g'), note: { S: 'changed' } });
    expect(byGroupWrites()).toBe(2);
    // The entry moves to partition `h`: removed from `g` and added to `h`
    put(db, thing('k0001', 'h'));
    expect(byGroupWrites()).toBe(4);
    // Deleting the item removes its entry
    db.handle('DeleteItem', { TableName: 'things', Key: { id: { S: 'k0001' } } });
    expect(byGroupWrites()).toBe(5);
    expect(db.throughput.consumed().find((units) => units.index === undefined)?.write).toBe(5);
  });

  it('charges a failed condition the write units and throttles it like any write', () => {
    const { db } = newDb();
    const item = thing('k0001', 'g');
    put(db, item);
    const condition = { ConditionExpression: 'attribute_not_exists(id)' };
    // 999 failed conditions use up the table key's remaining 999 units (none reach the index)
    for (let i = 0; i < 999; i++)
      expect(refusal(() => put(db, item, condition)).type).toBe('ConditionalCheckFailedException');
    expect(refusal(() => put(db, item, condition)).type).toBe('ProvisionedThroughputExceededException');
    expect(db.throughput.consumed()).toEqual([
      { table: 'things', read: 0, write: 1000 },
      { table: 'things', index: 'byGroup', read: 0, write: 1 },
    ]);
  });

  it('gives one key 6,000 eventually consistent or 3,000 consistent reads of a small item a second', () => {
    const { db, clock } = newDb();
    put(db, thing('k0001', 'g'));
    const get = (consistent: boolean) =>
      db.handle('GetItem', { TableName: 'things', Key: { id: { S: 'k0001' } }, ConsistentRead: consistent });
    for (let i = 0; i < 6000; i++) get(false);
    expect(refusal(() => get(false)).extra.ThrottlingReasons).toEqual([
      {
        reason: 'TableReadKeyRangeThroughputExceeded',
        resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/things',
      },
    ]);
    clock.nowMs = 1000;
    for (let i = 0; i < 3000; i++) get(true);
    expect(refusal(() => get(true)).type).toBe('ProvisionedThroughputExceededException');
    // A missing item costs the same minimum
    clock.nowMs = 2000;
    for (let i = 0; i < 3000; i++) {
      db.handle('GetItem', { TableName: 'things', Key: { id: { S: 'k0001' } }, ConsistentRead: true });
    }
    expect(
      refusal(() => db.handle('GetItem', { TableName: 'things', Key: { id: { S: 'k0001' } }, ConsistentRead: true }))
        .type,
    ).toBe('ProvisionedThroughputExceededException');
  });

  it('charges a Query the bytes it read rounded up once: 200 items of 27 bytes are 5,400 bytes, 1 unit eventually consistent', () => {
    const { db } = newDb();
    for (let i = 0; i < 200; i++) put(db, thing(key(i), 'g'));
    const query = () =>
      db.handle('Query', {
        TableName: 'things',
        IndexName: 'byGroup',
        KeyConditionExpression: '#g = :g',
        ExpressionAttributeNames: { '#g': 'group' },
        ExpressionAttributeValues: { ':g': { S: 'g' } },
      });
    // Index entries project id, group, rank and note: the whole 27-byte item. ceil(5,400 / 4,096) = 2, halved: 1.
    for (let i = 0; i < 3000; i++) query();
    expect(refusal(query).extra.ThrottlingReasons).toEqual([
      {
        reason: 'IndexReadKeyRangeThroughputExceeded',
        resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/things/index/byGroup',
      },
    ]);
    expect(db.throughput.consumed().find((units) => units.index === 'byGroup')?.read).toBe(3000);
    // A Query that finds nothing still reads its partition: half a unit
    db.handle('Query', {
      TableName: 'things',
      IndexName: 'byGroup',
      KeyConditionExpression: '#g = :g',
      ExpressionAttributeNames: { '#g': 'group' },
      ExpressionAttributeValues: { ':g': { S: 'nobody' } },
    });
    expect(db.throughput.consumed().find((units) => units.index === 'byGroup')?.read).toBe(3000.5);
  });

  it('leaves a BatchGetItem key in a hot partition unprocessed, and throttles the call only when every key is', () => {
    const { db } = newDb();
    put(db, thing('hot', 'g'));
    put(db, thing('cold', 'g'));
    for (let i = 0; i < 3000; i++) {
      db.handle('GetItem', { TableName: 'things', Key: { id: { S: 'hot' } }, ConsistentRead: true });
    }
    const batch = (ids: string[]) =>
      db.handle('BatchGetItem', {
        RequestItems: { things: { Keys: ids.map((id) => ({ id: { S: id } })), ConsistentRead: true } },
      });
    const answer = batch(['hot', 'cold']) as {
      Responses: Record<string, AttributeMap[]>;
      UnprocessedKeys: Record<string, { Keys: AttributeMap[] }>;
    };
    expect(answer.Responses.things!.map((item) => item.id!.S)).toEqual(['cold']);
    expect(answer.UnprocessedKeys.things!.Keys).toEqual([{ id: { S: 'hot' } }]);
    expect(refusal(() => batch(['hot'])).type).toBe('ProvisionedThroughputExceededException');
  });
});
