import { PutObjectCommand } from '@aws-sdk/client-s3';
import { BatchWriteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NonRetryableError, ValidationError } from '../../runtime/core/errors.ts';
import { type WeeklySalesReport, weeklySalesReport } from '../../runtime/task-types/examples/weekly-sales-report.ts';
import { defaultRegistry } from '../../runtime/task-types/index.ts';
import { type ExampleEnv, listKeys, makeContext, readObject, startExampleEnv } from './helpers.ts';

const TYPE = 'examples.weekly-sales-report';
let env: ExampleEnv;

beforeAll(async () => {
  env = await startExampleEnv();
});
afterAll(async () => {
  await env?.emulators.stop();
});

const sale = (restaurantId: string, date: string, orderId: string, totalCents: number, itemCount = 1) => ({
  restaurantId,
  saleKey: `${date}#${orderId}`,
  date,
  orderId,
  totalCents,
  itemCount,
});

async function putSales(items: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < items.length; i += 25) {
    await env.emulators.clients.documents.send(
      new BatchWriteCommand({
        RequestItems: {
          [env.names['example-sales']]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })),
        },
      }),
    );
  }
}

async function run(payload: unknown) {
  const parsed = defaultRegistry().parsePayload(TYPE, payload) as { restaurantId: string; weekStart: string };
  const { ctx } = makeContext(env.services, { type: TYPE });
  return (await weeklySalesReport.handler(parsed, ctx)) as {
    bucket: string;
    key: string;
    totals: WeeklySalesReport['totals'];
  };
}

