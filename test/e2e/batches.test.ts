/**
 * Batches live on the local runtime over HTTP (issue 25's "done when"): a 1,000-item batch with
 * 3 bad items gives 997 tasks and 3 errors at their indexes; the same batch again returns the
 * same task ids and creates nothing; every task runs once; the then-task is submitted after the
 * last member ended, with the counts. Assertions are on what was recorded (handler runs, states,
 * times in DynamoDB), never on how fast the machine ran: the deadlines are liveness guards.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LocalServer } from '../../local/server.ts';
import { NonRetryableError } from '../../runtime/core/errors.ts';
import { defineTaskType } from '../../runtime/task-types/define.ts';
import { apiOf, startTestServer } from '../helpers/live-server.ts';

/** Handler runs by tag: every task must run exactly once. */
const runs = new Map<string, number>();
const countType = defineTaskType({
  type: 'test.count',
  description: 'Counts its runs; fails for good when asked.',
  payload: z.object({ tag: z.string(), fails: z.boolean().optional(), batch: z.unknown().optional() }),
  async handler({ tag, fails }) {
    runs.set(tag, (runs.get(tag) ?? 0) + 1);
    if (fails) throw new NonRetryableError(`planned failure of ${tag}`);
    return { tag };
  },
});

let server: LocalServer;
beforeAll(async () => {
  server = await startTestServer([countType], 50);
});
afterAll(async () => {
  await server?.stop();
});

const api = apiOf(() => server.url);

type ItemResult = { taskId: string; state: string; created: boolean } | { error: { code: string; message: string } };
interface BatchView {
  batchId: string;
  total: number;
  counts: { succeeded: number; failed: number; cancelled: number; excluded: number; pending: number };
  endedAt?: string;
  thenTaskId?: string;
}
interface TaskView {
  taskId: string;
  state: string;
  attempts: number;
  submittedAt: string;
  finishedAt: string | null;
  payload: { tag: string; batch?: unknown };
}

const TENANT = 'bulk-e2e';
const BAD = new Map<number, unknown>([
  [17, { tenantId: TENANT, type: 'test.nope', payload: { tag: 'bad-17' } }],
  [500, { tenantId: TENANT, type: 'test.count', priority: 'urgent', payload: { tag: 'bad-500' } }],
  [999, { tenantId: TENANT, type: 'test.count', payload: { tag: 999 } }],
]);
/** Every 100th item (but the bad ones) fails for good. */
const fails = (index: number) => index % 100 === 50;

const body = {
  tasks: Array.from(
    { length: 1000 },
    (_, index) =>
      BAD.get(index) ?? {
        tenantId: TENANT,
        type: 'test.count',
        payload: { tag: `m-${index}`, ...(fails(index) ? { fails: true } : {}) },
      },
  ),
  // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (PRODUCT.md, POST /v1/tasks/batch)
  then: { tenantId: TENANT, type: 'test.count', payload: { tag: 'then' } },
};

