/**
 * BatchExecuteStatement on the embedded dynalite (local/dynalite-partiql.ts), in the one shape the
 * task store sends (runtime/adapters/partiql-insert.ts): INSERTs, each on its own; an item whose
 * key exists answers DuplicateItem with the stored item (ALL_OLD), the others are written; any
 * other statement refuses the request; the written items' index entries are kept.
 */
import { BatchExecuteStatementCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { insertStatement, parseInsert } from '../../runtime/adapters/partiql-insert.ts';

let emulators: Emulators;
let table: string;
beforeAll(async () => {
  emulators = await startEmulators({ prefix: 'partiql' });
  table = emulators.tables.tasks!;
});
afterAll(async () => {
  await emulators.stop();
});

const insert = (taskId: string, extra: Record<string, unknown> = {}) => ({
  ...insertStatement(table, { taskId, n: 1, ...extra }),
  ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
});

const get = async (taskId: string) =>
  (await emulators.clients.documents.send(new GetCommand({ TableName: table, Key: { taskId }, ConsistentRead: true })))
    .Item;

describe('the INSERT statement the store sends', () => {
  it('reads back as the table and item it was made of, and nothing else reads', () => {
    // Act
    const statement = insertStatement('scheduler-tasks', { taskId: 't', n: 1, gone: undefined, tags: ['a'] });
    // Assess
    expect(statement.Statement).toBe(`INSERT INTO "scheduler-tasks" VALUE {'taskId': ?, 'n': ?, 'tags': ?}`);
    expect(parseInsert(statement.Statement, statement.Parameters)).toEqual({
      tableName: 'scheduler-tasks',
      item: { taskId: 't', n: 1, tags: ['a'] },
    });
    expect(parseInsert(`UPDATE "scheduler-tasks" SET n = 2 WHERE taskId = 't'`, [])).toHaveProperty('error');
    expect(parseInsert(`INSERT INTO "scheduler-tasks" VALUE {'taskId': 't'}`, [])).toHaveProperty('error');
    expect(parseInsert(statement.Statement, statement.Parameters.slice(1))).toHaveProperty('error');
    expect(() => insertStatement('scheduler-tasks', { "it's": 1 })).toThrow(/not allowed/);
  });
});

describe('dynalite BatchExecuteStatement (emulators)', () => {
  it('inserts every item whose key is free, and answers one that exists with the stored item', async () => {
    // Prepare
    await emulators.clients.documents.send(new PutCommand({ TableName: table, Item: { taskId: 'p-a2', n: 7 } }));
    // Act
    const { Responses } = await emulators.clients.documents.send(
      new BatchExecuteStatementCommand({ Statements: [insert('p-a1'), insert('p-a2'), insert('p-a3')] }),
    );
    // Assess: each statement on its own; the document client unmarshalls the item in the error.
    expect(Responses?.map((response) => response.Error?.Code)).toEqual([undefined, 'DuplicateItem', undefined]);
    expect(Responses?.[1]?.Error?.Item).toEqual({ taskId: 'p-a2', n: 7 });
    expect(await get('p-a1')).toEqual({ taskId: 'p-a1', n: 1 });
    expect(await get('p-a2')).toEqual({ taskId: 'p-a2', n: 7 });
    expect(await get('p-a3')).toEqual({ taskId: 'p-a3', n: 1 });
  });

  it('answers an INSERT repeated (a lost answer retried) DuplicateItem with the item it wrote', async () => {
    // Prepare
    const request = { Statements: [insert('p-b1', { token: 'ours' })] };
    await emulators.clients.documents.send(new BatchExecuteStatementCommand(request));
    // Act
    const { Responses } = await emulators.clients.documents.send(new BatchExecuteStatementCommand(request));
    // Assess
    expect(Responses?.[0]?.Error).toMatchObject({ Code: 'DuplicateItem', Item: { taskId: 'p-b1', token: 'ours' } });
  });

  it('answers an item it cannot store in its own statement, and writes the others', async () => {
    // Act: the second item has no key.
    const { Responses } = await emulators.clients.documents.send(
      new BatchExecuteStatementCommand({
        Statements: [insert('p-c1'), { ...insertStatement(table, { n: 1 }) }, insert('p-c3')],
      }),
    );
    // Assess
    expect(Responses?.map((response) => response.Error?.Code)).toEqual([undefined, 'ValidationError', undefined]);
    expect(Responses?.[1]?.Error?.Message).toMatch(/Missing the key taskId/);
    expect(await get('p-c1')).toBeDefined();
    expect(await get('p-c3')).toBeDefined();
  });

  it('refuses any other statement, more than 25, or two on one item, writing nothing', async () => {
    // Act
    const refusals = await Promise.all(
      [
        [insert('p-d1'), { Statement: `UPDATE "${table}" SET n = 2 WHERE taskId = 'p-d2'` }],
        [insert('p-d1'), { Statement: `INSERT INTO "${table}" VALUE {'taskId': 'p-d2'}` }],
        Array.from({ length: 26 }, (_, i) => insert(`p-d-many-${i}`)),
        [insert('p-d1'), insert('p-d1')],
      ].map((Statements) =>
        emulators.clients.documents
          .send(new BatchExecuteStatementCommand({ Statements }))
          .catch((caught: unknown) => caught),
      ),
    );
    // Assess
    for (const refusal of refusals) expect((refusal as Error).name).toBe('ValidationException');
    expect((refusals[0] as Error).message).toMatch(/Only INSERT INTO/);
    expect(await get('p-d1')).toBeUndefined();
    expect(await get('p-d-many-0')).toBeUndefined();
  });

  it('keeps the indexes of the inserted items', async () => {
    // Prepare: an item with an index's keys.
    const { TASKS_TABLE } = await import('../../runtime/infra/resources.ts');
    const index = TASKS_TABLE.indexes.find((candidate) => candidate.sortKey)!;
    // Act
    await emulators.clients.documents.send(
      new BatchExecuteStatementCommand({
        Statements: [insert('p-e1', { [index.partitionKey]: 'p-e', [index.sortKey!]: 's-e' })],
      }),
    );
    // Assess
    const { Items } = await emulators.clients.documents.send(
      new QueryCommand({
        TableName: table,
        IndexName: index.indexName,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': index.partitionKey },
        ExpressionAttributeValues: { ':p': 'p-e' },
      }),
    );
    expect(Items?.map((found) => found.taskId)).toEqual(['p-e1']);
  });
});
