import { readFileSync } from 'node:fs';
import { BatchWriteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scheduledSubmitInput } from '../../runtime/app/scheduled.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { NonRetryableError, ValidationError } from '../../runtime/core/errors.ts';
import { findMismatches, paymentsReconciliation } from '../../runtime/task-types/examples/payments-reconciliation.ts';
import { defaultRegistry } from '../../runtime/task-types/index.ts';
import { type ExampleEnv, makeContext, startExampleEnv } from './helpers.ts';

const TYPE = 'examples.payments-reconciliation';
let env: ExampleEnv;

beforeAll(async () => {
  env = await startExampleEnv();
});
afterAll(async () => {
  await env?.emulators.stop();
});

type Result = { night: string; checked: number; mismatches: number; newlyReported: number; alreadyReported: number };

async function put(table: 'example-orders' | 'example-payments-ledger', items: Record<string, unknown>[]) {
  await env.emulators.clients.documents.send(
    new BatchWriteCommand({ RequestItems: { [env.names[table]]: items.map((Item) => ({ PutRequest: { Item } })) } }),
  );
}

const order = (night: string, orderId: string, totalCents: number, status = 'completed') => ({
  orderId,
  businessDate: night,
  restaurantId: 'r-1',
  totalCents,
  status,
});
const payment = (night: string, entryId: string, orderId: string, amountCents: number) => ({
  entryId,
  businessDate: night,
  orderId,
  amountCents,
  kind: amountCents < 0 ? 'refund' : 'payment',
});

async function reported(night: string) {
  const { Items = [] } = await env.emulators.clients.documents.send(
    new QueryCommand({
      TableName: env.names['example-reconciliation-mismatches'],
      KeyConditionExpression: 'night = :night',
      ExpressionAttributeValues: { ':night': night },
      ConsistentRead: true,
    }),
  );
  return Items;
}

async function run(payload: unknown, taskId?: string): Promise<Result> {
  const parsed = defaultRegistry().parsePayload(TYPE, payload) as { night: string };
  return (await paymentsReconciliation.handler(
    parsed,
    makeContext(env.services, { type: TYPE, ...(taskId ? { taskId } : {}) }).ctx,
  )) as Result;
}

/** A night with one of each case: paid, split, missing, under-paid, cancelled (refunded and not), unknown. */
async function seedNight(night: string): Promise<void> {
  await put('example-orders', [
    order(night, `${night}-paid`, 1_000),
    order(night, `${night}-split`, 3_000),
    order(night, `${night}-missing`, 2_000),
    order(night, `${night}-short`, 4_000),
    order(night, `${night}-cancelled-refunded`, 1_500, 'cancelled'),
    order(night, `${night}-cancelled-kept`, 2_500, 'cancelled'),
  ]);
  await put('example-payments-ledger', [
    payment(night, `${night}-e1`, `${night}-paid`, 1_000),
    payment(night, `${night}-e2`, `${night}-split`, 1_000),
    payment(night, `${night}-e3`, `${night}-split`, 2_000),
    payment(night, `${night}-e4`, `${night}-short`, 3_900),
    payment(night, `${night}-e5`, `${night}-cancelled-refunded`, 1_500),
    payment(night, `${night}-e6`, `${night}-cancelled-refunded`, -1_500),
    payment(night, `${night}-e7`, `${night}-cancelled-kept`, 2_500),
    payment(night, `${night}-e8`, `${night}-ghost`, 700),
  ]);
}

describe('findMismatches', () => {
  it('nets refunds, expects zero for cancelled orders, and flags payments without an order', () => {
    const ledger = new Map([
      ['a', { paidCents: 100, entries: 1 }],
      ['b', { paidCents: 0, entries: 2 }],
      ['c', { paidCents: 50, entries: 1 }],
      ['z', { paidCents: 9, entries: 1 }],
    ]);
    const orders = [
      { orderId: 'a', totalCents: 100 },
      { orderId: 'b', totalCents: 300, status: 'cancelled' },
      { orderId: 'c', totalCents: 60 },
      { orderId: 'd', totalCents: 10 },
      { orderId: 'e', totalCents: 0 },
    ];
    expect(findMismatches(orders, ledger)).toEqual([
      { orderId: 'c', kind: 'amount_mismatch', expectedCents: 60, paidCents: 50, ledgerEntries: 1 },
      { orderId: 'd', kind: 'missing_payment', expectedCents: 10, paidCents: 0, ledgerEntries: 0 },
      { orderId: 'z', kind: 'payment_without_order', expectedCents: 0, paidCents: 9, ledgerEntries: 1 },
    ]);
  });
});

