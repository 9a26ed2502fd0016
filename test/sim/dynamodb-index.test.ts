/**
 * Index Queries on the simulated DynamoDB (sim/aws/dynamodb.ts) read a range of a sorted
 * partition instead of sorting the table. Their answers must be what DynamoDB's documented order
 * gives: sort key, then (for ties) the table key; every sort-key condition; Limit and
 * ExclusiveStartKey / LastEvaluatedKey pagination both ways, also when the items read so far are
 * deleted between pages; and an item read back through the clients must not be the stored one.
 */
import { QueryCommand as LowLevelQueryCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../runtime/core/random.ts';
import { directClients } from '../../sim/aws/direct.ts';
import { type AttributeMap, InMemoryDynamoDb } from '../../sim/aws/dynamodb.ts';
import { InMemorySqs } from '../../sim/aws/sqs.ts';

const TABLE = {
  id: 'things',
  partitionKey: 'id',
  indexes: [{ indexName: 'byGroup', partitionKey: 'group', sortKey: 'rank', nonKeyAttributes: ['note'] }],
};

function newDb(): InMemoryDynamoDb {
  let nowMs = 0;
  return new InMemoryDynamoDb([{ name: 'things', definition: TABLE }], {
    random: seededRandom(3),
    now: () => nowMs++,
    indexLagMs: 0,
    eventualLagMs: 0,
    unprocessedRate: 0,
  });
}

interface Thing {
  readonly id: string;
  readonly group: string;
  readonly rank: string;
}
const put = (db: InMemoryDynamoDb, { id, group, rank }: Thing) =>
  db.handle('PutItem', {
    TableName: 'things',
    Item: { id: { S: id }, group: { S: group }, rank: { S: rank }, note: { S: `n-${id}` }, extra: { S: 'x' } },
  });
const remove = (db: InMemoryDynamoDb, id: string) =>
  db.handle('DeleteItem', { TableName: 'things', Key: { id: { S: id } } });

/** DynamoDB's index order: sort key, then the table key (both plain ASCII here). */
const order = (a: Thing, b: Thing) =>
  a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/** Every page of a Query, following LastEvaluatedKey. */
function queryAll(db: InMemoryDynamoDb, input: Record<string, unknown>, betweenPages?: (page: AttributeMap[]) => void) {
  const ids: string[] = [];
  let start: AttributeMap | undefined;
  let pages = 0;
  do {
    const page = db.handle('Query', { TableName: 'things', IndexName: 'byGroup', ...input, ExclusiveStartKey: start });
    const items = page.Items as AttributeMap[];
    ids.push(...items.map((item) => String(item.id!.S)));
    start = page.LastEvaluatedKey as AttributeMap | undefined;
    pages++;
    betweenPages?.(items);
  } while (start);
  return { ids, pages };
}

/** 600 things over 3 groups, with many ties on rank (12 distinct ranks). */
function fill(db: InMemoryDynamoDb): Thing[] {
  const random = seededRandom(11);
  const things: Thing[] = [];
  for (let i = 0; i < 600; i++) {
    const thing = {
      id: `t${String(Math.floor(random() * 1e6)).padStart(6, '0')}-${i}`,
      group: `g${i % 3}`,
      rank: `r${String(Math.floor(random() * 12)).padStart(2, '0')}`,
    };
    put(db, thing);
    things.push(thing);
  }
  return things;
}

describe('simulated DynamoDB index Query', () => {
  it('pages a partition in sort-key order, ties by table key, forward and backward, for each key condition', () => {
    // Prepare
    const db = newDb();
    const things = fill(db);
    const g1 = things.filter((thing) => thing.group === 'g1').sort(order);
    const conditions: [string, Record<string, unknown>, (thing: Thing) => boolean][] = [
      ['#g = :g', {}, () => true],
      ['#g = :g AND #r = :a', { ':a': { S: 'r05' } }, (t) => t.rank === 'r05'],
      ['#g = :g AND #r < :a', { ':a': { S: 'r05' } }, (t) => t.rank < 'r05'],
      ['#g = :g AND #r <= :a', { ':a': { S: 'r05' } }, (t) => t.rank <= 'r05'],
      ['#g = :g AND #r > :a', { ':a': { S: 'r05' } }, (t) => t.rank > 'r05'],
      ['#g = :g AND #r >= :a', { ':a': { S: 'r05' } }, (t) => t.rank >= 'r05'],
      [
        '#g = :g AND #r BETWEEN :a AND :b',
        { ':a': { S: 'r03' }, ':b': { S: 'r07' } },
        (t) => t.rank >= 'r03' && t.rank <= 'r07',
      ],
      ['#g = :g AND begins_with(#r, :a)', { ':a': { S: 'r1' } }, (t) => t.rank.startsWith('r1')],
    ];

    for (const [expression, values, matches] of conditions) {
      for (const forward of [true, false]) {
        // Act
        const { ids, pages } = queryAll(db, {
          KeyConditionExpression: expression,
          ExpressionAttributeNames: expression.includes('#r') ? { '#g': 'group', '#r': 'rank' } : { '#g': 'group' },
          ExpressionAttributeValues: { ':g': { S: 'g1' }, ...values },
          ScanIndexForward: forward,
          Limit: 7,
        });

        // Assess
        const expected = g1.filter(matches).map((thing) => thing.id);
        if (!forward) expected.reverse();
        expect(ids, `${expression} forward=${forward}`).toEqual(expected);
        expect(pages).toBe(Math.floor(expected.length / 7) + 1);
      }
    }
  });

  it('answers with the index projection; through the clients an answer is a copy, not the stored item', async () => {
    // Prepare: the in-memory service hands out its stored values (its transports copy them).
    const db = newDb();
    put(db, { id: 'a', group: 'g', rank: 'r1' });
    const { documents, dynamodb } = directClients(
      db,
      new InMemorySqs([], {
        random: Math.random,
        now: Date.now,
        duplicateDeliveryRate: 0,
        earlyRedeliveryRate: 0,
        shortPollMissRate: 0,
        batchEntryFailureRate: 0,
      }),
    );
    const query = {
      TableName: 'things',
      IndexName: 'byGroup',
      KeyConditionExpression: '#g = :g',
      ExpressionAttributeNames: { '#g': 'group' },
      ExpressionAttributeValues: { ':g': 'g' },
    };

    // Act: change every answer, through both clients.
    const viaDocuments = await documents.send(new QueryCommand(query));
    (viaDocuments.Items![0] as Record<string, unknown>).note = 'changed';
    const viaWire = await dynamodb.send(
      new LowLevelQueryCommand({ ...query, ExpressionAttributeValues: { ':g': { S: 'g' } } }),
    );
    (viaWire.Items![0]!.rank as { S: string }).S = 'changed';
    const read = await documents.send(new GetCommand({ TableName: 'things', Key: { id: 'a' }, ConsistentRead: true }));
    (read.Item as Record<string, unknown>).note = 'changed';

    // Assess
    expect(db.handle('Query', { ...query, ExpressionAttributeValues: { ':g': { S: 'g' } } }).Items).toEqual([
      { id: { S: 'a' }, group: { S: 'g' }, rank: { S: 'r1' }, note: { S: 'n-a' } },
    ]);
    expect(db.item('things', { id: { S: 'a' } })).toEqual({
      id: { S: 'a' },
      group: { S: 'g' },
      rank: { S: 'r1' },
      note: { S: 'n-a' },
      extra: { S: 'x' },
    });
  });

  it('resumes after ExclusiveStartKey when the items already read are deleted between pages', () => {
    // Prepare
    const db = newDb();
    const things = fill(db);
    const expected = things
      .filter((thing) => thing.group === 'g2')
      .sort(order)
      .map((thing) => thing.id);

    // Act: delete each page's items (and one item further on) before asking for the next page.
    const deletedAhead: string[] = [];
    const { ids } = queryAll(
      db,
      {
        KeyConditionExpression: '#g = :g',
        ExpressionAttributeNames: { '#g': 'group' },
        ExpressionAttributeValues: { ':g': { S: 'g2' } },
        Limit: 9,
      },
      (page) => {
        for (const item of page) remove(db, String(item.id!.S));
        const next = expected[expected.indexOf(String(page.at(-1)?.id?.S)) + 5];
        if (next && deletedAhead.length < 4) {
          remove(db, next);
          deletedAhead.push(next);
        }
      },
    );

    // Assess: everything once, in order, but the items deleted before the reader reached them.
    expect(deletedAhead).toHaveLength(4);
    expect(ids).toEqual(expected.filter((id) => !deletedAhead.includes(id)));
  });
});
