// Submits one task of this project's type and prints its result:
//   SCHEDULER_ENDPOINT=http://127.0.0.1:3000 node submit.mjs
// (on AWS, the stack's ApiUrl output; the client signs its requests with your AWS credentials)
import { SchedulerClient } from 'serverless-task-scheduler/client';

const client = new SchedulerClient({ endpoint: process.env.SCHEDULER_ENDPOINT ?? 'http://127.0.0.1:3000' });
const { taskId } = await client.submit({
  tenantId: 'shop',
  type: 'shop.order-total',
  payload: {
    orderId: 'o-1001',
    lines: [
      { sku: 'tea', quantity: 3, priceCents: 450 },
      { sku: 'mug', quantity: 1, priceCents: 1200 },
    ],
    discountCents: 200,
  },
});
const task = await client.waitFor(taskId, { timeoutMs: 60_000 });
console.log(JSON.stringify({ state: task.state, result: task.result }));