describe('examples.payments-reconciliation', () => {
  it('records each mismatch of the night with its kind and amounts', async () => {
    const night = '2026-12-01';
    await seedNight(night);
    // Another night's trouble is not this night's business.
    await put('example-orders', [order('2026-12-02', 'next-day-unpaid', 999)]);

    const result = await run({ night });

    expect(result).toEqual({ night, checked: 7, mismatches: 4, newlyReported: 4, alreadyReported: 0 });
    const items = await reported(night);
    expect(
      items.map(({ orderId, kind, expectedCents, paidCents, ledgerEntries }) => ({
        orderId,
        kind,
        expectedCents,
        paidCents,
        ledgerEntries,
      })),
    ).toEqual([
      {
        orderId: `${night}-cancelled-kept`,
        kind: 'amount_mismatch',
        expectedCents: 0,
        paidCents: 2_500,
        ledgerEntries: 1,
      },
      { orderId: `${night}-ghost`, kind: 'payment_without_order', expectedCents: 0, paidCents: 700, ledgerEntries: 1 },
      { orderId: `${night}-missing`, kind: 'missing_payment', expectedCents: 2_000, paidCents: 0, ledgerEntries: 0 },
      { orderId: `${night}-short`, kind: 'amount_mismatch', expectedCents: 4_000, paidCents: 3_900, ledgerEntries: 1 },
    ]);
    expect(items.every((item) => typeof item.reportedAt === 'string' && item.reportedOnAttempt === 1)).toBe(true);
  });

  it('reports each mismatch once per night however often it runs, and a new one on the next run', async () => {
    const night = '2026-12-03';
    await seedNight(night);

    const first = await run({ night }, 'first-run');
    const afterFirst = await reported(night);
    const second = await run({ night }, 'second-run');
    const afterSecond = await reported(night);

    expect(first).toMatchObject({ mismatches: 4, newlyReported: 4, alreadyReported: 0 });
    expect(second).toMatchObject({ mismatches: 4, newlyReported: 0, alreadyReported: 4 });
    // Untouched: the records still name the run that reported them first.
    expect(afterSecond).toEqual(afterFirst);
    expect(afterSecond.every((item) => item.reportedByTaskId === 'first-run')).toBe(true);

    // A late order nobody paid for appears between runs.
    await env.emulators.clients.documents.send(
      new PutCommand({ TableName: env.names['example-orders'], Item: order(night, `${night}-late`, 1_234) }),
    );
    const third = await run({ night }, 'third-run');
    expect(third).toEqual({ night, checked: 8, mismatches: 5, newlyReported: 1, alreadyReported: 4 });
    const afterThird = await reported(night);
    expect(afterThird).toHaveLength(5);
    expect(afterThird.find((item) => item.orderId === `${night}-late`)).toMatchObject({
      kind: 'missing_payment',
      reportedByTaskId: 'third-run',
    });
  });

  it('reports once even when two runs race', async () => {
    const night = '2026-12-05';
    await seedNight(night);
    const [a, b] = await Promise.all([run({ night }), run({ night })]);
    expect(a.newlyReported + b.newlyReported).toBe(4);
    expect(a.alreadyReported + b.alreadyReported).toBe(4);
    expect(await reported(night)).toHaveLength(4);
  });

  it('fails permanently on a ledger entry whose amount is not integer cents', async () => {
    const night = '2026-12-07';
    await put('example-payments-ledger', [{ ...payment(night, 'bad-entry', 'o-1', 100), amountCents: '1.00' }]);
    const error = await run({ night }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NonRetryableError);
    expect((error as Error).message).toMatch(/bad-entry/);
  });

  it('a night without orders or payments checks nothing and reports nothing', async () => {
    expect(await run({ night: '2027-01-01' })).toEqual({
      night: '2027-01-01',
      checked: 0,
      mismatches: 0,
      newlyReported: 0,
      alreadyReported: 0,
    });
  });

  it('accepts a date, a schedule time (its UTC date) and a backward offset; refuses anything else', async () => {
    const registry = defaultRegistry();
    expect(registry.parsePayload(TYPE, { night: '2026-11-29T02:00:00Z' })).toEqual({ night: '2026-11-29' });
    expect(registry.parsePayload(TYPE, { night: '2026-11-29' })).toEqual({ night: '2026-11-29' });
    // A 02:00 firing on the 1st covers the night of the 30th (and the month boundary).
    expect(registry.parsePayload(TYPE, { night: '2026-12-01', offsetDays: -1 })).toEqual({ night: '2026-11-30' });
    expect(() => registry.parsePayload(TYPE, { night: '2026-12-01', offsetDays: 1 })).toThrow(ValidationError);
    expect(() => registry.parsePayload(TYPE, { night: '29/11/2026' })).toThrow(ValidationError);
    expect(() => registry.parsePayload(TYPE, {})).toThrow(ValidationError);
  });

  it('a nightly schedule firing at 02:00 UTC submits the night that just ended', () => {
    const input = scheduledSubmitInput({
      scheduleName: 'nightly-payments-reconciliation',
      scheduledTime: '2026-12-01T02:00:00Z',
      task: { tenantId: 'finance', type: TYPE, payload: { night: '{{date}}', offsetDays: -1 } },
    });
    expect(defaultRegistry().parsePayload(TYPE, input.payload)).toEqual({ night: '2026-11-30' });
  });

  it("the default configuration's nightly schedule submits a payload the type accepts", () => {
    const config = parseConfig(JSON.parse(readFileSync(new URL('../../config/default.json', import.meta.url), 'utf8')));
    const schedule = config.schedules.find((entry) => entry.task.type === TYPE);
    expect(schedule).toBeDefined();
    if (!schedule) return;
    const input = scheduledSubmitInput({
      scheduleName: schedule.name,
      scheduledTime: '2026-12-01T02:00:00Z',
      task: schedule.task,
    });
    expect(defaultRegistry().parsePayload(TYPE, input.payload)).toEqual({ night: '2026-11-30' });
  });
});
