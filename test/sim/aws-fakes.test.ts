/**
 * The simulated AWS answers the real SDK clients as AWS documents: conditional writes, lagging
 * indexes, unprocessed keys, the item size limit; SQS batch limits, characters, visibility and
 * its 12-hour cap, receive counts and redrive; and a response lost after the write applied,
 * retried by the SDK's own middleware.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  ChangeMessageVisibilityCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { BatchExecuteStatementCommand, GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { LeasePages } from '../../runtime/adapters/lease-pages.ts';
import { insertStatement } from '../../runtime/adapters/partiql-insert.ts';
import { TaskStore } from '../../runtime/adapters/task-store.ts';
import { createTask, dispatch } from '../../runtime/core/lifecycle.ts';
import { SimulatedAws } from '../../sim/aws/world.ts';
import { checkHistory } from '../../sim/chaos/check.ts';
import type { ChaosFaults } from '../../sim/chaos/run.ts';
import { NO_FAULTS, runChaos } from '../../sim/chaos/run.ts';

/** A task store on the simulated account, without faults. */
function storeOf(aws: SimulatedAws): TaskStore {
  const { documents } = aws.component('test', NO_FAULTS).clients;
  return new TaskStore(documents, aws.resources.tables.tasks!, {
    leases: new LeasePages(documents, aws.resources.tables.leases!),
  });
}

function world(overrides: { indexLagMs?: number; unprocessedRate?: number } = {}) {
  const clock = { ms: Date.parse('2026-01-01T00:00:00Z') };
  const aws = new SimulatedAws({
    seed: 1,
    now: () => clock.ms,
    indexLagMs: overrides.indexLagMs ?? 0,
    eventualLagMs: 0,
    unprocessedRate: overrides.unprocessedRate ?? 0,
    sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
  });
  return { aws, clock };
}

const spec = {
  tenantId: 'acme',
  type: 'demo',
  payload: {},
  priority: 'normal' as const,
  resources: { vcpu: 0.25, memoryMiB: 512 },
  runtime: 'lambda' as const,
  timeoutSeconds: 60,
  maxAttempts: 3,
};

