/**
 * TransactWriteItems on the embedded dynalite (local/dynalite-transactions.ts), as DynamoDB
 * documents it: conditional puts all applied or none, the reasons per action, the item that
 * failed its condition, a ClientRequestToken repeated answering success without writing, and the
 * index entries of the written items.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulators, startEmulators } from '../../local/emulators.ts';

let emulators: Emulators;
let table: string;
beforeAll(async () => {
  emulators = await startEmulators({ prefix: 'transact' });
  table = emulators.tables.tasks!;
});
afterAll(async () => {
  await emulators.stop();
});

const put = (taskId: string, extra: Record<string, unknown> = {}) => ({
  Put: {
    TableName: table,
    Item: { taskId, n: 1, ...extra },
    ConditionExpression: 'attribute_not_exists(taskId)',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
  },
});

const get = async (taskId: string) =>
  (await emulators.clients.documents.send(new GetCommand({ TableName: table, Key: { taskId }, ConsistentRead: true })))
    .Item;

describe('dynalite TransactWriteItems (emulators)', () => {
  it('writes every put when every condition holds', async () => {
    // Act
    await emulators.clients.documents.send(new TransactWriteCommand({ TransactItems: [put('t-a1'), put('t-a2')] }));
    // Assess
    expect(await get('t-a1')).toEqual({ taskId: 't-a1', n: 1 });
    expect(await get('t-a2')).toEqual({ taskId: 't-a2', n: 1 });
  });

  it('writes none when one condition fails, and names it with the item it found', async () => {
    // Prepare
    await emulators.clients.documents.send(new PutCommand({ TableName: table, Item: { taskId: 't-b2', n: 7 } }));
    // Act
    const error = await emulators.clients.documents
      .send(new TransactWriteCommand({ TransactItems: [put('t-b1'), put('t-b2'), put('t-b3')] }))
      .catch((caught: unknown) => caught);
    // Assess
    expect(error).toBeInstanceOf(TransactionCanceledException);
    const reasons = (error as TransactionCanceledException).CancellationReasons!;
    expect(reasons.map((reason) => reason.Code)).toEqual(['None', 'ConditionalCheckFailed', 'None']);
    expect(reasons[1]!.Item).toEqual({ taskId: { S: 't-b2' }, n: { N: '7' } });
    expect(await get('t-b1')).toBeUndefined();
    expect(await get('t-b2')).toEqual({ taskId: 't-b2', n: 7 });
    expect(await get('t-b3')).toBeUndefined();
  });

  it('answers a repeated ClientRequestToken with success and writes nothing again', async () => {
    // Prepare
    const request = { TransactItems: [put('t-c1')], ClientRequestToken: 'token-c' };
    await emulators.clients.documents.send(new TransactWriteCommand(request));
    await emulators.clients.documents.send(new PutCommand({ TableName: table, Item: { taskId: 't-c1', n: 2 } }));
    // Act
    await emulators.clients.documents.send(new TransactWriteCommand(request));
    const other = await emulators.clients.documents
      .send(new TransactWriteCommand({ TransactItems: [put('t-c2')], ClientRequestToken: 'token-c' }))
      .catch((caught: unknown) => caught);
    // Assess
    expect(await get('t-c1')).toEqual({ taskId: 't-c1', n: 2 });
    expect((other as Error).name).toBe('IdempotentParameterMismatchException');
    expect(await get('t-c2')).toBeUndefined();
  });

  it('refuses two actions on one item, and actions other than Put, writing nothing', async () => {
    // Act
    const twice = await emulators.clients.documents
      .send(new TransactWriteCommand({ TransactItems: [put('t-d1'), put('t-d1')] }))
      .catch((caught: unknown) => caught);
    const update = await emulators.clients.documents
      .send(
        new TransactWriteCommand({
          TransactItems: [
            put('t-d2'),
            {
              Update: {
                TableName: table,
                Key: { taskId: 't-d3' },
                UpdateExpression: 'SET n = :n',
                ExpressionAttributeValues: { ':n': 1 },
              },
            },
          ],
        }),
      )
      .catch((caught: unknown) => caught);
    // Assess
    expect((twice as Error).name).toBe('ValidationException');
    expect((update as Error).name).toBe('ValidationException');
    expect(await get('t-d1')).toBeUndefined();
    expect(await get('t-d2')).toBeUndefined();
  });

  it('keeps the indexes of the written items', async () => {
    // Prepare: an item with the byTenantState index's keys.
    const { TASKS_TABLE } = await import('../../runtime/infra/resources.ts');
    const index = TASKS_TABLE.indexes.find((candidate) => candidate.sortKey)!;
    const item = { [index.partitionKey]: 'p-e', [index.sortKey!]: 's-e' };
    // Act
    await emulators.clients.documents.send(new TransactWriteCommand({ TransactItems: [put('t-e1', item)] }));
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
    expect(Items?.map((found) => found.taskId)).toEqual(['t-e1']);
  });
});
