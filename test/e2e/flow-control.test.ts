/**
 * Flow control live on the local runtime over HTTP (issue 26's "done when"): a start-rate limit,
 * pause and resume of a tenant and of a task type, a concurrency key. Every assertion is on what
 * DynamoDB recorded (dispatch and finish times, states) or on gated tasks the test releases, never
 * on how fast the machine ran: a start, for the rate limit, is the dispatch the scheduler records.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LocalServer } from '../../local/server.ts';
import { firstNonConforming } from '../../runtime/core/policy/rate.ts';
import { defineTaskType } from '../../runtime/task-types/define.ts';
import { apiOf, startTestServer } from '../helpers/live-server.ts';

/** Gated tasks running now, by tag: calling one ends that task. */
const gates = new Map<string, () => void>();
let gatesOpen = false;
const payload = z.strictObject({
  ms: z.number().int().min(0).max(5000),
  tag: z.string(),
  gated: z.boolean().optional(),
});
async function work({ ms, tag, gated }: z.infer<typeof payload>, ctx: { signal: AbortSignal }) {
  await new Promise<void>((resolve) => {
    if (!gated || gatesOpen) return void setTimeout(resolve, ms);
    // Released: out of the map at once, so the test sees which tasks still run.
    const release = () => {
      gates.delete(tag);
      resolve();
    };
    gates.set(tag, release);
    ctx.signal.addEventListener('abort', release);
  });
  return { tag };
}
const flow = defineTaskType({
  type: 'test.flow',
  description: 'Sleeps or waits for its gate.',
  payload,
  handler: work,
});
const other = defineTaskType({ type: 'test.other', description: 'The same, another type.', payload, handler: work });

let server: LocalServer | undefined;
afterEach(async () => {
  gatesOpen = true;
  for (const release of gates.values()) release();
  await server?.stop();
  server = undefined;
});

async function start(): Promise<LocalServer> {
  gatesOpen = false;
  server = await startTestServer([flow, other], 50);
  return server;
}

const api = apiOf(() => server!.url);

interface TaskView {
  taskId: string;
  state: string;
  dispatchedAt: string | null;
  finishedAt: string | null;
  payload: { tag: string };
  wait?: { reason: string; maxWaitSeconds: number | null };
}

async function submit(body: Record<string, unknown>): Promise<string> {
  const { status, body: task } = await api<{ taskId: string }>('POST', '/v1/tasks', body);
  expect(status).toBe(202);
  return task.taskId;
}

async function tasksOf(tenantId: string): Promise<TaskView[]> {
  const { body } = await api<{ items: TaskView[] }>('GET', `/v1/tasks?tenantId=${tenantId}&limit=100`);
  return body.items;
}

