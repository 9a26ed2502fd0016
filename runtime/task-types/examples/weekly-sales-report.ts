/**
 * A restaurant's weekly sales report: reads the week's orders from the sales table and writes
 * one JSON report per restaurant and week to S3.
 *
 * Idempotent: the key is a function of the payload alone and the body a function of the sales
 * data alone (no timestamps), so a rerun overwrites the same object with the same bytes, or
 * with corrected figures if late sales arrived in between.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { paginateQuery } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { NonRetryableError } from '../../core/errors.ts';
import { EXAMPLE_BUCKET, EXAMPLE_SALES_TABLE } from '../../infra/example-resources.ts';
import { defineTaskType } from '../define.ts';
import { addDays, calendarDate, isMonday } from './dates.ts';
import { exampleStores } from './stores.ts';

export const weeklyReportKey = (restaurantId: string, weekStart: string): string =>
  `reports/weekly-sales/${restaurantId}/${weekStart}.json`;

export interface DailySales {
  readonly date: string;
  readonly orders: number;
  readonly revenueCents: number;
}

export interface WeeklySalesReport {
  readonly restaurantId: string;
  readonly weekStart: string;
  /** The Sunday that ends the week (inclusive). */
  readonly weekEnd: string;
  /** Always seven entries, Monday first; days without sales show zeros. */
  readonly days: readonly DailySales[];
  readonly totals: {
    readonly orders: number;
    readonly revenueCents: number;
    readonly itemCount: number;
    /** Rounded to the cent; 0 for a week without orders. */
    readonly averageOrderCents: number;
  };
  /** Highest revenue (earliest on a tie); null for a week without orders. */
  readonly busiestDay: string | null;
}

export const weeklySalesReport = defineTaskType({
  type: 'examples.weekly-sales-report',
  description:
    "Writes a restaurant's weekly sales report (orders and revenue per day and in total) to reports/weekly-sales/{restaurantId}/{weekStart}.json; a rerun overwrites it.",
  payload: z.strictObject({
    // Safe as an S3 key segment: no slashes, so one restaurant cannot write into another's folder.
    restaurantId: z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/, 'letters, digits, _ . - (at most 128)'),
    weekStart: calendarDate.refine(isMonday, 'must be a Monday (weeks run Monday to Sunday)'),
  }),
  // One Query and one small object: a small Lambda is plenty.
  defaults: { runtime: 'lambda', timeoutSeconds: 120, resources: { vcpu: 0.25, memoryMiB: 512 } },
  async handler({ restaurantId, weekStart }, ctx) {
    const { aws, names } = exampleStores(ctx, [EXAMPLE_SALES_TABLE.id, EXAMPLE_BUCKET.id]);
    const weekEnd = addDays(weekStart, 6);
    const days = new Map<string, { orders: number; revenueCents: number }>();
    for (let i = 0; i < 7; i++) days.set(addDays(weekStart, i), { orders: 0, revenueCents: 0 });
    let itemCount = 0;

    // Sort keys are `${date}#${orderId}`: every key of the week sorts between the Monday and the
    // next Monday (which no key equals, since each has a `#orderId` suffix).
    const pages = paginateQuery(
      { client: aws.documents },
      {
        TableName: names[EXAMPLE_SALES_TABLE.id],
        KeyConditionExpression: 'restaurantId = :restaurant AND saleKey BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':restaurant': restaurantId, ':from': weekStart, ':to': addDays(weekStart, 7) },
        // A report written right after the last sale must include it.
        ConsistentRead: true,
      },
      { abortSignal: ctx.signal },
    );
    for await (const page of pages) {
      for (const item of page.Items ?? []) {
        const date = String(item.saleKey).slice(0, 10);
        const day = days.get(date);
        if (!day || typeof item.totalCents !== 'number' || !Number.isInteger(item.totalCents)) {
          // Bad data does not fix itself on a retry; fail once and name the item.
          throw new NonRetryableError(
            `Sales item ${restaurantId}/${String(item.saleKey)} has no integer totalCents or a date outside the week`,
          );
        }
        day.orders += 1;
        day.revenueCents += item.totalCents;
        itemCount += typeof item.itemCount === 'number' ? item.itemCount : 0;
      }
    }

    const daily: DailySales[] = [...days].map(([date, day]) => ({ date, ...day }));
    const orders = daily.reduce((sum, day) => sum + day.orders, 0);
    const revenueCents = daily.reduce((sum, day) => sum + day.revenueCents, 0);
    const busiest = daily.reduce<DailySales | null>(
      (best, day) => (day.orders > 0 && (!best || day.revenueCents > best.revenueCents) ? day : best),
      null,
    );
    const report: WeeklySalesReport = {
      restaurantId,
      weekStart,
      weekEnd,
      days: daily,
      totals: {
        orders,
        revenueCents,
        itemCount,
        averageOrderCents: orders === 0 ? 0 : Math.round(revenueCents / orders),
      },
      busiestDay: busiest?.date ?? null,
    };

    const bucket = names[EXAMPLE_BUCKET.id];
    const key = weeklyReportKey(restaurantId, weekStart);
    await aws.s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: `${JSON.stringify(report, null, 2)}\n`,
        ContentType: 'application/json',
      }),
      { abortSignal: ctx.signal },
    );
    ctx.logger.info('weekly sales report written', { bucket, key, orders, revenueCents });
    return { bucket, key, totals: report.totals };
  },
});