describe('simulated DynamoDB through the SDK', () => {
  it('refuses a failed condition and returns the stored item when asked (ALL_OLD)', async () => {
    const { aws } = world();
    const { documents } = aws.component('test', NO_FAULTS).clients;
    const TableName = aws.resources.tables.control!;
    await documents.send(
      new PutCommand({ TableName, Item: { pk: 'a', n: 1 }, ConditionExpression: 'attribute_not_exists(pk)' }),
    );
    const refused = await documents
      .send(
        new PutCommand({
          TableName,
          Item: { pk: 'a', n: 2 },
          ConditionExpression: '#n = :n',
          ExpressionAttributeNames: { '#n': 'n' },
          ExpressionAttributeValues: { ':n': 5 },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      )
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConditionalCheckFailedException);
    expect((refused as ConditionalCheckFailedException).Item).toEqual({ pk: { S: 'a' }, n: { N: '1' } });
    const { Item } = await documents.send(new GetCommand({ TableName, Key: { pk: 'a' }, ConsistentRead: true }));
    expect(Item).toEqual({ pk: 'a', n: 1 });
  });

  it('runs PartiQL INSERTs each on its own: DuplicateItem with the stored item, billed as a failed conditional put', async () => {
    const { aws } = world();
    const { documents } = aws.component('test', NO_FAULTS).clients;
    const TableName = aws.resources.tables.control!;
    const insert = (pk: string, n: number) => ({
      ...insertStatement(TableName, { pk, n }),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    });
    const read = async (pk: string) =>
      (await documents.send(new GetCommand({ TableName, Key: { pk }, ConsistentRead: true }))).Item;
    await documents.send(new PutCommand({ TableName, Item: { pk: 'pq-b', n: 7 } }));
    const units = () => aws.dynamodb.throughput.consumed().find((c) => c.table === TableName && !c.index)!.write;
    const before = units();
    const { Responses } = await documents.send(
      new BatchExecuteStatementCommand({ Statements: [insert('pq-a', 1), insert('pq-b', 1), insert('pq-c', 1)] }),
    );
    expect(Responses?.map((response) => response.Error?.Code)).toEqual([undefined, 'DuplicateItem', undefined]);
    expect(Responses?.[1]?.Error?.Item).toEqual({ pk: 'pq-b', n: 7 });
    expect(await read('pq-a')).toEqual({ pk: 'pq-a', n: 1 });
    expect(await read('pq-b')).toEqual({ pk: 'pq-b', n: 7 });
    // One standard write unit each (items under 1 KB), the refused one included, none doubled.
    expect(units() - before).toBe(3);
    const refused = await documents
      .send(
        new BatchExecuteStatementCommand({
          Statements: [{ Statement: `DELETE FROM "${TableName}" WHERE pk = 'pq-a'` }],
        }),
      )
      .catch((error: unknown) => error);
    expect((refused as Error).name).toBe('ValidationException');
    expect(await read('pq-a')).toBeDefined();
  });

  it('answers a tail of a BatchExecuteStatement throttled, not applied, at the unprocessed rate', async () => {
    const { aws } = world({ unprocessedRate: 1 });
    const { documents } = aws.component('test', NO_FAULTS).clients;
    const TableName = aws.resources.tables.control!;
    const pks = Array.from({ length: 25 }, (_, i) => `pq-t${i}`);
    const { Responses } = await documents.send(
      new BatchExecuteStatementCommand({ Statements: pks.map((pk) => insertStatement(TableName, { pk })) }),
    );
    const codes = Responses!.map((response) => response.Error?.Code);
    const first = codes.indexOf('ProvisionedThroughputExceeded');
    expect(first).toBeGreaterThan(0);
    expect(codes.slice(first).every((code) => code === 'ProvisionedThroughputExceeded')).toBe(true);
    expect(codes.slice(0, first).every((code) => code === undefined)).toBe(true);
    expect(
      await documents.send(new GetCommand({ TableName, Key: { pk: pks[first]! }, ConsistentRead: true })),
    ).not.toHaveProperty('Item');
  });

  it('creates a batch whose statements are throttled: again in new calls, then one by one, each task once', async () => {
    // Prepare: every call answers a random tail of its statements throttled.
    const { aws, clock } = world({ unprocessedRate: 1 });
    const calls: string[] = [];
    const component = aws.component('test', NO_FAULTS, { onCall: (call) => calls.push(call.operation) });
    const store = new TaskStore(component.clients.documents, aws.resources.tables.tasks!, {
      leases: new LeasePages(component.clients.documents, aws.resources.tables.leases!),
    });
    const tasks = Array.from({ length: 60 }, (_, i) => createTask(`tsk_pq${i}`, spec, new Date(clock.ms)));

    // Act
    const results = await store.createMany(tasks);

    // Assess: all created, each written once; some went again (and some one by one, PutItem).
    expect(results.map((result) => 'created' in result && result.created)).toEqual(tasks.map(() => true));
    for (const task of tasks) {
      const writes = aws.dynamodb.writes.filter(({ item }) => item?.taskId?.S === task.taskId);
      expect(writes).toHaveLength(1);
      expect(await store.get(task.taskId)).toEqual((results[tasks.indexOf(task)] as { task: unknown }).task);
    }
    const inserts = calls.filter((operation) => operation === 'BatchExecuteStatement').length;
    expect(inserts).toBeGreaterThan(3);
    expect(inserts).toBeLessThanOrEqual(3 * 4);
    expect(calls).toContain('PutItem');
  });

  it('applies a BatchExecuteStatement whose response is lost: the SDK retry meets its own INSERT', async () => {
    const { aws } = world();
    const part = aws.component('test', NO_FAULTS);
    const lossy = aws.component('lossy', { lostResponseRate: 1, throttleRate: 0 });
    const TableName = aws.resources.tables.control!;
    const error = await lossy.clients.documents
      .send(new BatchExecuteStatementCommand({ Statements: [insertStatement(TableName, { pk: 'pq-l', n: 1 })] }))
      .catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('ECONNRESET');
    expect((error as { $metadata?: { attempts?: number } }).$metadata?.attempts).toBeGreaterThan(1);
    const { Item } = await part.clients.documents.send(
      new GetCommand({ TableName, Key: { pk: 'pq-l' }, ConsistentRead: true }),
    );
    expect(Item).toEqual({ pk: 'pq-l', n: 1 });
  });

  it('applies a write whose response is lost, so the SDK retry meets its own write', async () => {
    const { aws } = world();
    // Every call's response is lost until the SDK's third attempt, whose answer arrives.
    let calls = 0;
    const part = aws.component('test', { lostResponseRate: 0, throttleRate: 0 }, { onCall: () => calls++ });
    const lossy = aws.component('lossy', { lostResponseRate: 1, throttleRate: 0 });
    const TableName = aws.resources.tables.control!;
    const put = new PutCommand({ TableName, Item: { pk: 'b' }, ConditionExpression: 'attribute_not_exists(pk)' });
    const error = await lossy.clients.documents.send(put).catch((e: unknown) => e);
    // The SDK retried (each attempt reached the table: the first wrote, the retries were refused
    // by the condition) and every response was lost on the way back.
    expect((error as { code?: string }).code).toBe('ECONNRESET');
    expect((error as { $metadata?: { attempts?: number } }).$metadata?.attempts).toBeGreaterThan(1);
    const { Item } = await part.clients.documents.send(
      new GetCommand({ TableName, Key: { pk: 'b' }, ConsistentRead: true }),
    );
    expect(Item).toEqual({ pk: 'b' });
    expect(calls).toBe(1);
  });

  it('lets an index lag the table while consistent reads see the write', async () => {
    const { aws, clock } = world({ indexLagMs: 5_000 });
    const store = storeOf(aws);
    const task = createTask('tsk_lag', spec, new Date(clock.ms));
    await store.create(task);
    expect(await store.get('tsk_lag')).toMatchObject(task);
    const listed = async () => (await store.scanQueued(10)).refs.map((ref) => ref.taskId);
    expect(await listed()).toEqual([]);
    clock.ms += 10 * 60_000;
    expect(await listed()).toEqual(['tsk_lag']);
  });

  it('scans an index a page at a time: sparse, resumed after the last key, at most 1 MB a page', async () => {
    // Prepare: 30 QUEUED tasks of 3 tenants, and one dispatched (not in `byTenantQueue`).
    const { aws, clock } = world();
    const store = storeOf(aws);
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const task = createTask(
        `tsk_${String(i).padStart(2, '0')}`,
        { ...spec, tenantId: `t${i % 3}` },
        new Date(clock.ms),
      );
      await store.create(task);
      ids.push(task.taskId);
    }
    const leased = await store.create(createTask('tsk_leased', spec, new Date(clock.ms)));
    await store.apply(dispatch(leased.task, new Date(clock.ms), 60));

    // Act: pages of 7, each resumed after the last.
    const pages: string[][] = [];
    let cursor: Awaited<ReturnType<TaskStore['scanQueued']>>['next'];
    do {
      const page = await store.scanQueued(7, cursor);
      pages.push(page.refs.map((ref) => ref.taskId));
      cursor = page.next;
    } while (cursor);

    // Assess: every QUEUED entry once, in pages of at most 7, the dispatched task in none.
    expect(pages.flat().sort()).toEqual(ids);
    expect(pages.every((page) => page.length <= 7)).toBe(true);
    expect(pages.length).toBeGreaterThanOrEqual(5);
    // A page stops at 1 MB whatever its Limit.
    const { documents } = aws.component('big', NO_FAULTS).clients;
    const TableName = aws.resources.tables.tasks!;
    const blob = 'x'.repeat(300_000);
    for (let i = 0; i < 5; i++) {
      // ~293 write units each, in one index partition: one a second stays under its 1,000.
      clock.ms += 1000;
      await documents.send(
        new PutCommand({
          TableName,
          Item: { taskId: `big_${i}`, queueKey: 'big#normal', queueSort: `${i}`, resources: blob },
        }),
      );
    }
    const { Items, LastEvaluatedKey } = await documents.send(
      new ScanCommand({ TableName, IndexName: 'byTenantQueue', ExclusiveStartKey: undefined, Limit: 100 }),
    );
    expect(Items!.length).toBeLessThan(35);
    expect(LastEvaluatedKey).toBeDefined();
    const consistent = await documents
      .send(new ScanCommand({ TableName, IndexName: 'byTenantQueue', ConsistentRead: true }))
      .catch((error: unknown) => error);
    expect((consistent as Error).name).toBe('ValidationException');
  });

  it('returns unprocessed BatchGetItem keys, which the store reads again', async () => {
    const { aws, clock } = world({ unprocessedRate: 1 });
    const store = storeOf(aws);
    const ids = Array.from({ length: 12 }, (_, i) => `tsk_${i}`);
    for (const id of ids) await store.create(createTask(id, spec, new Date(clock.ms)));
    const found = await store.getMany(ids);
    expect([...found.keys()].sort()).toEqual([...ids].sort());
  });

  it('refuses an item over 400 KB', async () => {
    const { aws } = world();
    const { documents } = aws.component('test', NO_FAULTS).clients;
    const error = await documents
      .send(
        new PutCommand({ TableName: aws.resources.tables.control!, Item: { pk: 'big', blob: 'x'.repeat(410_000) } }),
      )
      .catch((e: unknown) => e);
    expect((error as Error).name).toBe('ValidationException');
  });
});

