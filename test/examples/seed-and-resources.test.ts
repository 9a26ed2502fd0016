import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_RESOURCE_IDS, EXAMPLE_TABLES } from '../../runtime/infra/example-resources.ts';
import { EXAMPLE_TASK_TYPES } from '../../runtime/task-types/examples/index.ts';
import { paymentsReconciliation } from '../../runtime/task-types/examples/payments-reconciliation.ts';
import { photoResize } from '../../runtime/task-types/examples/photo-resize.ts';
import { ensureExampleResources } from '../../runtime/task-types/examples/resources.ts';
import { SAMPLE, sampleSales, seedExampleData } from '../../runtime/task-types/examples/seed-data.ts';
import { exampleResourcesFromEnvironment } from '../../runtime/task-types/examples/stores.ts';
import { weeklySalesReport } from '../../runtime/task-types/examples/weekly-sales-report.ts';
import { defaultRegistry } from '../../runtime/task-types/index.ts';
import { type ExampleEnv, makeContext, readObject, startExampleEnv } from './helpers.ts';

let env: ExampleEnv;

beforeAll(async () => {
  env = await startExampleEnv();
});
afterAll(async () => {
  await env?.emulators.stop();
});

describe('example resources', () => {
  it('creates the bucket and every table once; a second call finds them and returns the same names', async () => {
    expect(Object.keys(env.names).sort()).toEqual([...EXAMPLE_RESOURCE_IDS].sort());
    expect(env.names['example-data']).toBe('test-example-data');
    const again = await ensureExampleResources(env.emulators.clients, 'test');
    expect(again).toEqual(env.names);
    for (const table of EXAMPLE_TABLES) {
      const { Table } = await env.emulators.clients.dynamodb.send(
        new DescribeTableCommand({ TableName: env.names[table.id] }),
      );
      expect(Table?.KeySchema?.map((key) => key.AttributeName)).toEqual([
        table.partitionKey,
        ...('sortKey' in table ? [table.sortKey] : []),
      ]);
      expect(Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName) ?? []).toEqual(
        table.indexes.map((index) => index.indexName),
      );
    }
  });

  it('reads the names map a deployed stack passes in EXAMPLE_RESOURCES, and refuses an incomplete one', () => {
    expect(exampleResourcesFromEnvironment({})).toBeUndefined();
    expect(exampleResourcesFromEnvironment({ EXAMPLE_RESOURCES: JSON.stringify(env.names) })).toEqual(env.names);
    expect(() => exampleResourcesFromEnvironment({ EXAMPLE_RESOURCES: '{"example-data":"b"}' })).toThrow(
      /lacks example-sales/,
    );
    expect(() => exampleResourcesFromEnvironment({ EXAMPLE_RESOURCES: 'nope' })).toThrow(/JSON/);
  });

  it('registers the three examples beside the demo types', () => {
    const names = defaultRegistry().names();
    for (const type of EXAMPLE_TASK_TYPES) expect(names).toContain(type.type);
    expect(EXAMPLE_TASK_TYPES.map((type) => type.type)).toEqual([
      'examples.weekly-sales-report',
      'examples.photo-resize',
      'examples.payments-reconciliation',
    ]);
  });

  it('parsing a payload twice changes nothing (the worker re-parses the stored, parsed payload)', () => {
    const registry = defaultRegistry();
    const cases: [string, unknown][] = [
      ['examples.weekly-sales-report', { restaurantId: 'r-001', weekStart: '2026-11-23' }],
      ['examples.photo-resize', { prefix: 'uploads/', sizes: [1024, 320, 320] }],
      ['examples.payments-reconciliation', { night: '2026-12-01', offsetDays: -1 }],
      ['examples.payments-reconciliation', { night: '2026-12-01T02:00:00Z' }],
    ];
    for (const [type, payload] of cases) {
      const once = registry.parsePayload(type, payload);
      expect(registry.parsePayload(type, once)).toEqual(once);
    }
  });
});

describe('seedExampleData', () => {
  it('seeds data on which every example runs as the README describes, and seeding twice changes nothing', async () => {
    const first = await seedExampleData(env.emulators.clients, env.names);
    const second = await seedExampleData(env.emulators.clients, env.names);
    expect(second).toEqual(first);
    const sales = await env.emulators.clients.documents.send(
      new QueryCommand({
        TableName: env.names['example-sales'],
        KeyConditionExpression: 'restaurantId = :r',
        ExpressionAttributeValues: { ':r': SAMPLE.restaurantIds[0] },
      }),
    );
    expect(sales.Items).toHaveLength(
      sampleSales().filter((item) => item.restaurantId === SAMPLE.restaurantIds[0]).length,
    );

    // Weekly report: totals equal the seeded week's sales (the days just outside are left out).
    const restaurantId = SAMPLE.restaurantIds[0];
    const week = sampleSales().filter(
      (item) =>
        item.restaurantId === restaurantId && String(item.date) >= '2026-11-23' && String(item.date) <= '2026-11-29',
    );
    const report = (await weeklySalesReport.handler(
      { restaurantId, weekStart: SAMPLE.weekStart },
      makeContext(env.services, { type: weeklySalesReport.type }).ctx,
    )) as { key: string; totals: { orders: number; revenueCents: number } };
    expect(report.totals).toMatchObject({
      orders: week.length,
      revenueCents: week.reduce((sum, item) => sum + Number(item.totalCents), 0),
    });

    // Photo resize: the three photos, the notes file skipped.
    const resized = (await photoResize.handler(
      { prefix: SAMPLE.photoPrefix, sizes: [256], skipUnchanged: false },
      makeContext(env.services, { type: photoResize.type }).ctx,
    )) as { photos: number; skippedCount: number };
    expect(resized).toMatchObject({ photos: 3, skippedCount: 1 });
    const thumbnail = await sharp(await readObject(env, `thumbnails/256/${SAMPLE.photoPrefix}terrace.png`)).metadata();
    expect(thumbnail.width).toBe(256);

    // Reconciliation: exactly the deliberate mismatches.
    const reconciled = await paymentsReconciliation.handler(
      { night: SAMPLE.night },
      makeContext(env.services, { type: paymentsReconciliation.type }).ctx,
    );
    expect(reconciled).toEqual({
      night: SAMPLE.night,
      checked: 13,
      mismatches: 4,
      newlyReported: 4,
      alreadyReported: 0,
    });
    const { Items = [] } = await env.emulators.clients.documents.send(
      new QueryCommand({
        TableName: env.names['example-reconciliation-mismatches'],
        KeyConditionExpression: 'night = :n',
        ExpressionAttributeValues: { ':n': SAMPLE.night },
      }),
    );
    expect(Object.fromEntries(Items.map((item) => [item.orderId, item.kind]))).toEqual(SAMPLE.expectedMismatches);
  });
});