async function until(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms`);
    await sleep(100);
  }
}

const allDone = (tenantId: string, count: number) => async () => {
  const tasks = await tasksOf(tenantId);
  return tasks.length === count && tasks.every((task) => task.state === 'SUCCEEDED');
};

describe('Flow control on the local runtime', () => {
  it('starts 40 tasks at 4/s with burst 4: never more than 4 x 2 + 4 in any 2 s, as recorded', async () => {
    // Prepare
    await start();
    expect(
      (await api('PUT', '/v1/tenants/paced', { weight: 1, maxConcurrency: 50, maxStartsPerSecond: 4, burst: 4 }))
        .status,
    ).toBe(200);
    // Act
    for (let i = 0; i < 40; i++)
      await submit({ tenantId: 'paced', type: 'test.flow', payload: { ms: 10, tag: `p${i}` } });
    await until(allDone('paced', 40), 120_000);
    // Assess: the recorded dispatch times
    const starts = (await tasksOf('paced')).map((task) => Date.parse(task.dispatchedAt!)).sort((a, b) => a - b);
    for (let i = 0, j = 0; i < starts.length; i++) {
      while (starts[j]! < starts[i]! - 2000) j++;
      expect(i - j + 1).toBeLessThanOrEqual(4 * 2 + 4);
    }
    expect(firstNonConforming({ perSecond: 4, burst: 4 }, starts)).toBeUndefined();
    // 40 starts at 4/s after a burst of 4 take 39 x 250 ms - 3 x 250 ms at least.
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(9_000);
  }, 180_000);

  it("holds a paused tenant's queued work (reason: the pause), lets its running work finish, and runs it all on resume", async () => {
    // Prepare: one task running (gated) when the pause comes
    await start();
    await submit({ tenantId: 'held', type: 'test.flow', payload: { ms: 0, tag: 'running', gated: true } });
    await until(() => gates.has('running'), 60_000);
    // Act
    const paused = await api<{ paused: boolean; pausedBy: string }>('PUT', '/v1/tenants/held', {
      weight: 1,
      maxConcurrency: 50,
      paused: true,
    });
    const pausedAnsweredMs = Date.now();
    const queued: string[] = [];
    for (let i = 0; i < 6; i++) {
      queued.push(await submit({ tenantId: 'held', type: 'test.flow', payload: { ms: 10, tag: `q${i}` } }));
    }
    gates.get('running')!();
    await sleep(3_000); // several scheduler rounds while paused
    const whilePaused = await tasksOf('held');
    const described = (await api<TaskView>('GET', `/v1/tasks/${queued[0]}`)).body;
    const resumedAskedMs = Date.now();
    await api('PUT', '/v1/tenants/held', { weight: 1, maxConcurrency: 50 });
    await until(allDone('held', 7), 60_000);
    const after = await tasksOf('held');
    // Assess
    expect(paused.body).toMatchObject({ paused: true, pausedBy: 'local' });
    expect(whilePaused.filter((task) => task.state === 'QUEUED')).toHaveLength(6);
    expect(whilePaused.find((task) => task.payload.tag === 'running')?.state).toBe('SUCCEEDED');
    expect(described.wait?.reason).toBe('tenant_paused');
    expect(described.wait?.maxWaitSeconds).toBeNull();
    for (const task of after.filter((t) => t.payload.tag !== 'running')) {
      expect(Date.parse(task.dispatchedAt!)).toBeGreaterThanOrEqual(resumedAskedMs);
    }
    expect(pausedAnsweredMs).toBeLessThan(resumedAskedMs);
  }, 120_000);

  it('holds only the tasks of a paused type, in every tenant, and runs them on resume', async () => {
    // Prepare
    await start();
    expect((await api('PUT', '/v1/task-types/test.other', { paused: true })).status).toBe(200);
    // Act
    const others = [
      await submit({ tenantId: 'a', type: 'test.other', payload: { ms: 10, tag: 'o1' } }),
      await submit({ tenantId: 'b', type: 'test.other', payload: { ms: 10, tag: 'o2' } }),
    ];
    for (let i = 0; i < 3; i++) await submit({ tenantId: 'a', type: 'test.flow', payload: { ms: 10, tag: `f${i}` } });
    await until(async () => (await tasksOf('a')).filter((task) => task.state === 'SUCCEEDED').length === 3, 60_000);
    const types = (
      await api<{ items: { type: string; paused: boolean; counts: { parked: number } }[] }>('GET', '/v1/task-types')
    ).body.items;
    const described = (await api<TaskView>('GET', `/v1/tasks/${others[0]}`)).body;
    const stillQueued = await Promise.all(
      others.map(async (id) => (await api<TaskView>('GET', `/v1/tasks/${id}`)).body.state),
    );
    await api('PUT', '/v1/task-types/test.other', { paused: false });
    await until(allDone('a', 4), 60_000);
    await until(allDone('b', 1), 60_000);
    // Assess
    expect(stillQueued).toEqual(['QUEUED', 'QUEUED']);
    expect(described.wait?.reason).toBe('type_paused');
    expect(types.find((type) => type.type === 'test.other')?.paused).toBe(true);
  }, 120_000);

  it('runs eight tasks of one key with limit 1 one at a time while other keys run side by side', async () => {
    // Prepare
    await start();
    const keyed: string[] = [];
    for (let i = 0; i < 8; i++) {
      keyed.push(
        await submit({
          tenantId: 'shop',
          type: 'test.flow',
          payload: { ms: 0, tag: `s${i}`, gated: true },
          concurrencyKey: 'store-1',
        }),
      );
    }
    for (let i = 0; i < 8; i++) {
      await submit({
        tenantId: 'shop',
        type: 'test.flow',
        payload: { ms: 0, tag: `o${i}`, gated: true },
        concurrencyKey: `store-o${i}`,
      });
    }
    // Act: every other key's task runs at once, beside exactly one of store-1's
    await until(() => [0, 1, 2, 3, 4, 5, 6, 7].every((i) => gates.has(`o${i}`)), 60_000);
    await until(() => [...gates.keys()].some((tag) => tag.startsWith('s')), 60_000);
    await sleep(2_000); // rounds in which a second store-1 task could have started
    const keyedRunning = [...gates.keys()].filter((tag) => tag.startsWith('s'));
    for (let i = 0; i < 8; i++) gates.get(`o${i}`)?.();
    // Release store-1's tasks one by one as each starts.
    for (let released = 0; released < 8; released++) {
      await until(() => [...gates.keys()].some((tag) => tag.startsWith('s')), 60_000);
      const running = [...gates.keys()].filter((tag) => tag.startsWith('s'));
      expect(running).toHaveLength(1);
      gates.get(running[0]!)!();
    }
    await until(allDone('shop', 16), 60_000);
    // Assess: as recorded, store-1's [dispatched, finished] intervals never overlap
    const intervals = (await tasksOf('shop'))
      .filter((task) => keyed.includes(task.taskId))
      .map((task) => [Date.parse(task.dispatchedAt!), Date.parse(task.finishedAt!)] as const)
      .sort((x, y) => x[0] - y[0]);
    expect(keyedRunning).toHaveLength(1);
    for (let i = 1; i < intervals.length; i++) expect(intervals[i]![0]).toBeGreaterThanOrEqual(intervals[i - 1]![1]);
  }, 180_000);
});
