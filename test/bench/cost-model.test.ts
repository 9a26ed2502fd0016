import { Readable } from 'node:stream';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  CallCounter,
  costPerMillionTasks,
  formatSqsByQueue,
  LIST_PRICES,
  nativeItemSize,
  STEP_FUNCTIONS_MINIMAL,
  stepFunctionsUsage,
  usageFromCalls,
  wireItemSize,
} from '../../bench/metering/call-counter.ts';
import { workerLambdaUsage } from '../../bench/metering/lambda-workers.ts';
import { insertStatement } from '../../runtime/adapters/partiql-insert.ts';
import { TASKS_TABLE } from '../../runtime/infra/resources.ts';

/** A client whose transport answers every request with `body`, so no server is needed. */
function stubTransport(body: () => string) {
  return {
    handle: async () => ({
      response: {
        statusCode: 200,
        headers: { 'content-type': 'application/x-amz-json-1.0' },
        body: Readable.from([body()]),
      },
    }),
  };
}

const common = { region: 'us-east-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' }, maxAttempts: 1 };

describe('CallCounter', () => {
  it('counts each call once by service and operation, through the document client too', async () => {
    let reply = '{}';
    const dynamodb = new DynamoDBClient({ ...common, requestHandler: stubTransport(() => reply) });
    const documents = DynamoDBDocumentClient.from(dynamodb);
    const counter = new CallCounter().attach(dynamodb);
    await documents.send(new PutCommand({ TableName: 't', Item: { taskId: 'a', note: 'x'.repeat(1500) } }));
    reply = JSON.stringify({ Item: { taskId: { S: 'a' } } });
    await documents.send(new GetCommand({ TableName: 't', Key: { taskId: 'a' }, ConsistentRead: true }));
    await documents.send(new GetCommand({ TableName: 't', Key: { taskId: 'a' } }));
    const stats = counter.snapshot();
    expect(stats.get('DynamoDB.PutItem')).toMatchObject({ count: 1, writeUnits: 2, errors: 0 });
    // Strongly consistent 1 RRU + eventually consistent 0.5 RRU.
    expect(stats.get('DynamoDB.GetItem')).toMatchObject({ count: 2, readUnits: 1.5 });
    counter.detach(dynamodb);
    await documents.send(new GetCommand({ TableName: 't', Key: { taskId: 'a' } }));
    expect(counter.snapshot().get('DynamoDB.GetItem')?.count).toBe(2);
  });

  it('bills SQS per request and per 64 KB chunk', async () => {
    const sqs = new SQSClient({ ...common, requestHandler: stubTransport(() => '{"Successful":[],"Failed":[]}') });
    const counter = new CallCounter().attach(sqs);
    const small = { Id: '0', MessageBody: 'x' };
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q',
        Entries: [small, { ...small, Id: '1' }],
      }),
    );
    const big = Array.from({ length: 3 }, (_, i) => ({ Id: String(i), MessageBody: 'y'.repeat(50 * 1024) }));
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q', Entries: big }));
    expect(counter.snapshot().get('SQS.SendMessageBatch')).toMatchObject({ count: 2, sqsRequests: 1 + 3 });
  });

  it('counts errors and still bills a refused conditional write', async () => {
    const counter = new CallCounter();
    const middleware = counter.middleware();
    const context = { clientName: 'DynamoDBClient', commandName: 'PutItemCommand' };
    const failing = middleware(async () => {
      throw new Error('ConditionalCheckFailed');
    }, context);
    await expect(failing({ input: { TableName: 't', Item: { taskId: { S: 'a' } } } })).rejects.toThrow();
    expect(counter.snapshot().get('DynamoDB.PutItem')).toMatchObject({ count: 1, errors: 1, writeUnits: 1 });
  });

  it('estimates GSI writes: created entries 1, moved keys 2, unchanged 0', async () => {
    const counter = new CallCounter({ indexes: { tasks: TASKS_TABLE.indexes } });
    const put = counter.middleware()(async () => ({ output: {} }), {
      clientName: 'DynamoDBClient',
      commandName: 'PutItemCommand',
    });
    const item = (state: string, active: boolean) => ({
      taskId: { S: 'a' },
      tenantId: { S: 't1' },
      listKey: { S: '2025#a' },
      tenantState: { S: `t1#${state}` },
      ...(active ? { activeShard: { S: `${state}#0` }, dueAt: { S: '2025' } } : {}),
    });
    await put({ input: { TableName: 'tasks', Item: item('QUEUED', true) } });
    expect(counter.snapshot().get('DynamoDB.PutItem')?.indexWriteUnits).toBe(2); // 2 entries created
    await put({ input: { TableName: 'tasks', Item: item('RUNNING', true) } });
    // byTenantState moved 2, byActive moved 2 (tenantId alone is no index key: byTenant is gone).
    expect(counter.snapshot().get('DynamoDB.PutItem')?.indexWriteUnits).toBe(2 + 4);
    await put({ input: { TableName: 'tasks', Item: item('SUCCEEDED', false) } });
    // byTenantState moved 2, byActive removed 1.
    expect(counter.snapshot().get('DynamoDB.PutItem')?.indexWriteUnits).toBe(2 + 4 + 3);
  });

  it('bills a batch of PartiQL INSERTs as standard writes: a duplicate as a refused condition, a throttled one not', async () => {
    const counter = new CallCounter({ indexes: { tasks: TASKS_TABLE.indexes } });
    const call = (output: Record<string, unknown> | undefined) =>
      counter.middleware()(
        async () => {
          if (!output) throw new Error('ProvisionedThroughputExceededException');
          return { output };
        },
        { clientName: 'DynamoDBClient', commandName: 'BatchExecuteStatementCommand' },
      );
    const queued = (id: string, note = 'x'.repeat(1500)) => ({
      taskId: { S: id },
      queueKey: { S: 't1#normal#0' },
      queueSort: { S: `2025#${id}` },
      note: { S: note },
    });
    const input = {
      Statements: [queued('a'), queued('b', 'small'), queued('c')].map((item) => insertStatement('tasks', item)),
    };
    await expect(call(undefined)({ input })).rejects.toThrow();
    await call({
      Responses: [
        {},
        { Error: { Code: 'DuplicateItem', Item: queued('b') } },
        { Error: { Code: 'ProvisionedThroughputExceeded' } },
      ],
    })({ input });
    // The failed call: nothing. Then a 2 KB item created (2 units and its byTenantQueue entry), a
    // small one refused against the 2 KB item stored (2 units, no entry), the throttled one nothing.
    expect(counter.snapshot().get('DynamoDB.BatchExecuteStatement')).toMatchObject({
      count: 2,
      errors: 1,
      writeUnits: 2 + 2,
      indexWriteUnits: 1,
    });
  });

  it('bills a transactional write twice a standard one per item, and its index entries once', async () => {
    const counter = new CallCounter({ indexes: { tasks: TASKS_TABLE.indexes } });
    const call = (failed: boolean) =>
      counter.middleware()(
        async () => {
          if (failed) throw new Error('TransactionCanceledException');
          return { output: {} };
        },
        { clientName: 'DynamoDBClient', commandName: 'TransactWriteItemsCommand' },
      );
    const queued = (id: string) => ({
      taskId: { S: id },
      queueKey: { S: 't1#normal#0' },
      queueSort: { S: `2025#${id}` },
      note: { S: 'x'.repeat(1500) },
    });
    const input = {
      TransactItems: [
        { Put: { TableName: 'tasks', Item: queued('a') } },
        { Put: { TableName: 'tasks', Item: { taskId: { S: 'b' } } } },
        { ConditionCheck: { TableName: 'tasks', Key: { taskId: { S: 'c' } } } },
      ],
    };
    await expect(call(true)({ input })).rejects.toThrow();
    await call(false)({ input });
    // Each try: a 2 KB put 2 × 2, a small put 2 × 1, a condition check 2 × 1; the one that
    // landed adds a byTenantQueue entry.
    expect(counter.snapshot().get('DynamoDB.TransactWriteItems')).toMatchObject({
      count: 2,
      errors: 1,
      writeUnits: 2 * (4 + 2 + 2),
      indexWriteUnits: 1,
    });
  });

  it('tallies SQS calls per operation and queue, and forgets them on reset', async () => {
    const counter = new CallCounter();
    const call = (commandName: string, queue: string) =>
      counter.middleware()(async () => ({ output: {} }), { clientName: 'SQSClient', commandName })({
        input: { QueueUrl: `http://localhost:4566/000000000000/${queue}`, Entries: [{ Id: '1', MessageBody: 'x' }] },
      });
    await call('SendMessageBatchCommand', 'completions');
    await call('SendMessageBatchCommand', 'completions');
    await call('DeleteMessageBatchCommand', 'worker-lambda');
    expect(counter.sqsByQueue()).toEqual(
      new Map([
        ['SendMessageBatch completions', 2],
        ['DeleteMessageBatch worker-lambda', 1],
      ]),
    );
    expect(formatSqsByQueue(counter.sqsByQueue(), 2).split('\n')[1]).toMatch(/^SendMessageBatch completions\s+1\.00$/);
    counter.reset();
    expect(counter.sqsByQueue().size).toBe(0);
  });

  it('bills an update or delete on the whole item as last written, not on what it changes', async () => {
    const counter = new CallCounter();
    const call = (commandName: string) =>
      counter.middleware()(async () => ({ output: {} }), { clientName: 'DynamoDBClient', commandName });
    const key = { taskId: { S: 'm' } };
    await call('PutItemCommand')({ input: { TableName: 't', Item: { ...key, ids: { S: 'x'.repeat(3000) } } } });
    await call('UpdateItemCommand')({ input: { TableName: 't', Key: key, UpdateExpression: 'SET e = :e' } });
    await call('PutItemCommand')({ input: { TableName: 't', Item: key } });
    await call('DeleteItemCommand')({ input: { TableName: 't', Key: key } });
    await call('UpdateItemCommand')({ input: { TableName: 't', Key: { taskId: { S: 'never-seen' } } } });
    const stats = counter.snapshot();
    // 3 KB; the update of it 3; the small put replacing it 3 (the larger of before and after).
    expect(stats.get('DynamoDB.PutItem')?.writeUnits).toBe(3 + 3);
    // The update 3; an item never seen written: the 1 KB minimum.
    expect(stats.get('DynamoDB.UpdateItem')?.writeUnits).toBe(3 + 1);
    expect(stats.get('DynamoDB.DeleteItem')?.writeUnits).toBe(1);
  });

  it('sizes items by DynamoDB rules, in wire and native form alike', () => {
    const native = { taskId: 'abc', n: 12345, ok: true, tags: ['a', 'b'], m: { k: 'v' } };
    const wire = {
      taskId: { S: 'abc' },
      n: { N: '12345' },
      ok: { BOOL: true },
      tags: { L: [{ S: 'a' }, { S: 'b' }] },
      m: { M: { k: { S: 'v' } } },
    };
    expect(nativeItemSize(native)).toBe(wireItemSize(wire));
    expect(wireItemSize({ taskId: { S: 'abc' } })).toBe(6 + 3);
  });
});