/** Poll until `check` gives a value (a liveness guard, not a timing assertion). */
async function until<T>(what: string, check: () => Promise<T | undefined>, deadlineMs = 480_000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${deadlineMs} ms`);
    await sleep(250);
  }
}

describe('Batches over HTTP', () => {
  it('runs a 1,000-item batch with 3 bad items, idempotently, then its then-task once with the counts', async () => {
    // Act: the batch, and the same batch again
    const first = await api<{ batchId: string; results: ItemResult[] }>('POST', '/v1/tasks/batch', body);
    const again = await api<{ batchId: string; results: ItemResult[] }>('POST', '/v1/tasks/batch', body);

    // Assess: 997 tasks, 3 errors at their indexes; the repeat names the same tasks and creates none
    expect(first.status).toBe(200);
    const errorsAt = first.body.results.flatMap((result, index) => ('error' in result ? [index] : []));
    expect(errorsAt).toEqual([17, 500, 999]);
    const ids = first.body.results.flatMap((result) => ('taskId' in result ? [result.taskId] : []));
    expect(new Set(ids).size).toBe(997);
    expect(again.status).toBe(200);
    expect(again.body.batchId).toBe(first.body.batchId);
    expect(again.body.results.map((result) => ('taskId' in result ? result.taskId : result.error.code))).toEqual(
      first.body.results.map((result) => ('taskId' in result ? result.taskId : result.error.code)),
    );
    expect(again.body.results.filter((result) => 'created' in result && result.created)).toEqual([]);

    // Assess: the then-task, once every member ended, with the counts
    const batch = await until('the then-task', async () => {
      const { body: view } = await api<BatchView>('GET', `/v1/batches/${first.body.batchId}`);
      return view.thenTaskId ? view : undefined;
    });
    expect(batch.counts).toEqual({ succeeded: 987, failed: 10, cancelled: 0, excluded: 3, pending: 0 });
    const thenTask = await until('the then-task ends', async () => {
      const { body: task } = await api<TaskView>('GET', `/v1/tasks/${batch.thenTaskId}`);
      return task.state === 'SUCCEEDED' ? task : undefined;
    });
    expect(thenTask.payload).toEqual({
      tag: 'then',
      batch: { batchId: first.body.batchId, succeeded: 987, failed: 10, cancelled: 0 },
    });
    const members = await Promise.all(ids.map(async (id) => (await api<TaskView>('GET', `/v1/tasks/${id}`)).body));
    const lastEnd = Math.max(...members.map((task) => Date.parse(task.finishedAt!)));
    expect(Date.parse(thenTask.submittedAt)).toBeGreaterThanOrEqual(lastEnd);

    // Assess: every task ran once (members, and the then-task)
    expect(members.filter((task) => task.attempts !== 1)).toEqual([]);
    const tags = [...members.map((task) => task.payload.tag), 'then'];
    expect(tags.filter((tag) => runs.get(tag) !== 1)).toEqual([]);
    expect(runs.size).toBe(998);

    // Assess: the succeeded members are listed by their batch, in submit order, not among the
    // tenant's SUCCEEDED tasks (where the then-task, not a member, is); the failed ones are both.
    const listedByBatch: TaskView[] = [];
    let cursor: string | undefined;
    do {
      const query = `state=SUCCEEDED&limit=100${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await api<{ items: TaskView[]; nextCursor?: string }>(
        'GET',
        `/v1/batches/${first.body.batchId}/tasks?${query}`,
      );
      expect(page.status).toBe(200);
      listedByBatch.push(...page.body.items);
      cursor = page.body.nextCursor;
    } while (cursor);
    const succeededIds = ids.filter((_, i) => members[i]!.state === 'SUCCEEDED');
    expect(listedByBatch.map((task) => task.taskId)).toEqual(succeededIds);
    const tenantSucceeded = await api<{ items: TaskView[] }>('GET', `/v1/tasks?tenantId=${TENANT}&state=SUCCEEDED`);
    expect(tenantSucceeded.body.items.map((task) => task.taskId)).toEqual([batch.thenTaskId]);
    const failedByBatch = await api<{ items: TaskView[] }>(
      'GET',
      `/v1/batches/${first.body.batchId}/tasks?state=FAILED&limit=100`,
    );
    const tenantFailed = await api<{ items: TaskView[] }>('GET', `/v1/tasks?tenantId=${TENANT}&state=FAILED&limit=100`);
    expect(failedByBatch.body.items).toHaveLength(10);
    expect(tenantFailed.body.items.map((task) => task.taskId).sort()).toEqual(
      failedByBatch.body.items.map((task) => task.taskId).sort(),
    );
  }, 600_000);

  it("lists the tenant's batches and refuses what is not a batch before writing anything", async () => {
    // Act
    const listed = await api<{ items: BatchView[] }>('GET', `/v1/batches?tenantId=${TENANT}`);
    const tooMany = await api<{ error: { code: string } }>('POST', '/v1/tasks/batch', {
      tasks: Array.from({ length: 1001 }, () => body.tasks[0]),
    });
    const mixed = await api<{ error: { code: string } }>('POST', '/v1/tasks/batch', {
      tasks: [body.tasks[0], { ...(body.tasks[1] as object), tenantId: 'someone-else' }],
    });

    // Assess
    expect(listed.body.items.length).toBeGreaterThanOrEqual(1);
    expect(listed.body.items[0]?.endedAt).toBeDefined();
    expect(tooMany.status).toBe(400);
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.code).toBe('mixed_tenants');
  });
});
