/**
 * The data stores of the example task types (runtime/task-types/examples/): one bucket and four
 * tables. Pure data in the style of resources.ts, so the local runtime (ensureExampleResources)
 * and the CDK stack create the same keys and indexes. All key attributes are strings.
 *
 * Handlers find physical names through `TaskServices.resources`, keyed by the ids below. On AWS
 * the stack passes that map as JSON in the `EXAMPLE_RESOURCES` environment variable.
 */
import type { TableDefinition } from './resources.ts';

/**
 * One bucket for all examples: photos in (`uploads/...`), thumbnails out
 * (`thumbnails/{width}/{originalKey}`), reports out (`reports/weekly-sales/{restaurantId}/{weekStart}.json`).
 * Locally the physical name is `${prefix}-example-data`; on AWS CloudFormation chooses it.
 */
export const EXAMPLE_BUCKET = { id: 'example-data' } as const;

/**
 * Restaurant sales: one item per order, `restaurantId` + `saleKey` (`${date}#${orderId}`, date
 * YYYY-MM-DD in the restaurant's business day), so one Query with BETWEEN reads a week.
 * Attributes: `date`, `orderId`, `totalCents`, `itemCount`.
 */
export const EXAMPLE_SALES_TABLE = {
  id: 'example-sales',
  partitionKey: 'restaurantId',
  sortKey: 'saleKey',
  indexes: [],
} as const satisfies TableDefinition;

/**
 * Orders: one item per order, key `orderId`. Attributes: `businessDate` (YYYY-MM-DD),
 * `restaurantId`, `totalCents`, `status` (`completed` | `cancelled`). The `byBusinessDate`
 * index lists a night's orders for reconciliation.
 */
export const EXAMPLE_ORDERS_TABLE = {
  id: 'example-orders',
  partitionKey: 'orderId',
  indexes: [
    {
      indexName: 'byBusinessDate',
      partitionKey: 'businessDate',
      sortKey: 'orderId',
      nonKeyAttributes: ['totalCents', 'status', 'restaurantId'],
    },
  ],
} as const satisfies TableDefinition;

/**
 * Payments ledger: append-only entries, key `entryId`. Attributes: `businessDate`, `orderId`,
 * `amountCents` (negative for refunds), `kind` (`payment` | `refund`). An order may have several
 * entries; reconciliation nets them. `byBusinessDate` lists a night's entries.
 */
export const EXAMPLE_LEDGER_TABLE = {
  id: 'example-payments-ledger',
  partitionKey: 'entryId',
  indexes: [
    {
      indexName: 'byBusinessDate',
      partitionKey: 'businessDate',
      sortKey: 'entryId',
      nonKeyAttributes: ['orderId', 'amountCents', 'kind'],
    },
  ],
} as const satisfies TableDefinition;

/**
 * Reconciliation mismatches: one item per night and order, `night` + `orderId`. Written only
 * with `attribute_not_exists(orderId)`, so each mismatch is reported once per night however
 * often the reconciliation runs. Attributes: `kind`, `expectedCents`, `paidCents`,
 * `reportedAt`, `reportedByTaskId`.
 */
export const EXAMPLE_MISMATCHES_TABLE = {
  id: 'example-reconciliation-mismatches',
  partitionKey: 'night',
  sortKey: 'orderId',
  indexes: [],
} as const satisfies TableDefinition;

export const EXAMPLE_TABLES = [
  EXAMPLE_SALES_TABLE,
  EXAMPLE_ORDERS_TABLE,
  EXAMPLE_LEDGER_TABLE,
  EXAMPLE_MISMATCHES_TABLE,
] as const;

/** Logical ids, the keys of `TaskServices.resources`. */
export type ExampleResourceId = typeof EXAMPLE_BUCKET.id | (typeof EXAMPLE_TABLES)[number]['id'];

export const EXAMPLE_RESOURCE_IDS: readonly ExampleResourceId[] = [
  EXAMPLE_BUCKET.id,
  ...EXAMPLE_TABLES.map((table) => table.id),
];

/** Environment variable holding the JSON map resource id → physical name (Lambda and Fargate workers). */
export const EXAMPLE_RESOURCES_ENV = 'EXAMPLE_RESOURCES';
