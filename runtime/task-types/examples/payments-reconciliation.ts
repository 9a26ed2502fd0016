/**
 * Nightly reconciliation of the payments ledger against the orders table: every order of the
 * night must be paid exactly its total (net of refunds; a cancelled order nets to zero), and
 * every ledger entry must belong to an order of that night.
 *
 * Idempotent where it matters: each mismatch is recorded with a conditional put keyed by
 * night + order id (`attribute_not_exists`), so it is reported once per night however often
 * the job runs (retries, a manual rerun, a duplicate schedule delivery), while a mismatch that
 * appears between runs is reported by the next run.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand, paginateQuery } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { NonRetryableError } from '../../core/errors.ts';
import { EXAMPLE_LEDGER_TABLE, EXAMPLE_MISMATCHES_TABLE, EXAMPLE_ORDERS_TABLE } from '../../infra/example-resources.ts';
import { defineTaskType } from '../define.ts';
import { addDays, calendarDate } from './dates.ts';
import { exampleStores } from './stores.ts';

export const MISMATCH_KINDS = ['missing_payment', 'amount_mismatch', 'payment_without_order'] as const;
export type MismatchKind = (typeof MISMATCH_KINDS)[number];

export interface Mismatch {
  readonly orderId: string;
  readonly kind: MismatchKind;
  /** What the ledger should hold for the order: its total, or 0 when cancelled or unknown. */
  readonly expectedCents: number;
  /** Net of the night's ledger entries for the order. */
  readonly paidCents: number;
  readonly ledgerEntries: number;
}

interface OrderRow {
  readonly orderId: string;
  readonly totalCents: number;
  readonly status?: string;
}

/** Amounts are integer cents; anything else is bad data that no retry will fix. */
function cents(value: unknown, what: string): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  throw new NonRetryableError(`${what} has no integer amount in cents (got ${JSON.stringify(value)})`);
}

const expectedFor = (order: OrderRow): number => (order.status === 'cancelled' ? 0 : order.totalCents);

/** Pure comparison, so the rules read (and test) apart from the I/O. */
export function findMismatches(
  orders: readonly OrderRow[],
  ledger: ReadonlyMap<string, { paidCents: number; entries: number }>,
): Mismatch[] {
  const mismatches: Mismatch[] = [];
  const seen = new Set<string>();
  for (const order of orders) {
    seen.add(order.orderId);
    const paid = ledger.get(order.orderId);
    const expectedCents = expectedFor(order);
    const paidCents = paid?.paidCents ?? 0;
    if (paidCents === expectedCents) continue;
    mismatches.push({
      orderId: order.orderId,
      kind: paid ? 'amount_mismatch' : 'missing_payment',
      expectedCents,
      paidCents,
      ledgerEntries: paid?.entries ?? 0,
    });
  }
  for (const [orderId, paid] of ledger) {
    if (seen.has(orderId)) continue;
    mismatches.push({
      orderId,
      kind: 'payment_without_order',
      expectedCents: 0,
      paidCents: paid.paidCents,
      ledgerEntries: paid.entries,
    });
  }
  return mismatches.sort((a, b) => (a.orderId < b.orderId ? -1 : a.orderId > b.orderId ? 1 : 0));
}