describe('examples.weekly-sales-report', () => {
  it('writes one report with per-day and weekly totals, leaving out other weeks and restaurants', async () => {
    // Prepare: the week of Monday 2026-11-23, plus sales just outside it and another restaurant's.
    await putSales([
      sale('rest-a', '2026-11-22', 'before', 99_999),
      sale('rest-a', '2026-11-23', 'o1', 1_250, 2),
      sale('rest-a', '2026-11-23', 'o2', 2_000, 3),
      sale('rest-a', '2026-11-25', 'o3', 4_100, 1),
      sale('rest-a', '2026-11-29', 'o4', 3_333, 4),
      sale('rest-a', '2026-11-30', 'after', 88_888),
      sale('rest-b', '2026-11-24', 'x1', 77_777),
    ]);

    // Act
    const result = await run({ restaurantId: 'rest-a', weekStart: '2026-11-23' });

    // Assess
    expect(result.key).toBe('reports/weekly-sales/rest-a/2026-11-23.json');
    expect(result.bucket).toBe(env.bucket);
    const report = JSON.parse(new TextDecoder().decode(await readObject(env, result.key))) as WeeklySalesReport;
    expect(report).toEqual({
      restaurantId: 'rest-a',
      weekStart: '2026-11-23',
      weekEnd: '2026-11-29',
      days: [
        { date: '2026-11-23', orders: 2, revenueCents: 3_250 },
        { date: '2026-11-24', orders: 0, revenueCents: 0 },
        { date: '2026-11-25', orders: 1, revenueCents: 4_100 },
        { date: '2026-11-26', orders: 0, revenueCents: 0 },
        { date: '2026-11-27', orders: 0, revenueCents: 0 },
        { date: '2026-11-28', orders: 0, revenueCents: 0 },
        { date: '2026-11-29', orders: 1, revenueCents: 3_333 },
      ],
      totals: { orders: 4, revenueCents: 10_683, itemCount: 10, averageOrderCents: 2_671 },
      busiestDay: '2026-11-25',
    });
    expect(result.totals).toEqual(report.totals);
  });

  it('is idempotent: a rerun overwrites the same single object with the same bytes', async () => {
    await putSales([sale('rest-c', '2026-11-24', 'o1', 500), sale('rest-c', '2026-11-26', 'o2', 700)]);

    const first = await run({ restaurantId: 'rest-c', weekStart: '2026-11-23' });
    const firstBytes = await readObject(env, first.key);
    const second = await run({ restaurantId: 'rest-c', weekStart: '2026-11-23' });
    const secondBytes = await readObject(env, second.key);

    expect(second).toEqual(first);
    expect(Buffer.from(secondBytes).equals(Buffer.from(firstBytes))).toBe(true);
    expect(await listKeys(env, 'reports/weekly-sales/rest-c/')).toEqual([
      'reports/weekly-sales/rest-c/2026-11-23.json',
    ]);
  });

  it('a rerun after a late sale overwrites the report with corrected figures', async () => {
    await putSales([sale('rest-d', '2026-11-23', 'o1', 1_000)]);
    const first = await run({ restaurantId: 'rest-d', weekStart: '2026-11-23' });
    expect(first.totals.revenueCents).toBe(1_000);

    await env.emulators.clients.documents.send(
      new PutCommand({ TableName: env.names['example-sales'], Item: sale('rest-d', '2026-11-28', 'late', 2_500) }),
    );
    const second = await run({ restaurantId: 'rest-d', weekStart: '2026-11-23' });

    expect(second.key).toBe(first.key);
    expect(second.totals).toEqual({ orders: 2, revenueCents: 3_500, itemCount: 2, averageOrderCents: 1_750 });
    const report = JSON.parse(new TextDecoder().decode(await readObject(env, second.key))) as WeeklySalesReport;
    expect(report.busiestDay).toBe('2026-11-28');
    expect(await listKeys(env, 'reports/weekly-sales/rest-d/')).toHaveLength(1);
  });

  it('reports a week without sales as zeros', async () => {
    const result = await run({ restaurantId: 'rest-empty', weekStart: '2026-11-30' });
    const report = JSON.parse(new TextDecoder().decode(await readObject(env, result.key))) as WeeklySalesReport;
    expect(report.totals).toEqual({ orders: 0, revenueCents: 0, itemCount: 0, averageOrderCents: 0 });
    expect(report.busiestDay).toBeNull();
    expect(report.days.map((day) => day.date)).toEqual([
      '2026-11-30',
      '2026-12-01',
      '2026-12-02',
      '2026-12-03',
      '2026-12-04',
      '2026-12-05',
      '2026-12-06',
    ]);
  });

  it('does not overwrite a different restaurant or week', async () => {
    // A pre-existing report of another week stays untouched.
    await env.emulators.clients.s3.send(
      new PutObjectCommand({ Bucket: env.bucket, Key: 'reports/weekly-sales/rest-e/2026-11-16.json', Body: 'old' }),
    );
    await run({ restaurantId: 'rest-e', weekStart: '2026-11-23' });
    expect(new TextDecoder().decode(await readObject(env, 'reports/weekly-sales/rest-e/2026-11-16.json'))).toBe('old');
    expect(await listKeys(env, 'reports/weekly-sales/rest-e/')).toHaveLength(2);
  });

  it('refuses a weekStart that is not a Monday, an impossible date, or a restaurant id with a slash', () => {
    const registry = defaultRegistry();
    expect(() => registry.parsePayload(TYPE, { restaurantId: 'r', weekStart: '2026-11-24' })).toThrow(ValidationError);
    expect(() => registry.parsePayload(TYPE, { restaurantId: 'r', weekStart: '2026-02-30' })).toThrow(ValidationError);
    expect(() => registry.parsePayload(TYPE, { restaurantId: 'a/b', weekStart: '2026-11-23' })).toThrow(
      ValidationError,
    );
  });

  it('fails permanently, with a clear message, when the runtime provides no AWS clients', async () => {
    const { ctx } = makeContext({}, { type: TYPE });
    await expect(weeklySalesReport.handler({ restaurantId: 'r', weekStart: '2026-11-23' }, ctx)).rejects.toThrow(
      NonRetryableError,
    );
    await expect(weeklySalesReport.handler({ restaurantId: 'r', weekStart: '2026-11-23' }, ctx)).rejects.toThrow(
      /services\.aws/,
    );
  });

  it('fails permanently on a sales item without an integer total', async () => {
    await putSales([{ ...sale('rest-bad', '2026-11-23', 'o1', 0), totalCents: '12.50' }]);
    await expect(run({ restaurantId: 'rest-bad', weekStart: '2026-11-23' })).rejects.toThrow(NonRetryableError);
  });
});