describe('cost model', () => {
  it('multiplies usage per task by list prices per million', () => {
    const estimate = costPerMillionTasks({
      sqsRequests: 10,
      dynamoWriteUnits: 4,
      dynamoReadUnits: 2,
      lambdaInvocations: 2,
      lambdaGbSeconds: 0.1,
      apiRequests: 1,
    });
    const byItem = Object.fromEntries(estimate.lines.map((l) => [l.item, l.usdPerMillionTasks]));
    expect(byItem['SQS requests']).toBeCloseTo(4.0);
    expect(byItem['DynamoDB write units']).toBeCloseTo(2.5);
    expect(byItem['DynamoDB read units']).toBeCloseTo(0.25);
    expect(byItem['Lambda requests']).toBeCloseTo(0.4);
    expect(byItem['Lambda GB-s']).toBeCloseTo(1.33334);
    expect(byItem['API Gateway HTTP requests']).toBeCloseTo(1.0);
    expect(estimate.usdPerMillionTasks).toBeCloseTo(4 + 2.5 + 0.25 + 0.4 + 1.33334 + 1);
  });

  it('models the minimal Step Functions Standard machine at 4 transitions per task', () => {
    expect(STEP_FUNCTIONS_MINIMAL.transitionsPerTask).toBe(STEP_FUNCTIONS_MINIMAL.states.length);
    const estimate = costPerMillionTasks(stepFunctionsUsage({ workerGbSeconds: 0 }));
    const transitions = estimate.lines.find((l) => l.item === 'Step Functions transitions');
    expect(transitions?.usdPerMillionTasks).toBeCloseTo(4 * LIST_PRICES.stepFunctionsPerMillionTransitions);
  });

  it('derives usage per task from counter totals', () => {
    const counter = new CallCounter();
    const stat = counter.record('SQS', 'ReceiveMessage');
    stat.sqsRequests = 6;
    const write = counter.record('DynamoDB', 'PutItem');
    write.writeUnits = 3;
    write.indexWriteUnits = 3;
    expect(usageFromCalls(counter.snapshot(), 3)).toEqual({ sqsRequests: 2, dynamoWriteUnits: 2, dynamoReadUnits: 0 });
  });
});

describe('worker Lambda model (memory classes)', () => {
  it('bills each task its class, and a handed-on task the entry invocation and a second request', () => {
    // 30 ms per task; the entry's hand-off takes 5 + 12 ms at 512 MiB.
    const small = workerLambdaUsage([512, 512], 30, 512);
    expect(small).toEqual({ invocations: 1, gbSeconds: 0.5 * 0.03, handedOff: 0 });
    const mixed = workerLambdaUsage([512, 2048], 30, 512);
    expect(mixed.invocations).toBe(1.5);
    expect(mixed.handedOff).toBe(0.5);
    expect(mixed.gbSeconds).toBeCloseTo((0.5 * 0.03 + 2 * 0.03 + 0.5 * 0.017) / 2, 12);
    // One function of the largest class for every task (before the classes): no hand-offs.
    expect(workerLambdaUsage([2048], 30, 2048)).toEqual({ invocations: 1, gbSeconds: 2 * 0.03, handedOff: 0 });
    expect(workerLambdaUsage([], 30)).toEqual({ invocations: 0, gbSeconds: 0, handedOff: 0 });
  });
});
