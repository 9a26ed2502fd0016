import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  SchedulerApiError,
  SchedulerClient,
  SchedulerConnectionError,
  WaitTimeoutError,
} from '../../index.ts';
import type { LocalServer } from '../../local/server.ts';
import { startQuietServer } from './local-server.ts';

let server: LocalServer;
let client: SchedulerClient;

beforeAll(async () => {
  server = await startQuietServer();
  client = new SchedulerClient({ endpoint: server.url });
});
afterAll(async () => {
  await server.stop();
});

describe('Class: SchedulerClient', () => {
  describe('Method: submit + waitFor', () => {
    it('submits a task and resolves when it SUCCEEDED', async () => {
      // Act
      const submitted = await client.submit({ tenantId: 'sdk-a', type: 'demo.sleep', payload: { ms: 50 } });
      const done = await client.waitFor(submitted.taskId, { timeoutMs: 30_000, pollMs: 100 });

      // Assess
      expect(submitted).toMatchObject({ tenantId: 'sdk-a', type: 'demo.sleep', state: 'QUEUED' });
      expect(done).toMatchObject({ taskId: submitted.taskId, state: 'SUCCEEDED', attempts: 1, error: null });
      expect(done.finishedAt).not.toBeNull();
    });

    it('returns the original task for a repeated idempotency key', async () => {
      // Prepare
      const input = { tenantId: 'sdk-a', type: 'demo.echo', payload: { n: 1 }, idempotencyKey: 'order-42' };

      // Act
      const first = await client.submit(input);
      const second = await client.submit(input);

      // Assess
      expect(second.taskId).toBe(first.taskId);
    });

    it('throws WaitTimeoutError carrying the last task seen when the task does not finish in time', async () => {
      // Prepare
      const task = await client.submit({ tenantId: 'sdk-a', type: 'demo.echo', delaySeconds: 3600 });

      // Act
      const waiting = client.waitFor(task.taskId, { timeoutMs: 300, pollMs: 50 });

      // Assess
      await expect(waiting).rejects.toBeInstanceOf(WaitTimeoutError);
      await expect(waiting).rejects.toMatchObject({ taskId: task.taskId, lastSeen: { state: 'QUEUED' } });
    });

    it('stops waiting with the reason of an aborted signal', async () => {
      // Prepare
      const task = await client.submit({ tenantId: 'sdk-a', type: 'demo.echo', delaySeconds: 3600 });
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('caller gave up')), 100);

      // Act & Assess
      await expect(client.waitFor(task.taskId, { pollMs: 30, signal: controller.signal })).rejects.toThrow(
        'caller gave up',
      );
    });
  });

  describe('Method: waitFor through an outage', () => {
    it('keeps polling through polls that got no answer, or a 503, while its time lasts', async () => {
      // Prepare: the scheduler is out of reach for a while (a restart, a deploy): every request of
      // a stretch of polls fails, each after the client's own retries.
      const task = await client.submit({ tenantId: 'sdk-outage', type: 'demo.sleep', payload: { ms: 300 } });
      let reads = 0;
      const flaky: typeof fetch = async (input, init) => {
        reads++;
        if (reads >= 2 && reads <= 4) throw new TypeError('fetch failed (connection refused)');
        if (reads >= 5 && reads <= 7) return new Response('Service Unavailable', { status: 503 });
        return fetch(input, init);
      };
      const outage = new SchedulerClient({ endpoint: server.url, fetch: flaky, maxRetries: 0 });

      // Act
      const done = await outage.waitFor(task.taskId, { timeoutMs: 30_000, pollMs: 50 });

      // Assess
      expect(done).toMatchObject({ taskId: task.taskId, state: 'SUCCEEDED' });
      expect(reads).toBeGreaterThan(7);
    });

    it('gives up at its deadline with WaitTimeoutError, the last error as its cause', async () => {
      // Prepare
      const down: typeof fetch = async () => {
        throw new TypeError('fetch failed (connection refused)');
      };
      const outage = new SchedulerClient({ endpoint: server.url, fetch: down, maxRetries: 0 });

      // Act
      const waiting = outage.waitFor('tsk_unreachable', { timeoutMs: 300, pollMs: 50 });

      // Assess
      await expect(waiting).rejects.toBeInstanceOf(WaitTimeoutError);
      await expect(waiting).rejects.toMatchObject({
        taskId: 'tsk_unreachable',
        lastSeen: undefined,
        cause: expect.any(SchedulerConnectionError),
      });
    });

    it('still throws at once what no wait cures: an unknown task, a refusal', async () => {
      await expect(client.waitFor('tsk_never_was', { timeoutMs: 30_000 })).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  describe('Method: submitMany', () => {
    it('submits with limited concurrency and reports each outcome in input order', async () => {
      // Prepare
      const inputs = [
        { tenantId: 'sdk-many', type: 'demo.echo', payload: 1 },
        { tenantId: 'sdk-many', type: 'demo.nope' },
        { tenantId: 'sdk-many', type: 'demo.echo', payload: 3, idempotencyKey: 'k3' },
        { tenantId: 'sdk-many', type: 'demo.echo', payload: 3, idempotencyKey: 'k3' },
      ];

      // Act
      const outcomes = await client.submitMany(inputs, { concurrency: 1 });

      // Assess
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      const [first, second, third, fourth] = outcomes;
      expect(first).toMatchObject({ created: true, task: { payload: 1 } });
      expect(second?.status === 'rejected' && second.error).toBeInstanceOf(InvalidRequestError);
      expect(third).toMatchObject({ created: true });
      expect(fourth).toMatchObject({ created: false });
      if (third?.status === 'fulfilled' && fourth?.status === 'fulfilled') {
        expect(fourth.task.taskId).toBe(third.task.taskId);
      }
    });
  });

  describe('Method: list', () => {
    it('iterates every task across pages, following nextCursor', async () => {
      // Prepare
      const outcomes = await client.submitMany(
        Array.from({ length: 5 }, (_, i) => ({
          tenantId: 'sdk-pages',
          type: 'demo.echo',
          payload: i,
          delaySeconds: 3600,
        })),
      );
      const ids = outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.task.taskId : 'failed'));

      // Act
      const seen: string[] = [];
      for await (const task of client.list({ tenantId: 'sdk-pages', limit: 2 })) seen.push(task.taskId);
      const pages = [];
      for await (const page of client.listPages({ tenantId: 'sdk-pages', limit: 2 })) pages.push(page);

      // Assess
      expect(seen.sort()).toEqual([...ids].sort());
      expect(pages.map((page) => page.items.length)).toEqual([2, 2, 1]);
      expect(pages.map((page) => page.nextCursor === undefined)).toEqual([false, false, true]);
    });

    it('filters by state', async () => {
      // Act
      const page = await client.listPage({ tenantId: 'sdk-pages', state: 'SUCCEEDED' });

      // Assess
      expect(page.items).toEqual([]);
    });
  });

  describe('Methods: cancel and retry', () => {
    it('cancels a waiting task and queues it again on retry', async () => {
      // Prepare
      const task = await client.submit({ tenantId: 'sdk-cancel', type: 'demo.echo', delaySeconds: 3600 });

      // Act
      const cancelled = await client.cancel(task.taskId);
      const retried = await client.retry(task.taskId);

      // Assess
      expect(cancelled.state).toBe('CANCELLED');
      expect(retried.state).toBe('QUEUED');
    });
  });

  describe('Methods: getTenant and putTenant', () => {
    it('stores settings and reads them back with live counts', async () => {
      // Act
      const stored = await client.putTenant('sdk-tenant', { weight: 3, maxConcurrency: 7 });
      const tenant = await client.getTenant('sdk-tenant');

      // Assess
      expect(stored).toMatchObject({ tenantId: 'sdk-tenant', weight: 3, maxConcurrency: 7 });
      expect(tenant).toMatchObject({
        tenantId: 'sdk-tenant',
        weight: 3,
        maxConcurrency: 7,
        source: 'stored',
        counts: { queued: 0, dispatched: 0, running: 0 },
      });
    });

    it('replaces the stored settings: a paused left out resumes the tenant (docs/client.md says so)', async () => {
      // Prepare
      await client.putTenant('sdk-paused', { weight: 1, maxConcurrency: 2 });
      await client.setTenantPaused('sdk-paused', true);

      // Act
      const kept = await client.putTenant('sdk-paused', {
        weight: 2,
        maxConcurrency: 2,
        paused: (await client.getTenant('sdk-paused')).paused,
      });
      const replaced = await client.putTenant('sdk-paused', { weight: 3, maxConcurrency: 2 });

      // Assess
      expect(kept).toMatchObject({ weight: 2, paused: true });
      expect(replaced.paused).toBeUndefined();
      expect((await client.getTenant('sdk-paused')).paused).toBeUndefined();
    });
  });

  describe('Method: status', () => {
    it('returns tiers highest first, pools and the tenants with their newest tasks', async () => {
      // Act
      const status = await client.status({ tenants: ['sdk-pages'], recent: 2 });

      // Assess
      expect(status.tiers.map((tier) => tier.tier)).toEqual(['critical', 'high', 'normal', 'low']);
      expect(status.pools.lambda.capacity).toBeGreaterThan(0);
      expect(status.tenants.map((tenant) => tenant.tenantId)).toContain('sdk-pages');
      const pagesTasks = status.recentTasks.filter((task) => task.tenantId === 'sdk-pages');
      expect(pagesTasks).toHaveLength(2);
      expect(pagesTasks[0]?.wait?.reason).toBe('delayed');
    });
  });

  describe('Typed errors', () => {
    it('throws NotFoundError with the API code for an unknown task', async () => {
      // Act
      const error = await client.get('tsk_missing').catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(NotFoundError);
      expect(error).toBeInstanceOf(SchedulerApiError);
      expect(error).toMatchObject({
        status: 404,
        code: 'task_not_found',
        details: { taskId: 'tsk_missing' },
        request: 'GET /v1/tasks/tsk_missing',
      });
    });

    it('submits with dependsOn, and throws InvalidRequestError naming a missing dependency (issue 25)', async () => {
      // Prepare
      const dependency = await client.submit({ tenantId: 'sdk-deps', type: 'demo.sleep', payload: { ms: 60_000 } });

      // Act
      const held = await client.submit({ tenantId: 'sdk-deps', type: 'demo.echo', dependsOn: [dependency.taskId] });
      const detail = await client.get(held.taskId);
      const error = await client
        .submit({ tenantId: 'sdk-deps', type: 'demo.echo', dependsOn: ['tsk_gone'] })
        .catch((e: unknown) => e);
      await client.cancel(dependency.taskId);

      // Assess
      expect(held.dependsOn).toEqual([dependency.taskId]);
      expect(detail.waitingOn).toEqual([dependency.taskId]);
      expect(detail.wait?.reason).toBe('dependencies');
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect(error).toMatchObject({ status: 400, code: 'unknown_dependency', details: { missing: ['tsk_gone'] } });
    });

    it('throws InvalidRequestError naming each invalid field', async () => {
      // Act
      const error = await client
        .submit({ tenantId: 'bad tenant!', type: 'demo.echo', priority: 'urgent' as 'high' })
        .catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect(error).toMatchObject({ status: 400, code: 'invalid_request', details: { in: 'body' } });
      const paths = (error as InvalidRequestError & { details: { issues: { path: string }[] } }).details.issues.map(
        (issue) => issue.path,
      );
      expect(paths).toEqual(expect.arrayContaining(['tenantId', 'priority']));
    });

    it('carries the specific code of a semantic refusal (unknown task type)', async () => {
      // Act
      const error = await client.submit({ tenantId: 'sdk-err', type: 'no.such-type' }).catch((e: unknown) => e);

      // Assess
      expect(error).toMatchObject({ status: 400, code: 'unknown_task_type' });
    });

    it('throws ConflictError when the state does not allow the action', async () => {
      // Prepare
      const task = await client.submit({ tenantId: 'sdk-err', type: 'demo.echo', delaySeconds: 3600 });

      // Act
      const error = await client.retry(task.taskId).catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(ConflictError);
      expect(error).toMatchObject({ status: 409, code: 'invalid_state' });
    });

    it('throws SchedulerConnectionError when nothing answers', async () => {
      // Prepare
      const nowhere = new SchedulerClient({ endpoint: 'http://127.0.0.1:9', maxRetries: 0 });

      // Act & Assess
      await expect(nowhere.health()).rejects.toBeInstanceOf(SchedulerConnectionError);
    });
  });
});
