// A task module: the default export is the list of this project's task types. The same file
// runs locally (`npx tasks dev --task-types ./tasks.mjs`, every type in-process) and on AWS
// (app.mjs bundles it into the API, which checks payloads against its schemas, the scheduler and
// the pool workers; shop.receipt runs in this project's own container, worker/).
import { defineTaskType, NonRetryableError, z } from 'serverless-task-scheduler';

export const orderTotal = defineTaskType({
  type: 'shop.order-total',
  description: 'Totals an order: the lines times their prices, less the discount, in cents.',
  payload: z.strictObject({
    orderId: z.string().min(1),
    lines: z
      .array(
        z.strictObject({ sku: z.string(), quantity: z.number().int().positive(), priceCents: z.number().int().min(0) }),
      )
      .min(1),
    discountCents: z.number().int().min(0).default(0),
  }),
  defaults: { maxAttempts: 2, timeoutSeconds: 30 },
  async handler({ orderId, lines, discountCents }, ctx) {
    const subtotal = lines.reduce((sum, line) => sum + line.quantity * line.priceCents, 0);
    // A discount larger than the order will not fix itself on a retry.
    if (discountCents > subtotal) throw new NonRetryableError(`${orderId}: discount exceeds the subtotal`);
    ctx.heartbeat();
    return { orderId, totalCents: subtotal - discountCents };
  },
});

export const receipt = defineTaskType({
  type: 'shop.receipt',
  description: "Writes an order receipt as text. On AWS it runs in this project's own container (worker/).",
  payload: z.strictObject({ orderId: z.string().min(1), totalCents: z.number().int().min(0) }),
  defaults: { timeoutSeconds: 60 },
  async handler({ orderId, totalCents }) {
    return { orderId, receipt: `Order ${orderId}: ${(totalCents / 100).toFixed(2)} EUR` };
  },
});

export default [orderTotal, receipt];
