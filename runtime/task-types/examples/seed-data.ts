/**
 * Sample data for the example task types: a week of sales for two restaurants, a night of
 * orders and ledger entries with deliberate mismatches, and a few generated photos (plus one
 * file that is not a photo). Deterministic keys and values, so seeding twice changes nothing.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { seededRandom } from '../../core/random.ts';
import {
  EXAMPLE_BUCKET,
  EXAMPLE_LEDGER_TABLE,
  EXAMPLE_ORDERS_TABLE,
  EXAMPLE_SALES_TABLE,
} from '../../infra/example-resources.ts';
import { addDays } from './dates.ts';
import { loadSharp, SHARP_MISSING } from './sharp.ts';
import type { ExampleResourceNames } from './stores.ts';

/** What the sample data covers: submit the examples with these values. */
export const SAMPLE = {
  restaurantIds: ['r-001', 'r-002'],
  /** A Monday. Sales also fall on the Sunday before and the Monday after, outside the week. */
  weekStart: '2026-11-23',
  night: '2026-11-29',
  photoPrefix: 'uploads/2026-11-29/',
  photos: [
    { name: 'terrace.png', width: 1600, height: 1067, colour: { r: 214, g: 120, b: 64 } },
    { name: 'kitchen.png', width: 1200, height: 900, colour: { r: 40, g: 120, b: 180 } },
    { name: 'dessert.png', width: 800, height: 800, colour: { r: 230, g: 200, b: 90 } },
  ],
  /** Order ids the reconciliation of `night` reports, and why. */
  expectedMismatches: {
    'o-20261129-03': 'missing_payment',
    'o-20261129-07': 'amount_mismatch',
    'o-20261129-10': 'amount_mismatch',
    'o-unknown-1': 'payment_without_order',
  },
} as const;

export interface SeedSummary {
  readonly sales: number;
  readonly orders: number;
  readonly ledgerEntries: number;
  readonly objects: readonly string[];
}

export function sampleSales(): Record<string, unknown>[] {
  const random = seededRandom(2026);
  const items: Record<string, unknown>[] = [];
  for (const restaurantId of SAMPLE.restaurantIds) {
    // Day -1 and day 7 lie outside the week: the report must leave them out.
    for (let day = -1; day <= 7; day++) {
      const date = addDays(SAMPLE.weekStart, day);
      const orders = 3 + Math.floor(random() * 5);
      for (let n = 1; n <= orders; n++) {
        const orderId = `${restaurantId}-${date.replaceAll('-', '')}-${String(n).padStart(2, '0')}`;
        items.push({
          restaurantId,
          saleKey: `${date}#${orderId}`,
          date,
          orderId,
          totalCents: 800 + Math.floor(random() * 6000),
          itemCount: 1 + Math.floor(random() * 4),
        });
      }
    }
  }
  return items;
}

/** Twelve orders on `night`; the ledger pays them with four deliberate mismatches. */
export function sampleOrdersAndLedger(): { orders: Record<string, unknown>[]; ledger: Record<string, unknown>[] } {
  const night = SAMPLE.night;
  const orders: Record<string, unknown>[] = [];
  const ledger: Record<string, unknown>[] = [];
  const entry = (entryId: string, orderId: string, amountCents: number, kind = 'payment') =>
    ledger.push({ entryId, businessDate: night, orderId, amountCents, kind });
  for (let n = 1; n <= 12; n++) {
    const orderId = `o-20261129-${String(n).padStart(2, '0')}`;
    const totalCents = 1000 + n * 275;
    const cancelled = n === 10 || n === 11;
    orders.push({
      orderId,
      businessDate: night,
      restaurantId: SAMPLE.restaurantIds[n % 2],
      totalCents,
      status: cancelled ? 'cancelled' : 'completed',
    });
    if (n === 3) continue; // missing_payment: never charged
    if (n === 5) {
      // Split payment: two entries that net to the total (not a mismatch).
      entry(`p-${orderId}-a`, orderId, 1000);
      entry(`p-${orderId}-b`, orderId, totalCents - 1000);
      continue;
    }
    if (n === 7) {
      entry(`p-${orderId}`, orderId, totalCents - 150); // amount_mismatch: under-charged
      continue;
    }
    entry(`p-${orderId}`, orderId, totalCents);
    // 11 was refunded after cancelling (nets to zero); 10 was cancelled but never refunded.
    if (n === 11) entry(`r-${orderId}`, orderId, -totalCents, 'refund');
  }
  entry('p-o-unknown-1', 'o-unknown-1', 4200); // payment_without_order
  return { orders, ledger };
}

/** Write the sample data; overwrites the same keys with the same values on every call. */
export async function seedExampleData(
  clients: { readonly documents: DynamoDBDocumentClient; readonly dynamodb?: DynamoDBClient; readonly s3: S3Client },
  names: ExampleResourceNames,
): Promise<SeedSummary> {
  const sales = sampleSales();
  const { orders, ledger } = sampleOrdersAndLedger();
  await writeAll(clients.documents, names[EXAMPLE_SALES_TABLE.id], sales);
  await writeAll(clients.documents, names[EXAMPLE_ORDERS_TABLE.id], orders);
  await writeAll(clients.documents, names[EXAMPLE_LEDGER_TABLE.id], ledger);

  const bucket = names[EXAMPLE_BUCKET.id];
  const objects: string[] = [];
  // Without sharp (an optional peer of the installed package) there are no sample photos.
  const photos = (await loadSharp()) ? SAMPLE.photos : [];
  for (const photo of photos) {
    const key = `${SAMPLE.photoPrefix}${photo.name}`;
    const body = await samplePhoto(photo.width, photo.height, photo.colour);
    await clients.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: 'image/png' }));
    objects.push(key);
  }
  // Not a photo: the resize example skips it and says why.
  const notesKey = `${SAMPLE.photoPrefix}notes.txt`;
  await clients.s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: notesKey,
      Body: 'shot list for the menu\n',
      ContentType: 'text/plain',
    }),
  );
  objects.push(notesKey);
  return { sales: sales.length, orders: orders.length, ledgerEntries: ledger.length, objects };
}

/** A PNG with a diagonal band, so a resized thumbnail is visibly the same picture. */
export async function samplePhoto(
  width: number,
  height: number,
  colour: { r: number; g: number; b: number },
): Promise<Buffer> {
  const band = `<svg width="${width}" height="${height}"><polygon points="0,${height} ${width * 0.4},0 ${width * 0.6},0 ${width * 0.2},${height}" fill="white" fill-opacity="0.6"/></svg>`;
  const sharp = await loadSharp();
  if (!sharp) throw new Error(SHARP_MISSING);
  return sharp({ create: { width, height, channels: 3, background: colour } })
    .composite([{ input: Buffer.from(band) }])
    .png()
    .toBuffer();
}

/** BatchWrite in chunks of 25 (the API's limit), resubmitting what DynamoDB left unprocessed. */
async function writeAll(
  documents: DynamoDBDocumentClient,
  tableName: string,
  items: readonly Record<string, unknown>[],
): Promise<void> {
  for (let start = 0; start < items.length; start += 25) {
    let requests = items.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } }));
    for (let round = 0; requests.length > 0; round++) {
      if (round > 8) throw new Error(`Seeding ${tableName}: DynamoDB kept items unprocessed`);
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** round));
      const result = await documents.send(new BatchWriteCommand({ RequestItems: { [tableName]: requests } }));
      requests = (result.UnprocessedItems?.[tableName] ?? []) as typeof requests;
    }
  }
}