export const paymentsReconciliation = defineTaskType({
  type: 'examples.payments-reconciliation',
  description:
    "Compares the night's payments ledger with its orders and records each mismatch once per night in the mismatches table.",
  payload: z
    .strictObject({
      /**
       * The business date to reconcile. Schedules pass `"{{date}}"` (the scheduled date); a full
       * ISO 8601 time is accepted too and its UTC date used.
       */
      night: z.union([
        calendarDate,
        z.iso.datetime({ offset: true }).transform((time) => new Date(time).toISOString().slice(0, 10)),
      ]),
      /**
       * Added to `night`: a schedule firing at 02:00 passes -1 to cover the night that just
       * ended. Never "today" read from the clock: a retry after midnight must redo the same night.
       */
      offsetDays: z.number().int().min(-7).max(0).default(0),
    })
    .transform(({ night, offsetDays }) => ({ night: addDays(night, offsetDays) })),
  // Two Queries and a write per mismatch: a night of a few hundred thousand orders fits a
  // Lambda's 15 minutes and 2 GiB. Submit with runtime "fargate" for bigger ledgers.
  defaults: { runtime: 'lambda', timeoutSeconds: 840, maxAttempts: 5, resources: { vcpu: 1, memoryMiB: 2048 } },
  async handler({ night }, ctx) {
    const { aws, names } = exampleStores(ctx, [
      EXAMPLE_LEDGER_TABLE.id,
      EXAMPLE_ORDERS_TABLE.id,
      EXAMPLE_MISMATCHES_TABLE.id,
    ]);
    const send = { abortSignal: ctx.signal };

    // Both tables list a night through their byBusinessDate index (paginated).
    const listNight = (tableName: string) =>
      paginateQuery(
        { client: aws.documents },
        {
          TableName: tableName,
          IndexName: 'byBusinessDate',
          KeyConditionExpression: 'businessDate = :night',
          ExpressionAttributeValues: { ':night': night },
        },
        send,
      );

    const ledger = new Map<string, { paidCents: number; entries: number }>();
    for await (const page of listNight(names[EXAMPLE_LEDGER_TABLE.id])) {
      for (const entry of page.Items ?? []) {
        const orderId = String(entry.orderId);
        const sum = ledger.get(orderId) ?? { paidCents: 0, entries: 0 };
        sum.paidCents += cents(entry.amountCents, `ledger entry ${String(entry.entryId)}`);
        sum.entries += 1;
        ledger.set(orderId, sum);
      }
    }
    await ctx.heartbeat();

    const orders: OrderRow[] = [];
    for await (const page of listNight(names[EXAMPLE_ORDERS_TABLE.id])) {
      for (const order of page.Items ?? []) {
        const orderId = String(order.orderId);
        orders.push({ orderId, totalCents: cents(order.totalCents, `order ${orderId}`), status: order.status });
      }
    }
    await ctx.heartbeat();

    const checked = new Set([...orders.map((order) => order.orderId), ...ledger.keys()]).size;
    let newlyReported = 0;
    let alreadyReported = 0;
    let mismatches = 0;
    for (const found of findMismatches(orders, ledger)) {
      ctx.signal.throwIfAborted();
      const mismatch = await confirmAgainstOrder(found, aws.documents, names[EXAMPLE_ORDERS_TABLE.id], send);
      if (!mismatch) continue;
      mismatches += 1;
      try {
        await aws.documents.send(
          new PutCommand({
            TableName: names[EXAMPLE_MISMATCHES_TABLE.id],
            Item: {
              night,
              ...mismatch,
              reportedAt: new Date().toISOString(),
              reportedByTaskId: ctx.taskId,
              reportedOnAttempt: ctx.attempt,
            },
            // The once-per-night guarantee: a second report of the same night and order is refused.
            ConditionExpression: 'attribute_not_exists(orderId)',
          }),
          send,
        );
        newlyReported += 1;
      } catch (error) {
        if (
          !(
            error instanceof ConditionalCheckFailedException ||
            (error as Error).name === 'ConditionalCheckFailedException'
          )
        )
          throw error;
        alreadyReported += 1;
      }
    }

    ctx.logger.info('payments reconciled', { night, checked, mismatches, newlyReported, alreadyReported });
    return { night, checked, mismatches, newlyReported, alreadyReported };
  },
});

/**
 * The orders index is eventually consistent: before recording a mismatch for good, re-read the
 * order from the table itself, so an order updated moments ago (say, just cancelled) is judged
 * by its current total and status.
 */
async function confirmAgainstOrder(
  mismatch: Mismatch,
  documents: DynamoDBDocumentClient,
  ordersTable: string,
  send: { abortSignal: AbortSignal },
): Promise<Mismatch | undefined> {
  if (mismatch.kind === 'payment_without_order') return mismatch;
  const { Item } = await documents.send(
    new GetCommand({ TableName: ordersTable, Key: { orderId: mismatch.orderId }, ConsistentRead: true }),
    send,
  );
  if (!Item) {
    // The order is gone (or never was): only money taken for it is a mismatch.
    return mismatch.paidCents === 0 ? undefined : { ...mismatch, kind: 'payment_without_order', expectedCents: 0 };
  }
  const expectedCents = expectedFor({
    orderId: mismatch.orderId,
    totalCents: cents(Item.totalCents, `order ${mismatch.orderId}`),
    status: Item.status,
  });
  return expectedCents === mismatch.paidCents ? undefined : { ...mismatch, expectedCents };
}