describe('simulated SQS through the SDK', () => {
  it('enforces 10 entries and 1 MiB per batch, 256 KiB per message and the allowed characters', async () => {
    const { aws } = world();
    const { sqs } = aws.component('test', NO_FAULTS).clients;
    const QueueUrl = aws.resources.queueUrls['tier-normal']!;
    const entries = (n: number, body: string) =>
      Array.from({ length: n }, (_, i) => ({ Id: String(i), MessageBody: body }));
    await expect(sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries: entries(11, 'x') }))).rejects.toMatchObject({
      name: 'TooManyEntriesInBatchRequest',
    });
    await expect(
      sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries: entries(5, 'x'.repeat(250_000)) })),
    ).rejects.toMatchObject({ name: 'BatchRequestTooLong' });
    const mixed = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl,
        Entries: [
          { Id: 'ok', MessageBody: 'fine \u{1F600}' },
          { Id: 'bad-char', MessageBody: 'no \uFFFE' },
          { Id: 'too-big', MessageBody: 'x'.repeat(262_145) },
        ],
      }),
    );
    expect(mixed.Successful?.map((s) => s.Id)).toEqual(['ok']);
    expect(Object.fromEntries((mixed.Failed ?? []).map((f) => [f.Id, f.Code]))).toEqual({
      'bad-char': 'InvalidMessageContents',
      'too-big': 'InvalidParameterValue',
    });
  });

  it('hides a received message for its visibility, counts receives, caps visibility at 12 h and redrives', async () => {
    const { aws, clock } = world();
    const { sqs } = aws.component('test', NO_FAULTS).clients;
    const QueueUrl = aws.resources.queueUrls['worker-fargate']!; // maxReceiveCount 5
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: '{"taskId":"t"}' }));
    const receive = () =>
      sqs.send(
        new ReceiveMessageCommand({
          QueueUrl,
          VisibilityTimeout: 10,
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
      );
    const first = await receive();
    expect(first.Messages?.[0]?.Attributes?.ApproximateReceiveCount).toBe('1');
    expect((await receive()).Messages ?? []).toEqual([]);
    await expect(
      sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl,
          ReceiptHandle: first.Messages![0]!.ReceiptHandle!,
          VisibilityTimeout: 43_200,
        }),
      ),
    ).resolves.toBeDefined();
    clock.ms += 3_600_000;
    await expect(
      sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl,
          ReceiptHandle: first.Messages![0]!.ReceiptHandle!,
          VisibilityTimeout: 43_200,
        }),
      ),
    ).rejects.toMatchObject({ name: 'InvalidParameterValue' });
    for (let count = 2; count <= 5; count++) {
      clock.ms += 13 * 3_600_000;
      const again = await receive();
      expect(again.Messages?.[0]?.Attributes?.ApproximateReceiveCount).toBe(String(count));
    }
    clock.ms += 13 * 3_600_000;
    expect((await receive()).Messages ?? []).toEqual([]);
    expect(aws.sqs.pending('worker-fargate-dlq')).toEqual([{ body: '{"taskId":"t"}', receiveCount: 0 }]);
  });
});

describe('chaos run', () => {
  const small = {
    tasks: 5,
    tenants: 2,
    submitSeconds: 10,
    maxSimulatedSeconds: 1800,
    faults: NO_FAULTS as ChaosFaults,
    cancelRate: 0,
    operatorRetryRate: 0,
  };

  it('runs the production code to completion without faults, and one seed gives one history', async () => {
    const first = await runChaos({ ...small, seed: 5 });
    const second = await runChaos({ ...small, seed: 5 });
    const result = checkHistory(first);
    expect(result.violations).toEqual([]);
    expect(result.stats.accepted).toBe(5);
    expect(result.stats.unfinished).toBe(0);
    expect(second.writes).toEqual(first.writes);
    expect(second.receives).toEqual(first.receives);
  }, 120_000);
});
