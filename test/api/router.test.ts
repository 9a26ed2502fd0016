import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import {
  errorResponseSchema,
  healthSchema,
  storedTenantSchema,
  taskDetailSchema,
  taskPageSchema,
  taskViewSchema,
  tenantViewSchema,
} from '../../runtime/api/views.ts';
import { TaskService } from '../../runtime/app/task-service.ts';
import { LAMBDA_WORKER } from '../../runtime/infra/resources.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { failedTask, runningTask, submitTask, succeededTask } from '../helpers/factories.ts';
import { snapshotWrites, startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let api: ApiRouter;

beforeAll(async () => {
  services = await startTestServices();
  api = createApiRouter(services);
});
afterAll(async () => {
  await services.stop();
});

const INTERNAL_FIELDS = ['version', 'fence', 'requestHash', 'agingFrom', 'leaseExpiresAt'];

describe('Router: createApiRouter', () => {
  describe('Route: GET /health', () => {
    it('answers 200 with status ok', async () => {
      // Act
      const result = await api(apiEvent({ path: '/health' }));

      // Assess
      expect(result.statusCode).toBe(200);
      expect(result.headers?.['content-type']).toBe('application/json; charset=utf-8');
      expect(healthSchema.parse(jsonOf(result)).status).toBe('ok');
    });
  });

  describe('Route: POST /v1/tasks', () => {
    it('accepts a task with 202 and returns it QUEUED, announced on its tier queue', async () => {
      // Prepare
      const before = await snapshotWrites(services);

      // Act
      const result = await api(
        apiEvent({
          method: 'POST',
          path: '/v1/tasks',
          json: { tenantId: 'submit-a', type: 'demo.sleep', payload: { ms: 10 }, priority: 'high' },
        }),
      );

      // Assess
      expect(result.statusCode).toBe(202);
      const task = taskViewSchema.parse(jsonOf(result));
      expect(task).toMatchObject({
        tenantId: 'submit-a',
        type: 'demo.sleep',
        state: 'QUEUED',
        priority: 'high',
        attempts: 0,
        payload: { ms: 10 },
        startedAt: null,
        finishedAt: null,
        result: null,
        error: null,
      });
      for (const field of INTERNAL_FIELDS) expect(jsonOf(result)).not.toHaveProperty(field);
      expect(await services.tasks.get(task.taskId)).toMatchObject({ state: 'QUEUED', tenantId: 'submit-a' });
      const after = await snapshotWrites(services);
      expect(after.tasks).toBe(before.tasks + 1);
      expect(after.queues['tier-high']).toBe((before.queues['tier-high'] ?? 0) + 1);
    });

    it('applies the task type and configured defaults to omitted fields', async () => {
      // Act
      const result = await api(
        apiEvent({
          method: 'POST',
          path: '/v1/tasks',
          json: { tenantId: 'submit-a', type: 'demo.fail', payload: { failTimes: 1 } },
        }),
      );

      // Assess
      expect(result.statusCode).toBe(202);
      expect(jsonOf(result)).toMatchObject({
        maxAttempts: 5, // demo.fail's own default
        priority: 'normal',
        runtime: 'lambda',
        timeoutSeconds: 300,
        resources: { vcpu: 0.25, memoryMiB: 512 },
      });
    });

    it('sends a task larger than a Lambda worker to Fargate when it names no runtime', async () => {
      // The Lambda worker function has LAMBDA_WORKER.memoryMiB (CPU in proportion): a task asking
      // for more would run short of what it asked for there.
      const submit = (resources: { vcpu: number; memoryMiB: number }) =>
        api(
          apiEvent({
            method: 'POST',
            path: '/v1/tasks',
            json: { tenantId: 'submit-size', type: 'demo.echo', payload: {}, resources },
          }),
        );

      const fits = jsonOf(await submit({ vcpu: 1, memoryMiB: LAMBDA_WORKER.memoryMiB }));
      const tooMuchMemory = jsonOf(await submit({ vcpu: 1, memoryMiB: LAMBDA_WORKER.memoryMiB + 1 }));
      const tooManyVcpu = jsonOf(await submit({ vcpu: 2, memoryMiB: 1024 }));

      expect(fits).toMatchObject({ runtime: 'lambda' });
      expect(tooMuchMemory).toMatchObject({ runtime: 'fargate' });
      expect(tooManyVcpu).toMatchObject({ runtime: 'fargate' });
    });

    it('schedules a delayed task at now + delaySeconds and explains the wait as delayed', async () => {
      // Act
      const submitted = await api(
        apiEvent({
          method: 'POST',
          path: '/v1/tasks',
          json: { tenantId: 'submit-a', type: 'demo.echo', delaySeconds: 3600 },
        }),
      );
      const { taskId, submittedAt, runAt } = jsonOf<{ taskId: string; submittedAt: string; runAt: string }>(submitted);
      const described = await api(apiEvent({ path: `/v1/tasks/${taskId}` }));

      // Assess
      expect(Date.parse(runAt) - Date.parse(submittedAt)).toBe(3_600_000);
      expect(taskDetailSchema.parse(jsonOf(described)).wait?.reason).toBe('delayed');
    });

    it('returns 200 and the original task for a repeat with the same idempotency key, writing nothing', async () => {
      // Prepare
      const body = { tenantId: 'idem', type: 'demo.sleep', payload: { ms: 1 }, idempotencyKey: 'order-42' };
      const first = await api(apiEvent({ method: 'POST', path: '/v1/tasks', json: body }));
      const before = await snapshotWrites(services);

      // Act
      const repeat = await api(apiEvent({ method: 'POST', path: '/v1/tasks', json: { ...body } }));

      // Assess
      expect(first.statusCode).toBe(202);
      expect(repeat.statusCode).toBe(200);
      expect(jsonOf(repeat)).toEqual(jsonOf(first));
      expect(jsonOf(repeat)).toMatchObject({ idempotencyKey: 'order-42' });
      // The task is still QUEUED so the repeat re-announces it (harmless; the scheduler dedups).
      expect((await snapshotWrites(services)).tasks).toBe(before.tasks);
    });

    it('refuses the same idempotency key with a different body: 409 idempotency_key_reused, nothing written', async () => {
      // Prepare
      const body = { tenantId: 'idem', type: 'demo.sleep', payload: { ms: 1 }, idempotencyKey: 'order-43' };
      const first = await api(apiEvent({ method: 'POST', path: '/v1/tasks', json: body }));
      const before = await snapshotWrites(services);

      // Act
      const conflict = await api(
        apiEvent({ method: 'POST', path: '/v1/tasks', json: { ...body, payload: { ms: 2 } } }),
      );

      // Assess
      expect(conflict.statusCode).toBe(409);
      const error = errorResponseSchema.parse(jsonOf(conflict)).error;
      expect(error.code).toBe('idempotency_key_reused');
      expect(error.details).toEqual({ taskId: jsonOf(first).taskId });
      expect(await snapshotWrites(services)).toEqual(before);
    });

    it('treats the same key under another tenant as a different task', async () => {
      // Prepare
      const body = { type: 'demo.echo', payload: 1, idempotencyKey: 'shared-key' };

      // Act
      const a = await api(apiEvent({ method: 'POST', path: '/v1/tasks', json: { ...body, tenantId: 'idem-a' } }));
      const b = await api(apiEvent({ method: 'POST', path: '/v1/tasks', json: { ...body, tenantId: 'idem-b' } }));

      // Assess
      expect([a.statusCode, b.statusCode]).toEqual([202, 202]);
      expect(jsonOf(a).taskId).not.toBe(jsonOf(b).taskId);
    });

    it('refuses an unknown task type with 400 unknown_task_type listing the known ones', async () => {
      // Act
      const result = await api(
        apiEvent({ method: 'POST', path: '/v1/tasks', json: { tenantId: 'x', type: 'no.such' } }),
      );

      // Assess
      expect(result.statusCode).toBe(400);
      expect(services.registry.names()).toContain('demo.sleep');
      expect(jsonOf(result)).toEqual({
        error: {
          code: 'unknown_task_type',
          message: 'Unknown task type "no.such"',
          details: { type: 'no.such', known: services.registry.names() },
        },
      });
    });
  });

  describe('Route: GET /v1/tasks/{taskId}', () => {
    it('returns a QUEUED task with why it waits', async () => {
      // Prepare
      const task = await submitTask(services, { tenantId: 'get-a' });

      // Act
      const result = await api(apiEvent({ path: `/v1/tasks/${task.taskId}` }));

      // Assess
      expect(result.statusCode).toBe(200);
      const detail = taskDetailSchema.parse(jsonOf(result));
      expect(detail).toMatchObject({ taskId: task.taskId, state: 'QUEUED' });
      // No scheduler has published a snapshot: nothing is known to be ahead of it (issue 12).
      expect(detail.wait).toMatchObject({ reason: 'queue', effectiveTier: 'normal', maxWaitSeconds: null });
    });

    it('returns a running task without a wait, with startedAt and attempts', async () => {
      // Prepare
      const task = await runningTask(services, { tenantId: 'get-a' });

      // Act
      const result = await api(apiEvent({ path: `/v1/tasks/${task.taskId}` }));

      // Assess
      const detail = taskDetailSchema.parse(jsonOf(result));
      expect(detail).toMatchObject({ state: 'RUNNING', attempts: 1, startedAt: task.startedAt });
      expect(detail.wait).toBeUndefined();
    });

    it('returns a finished task with its result', async () => {
      // Prepare
      const task = await succeededTask(services, { tenantId: 'get-a' });

      // Act
      const result = await api(apiEvent({ path: `/v1/tasks/${task.taskId}` }));

      // Assess
      expect(jsonOf(result)).toMatchObject({ state: 'SUCCEEDED', result: { ok: true }, finishedAt: task.finishedAt });
    });

    it('answers 404 task_not_found for an unknown id', async () => {
      // Act
      const result = await api(apiEvent({ path: '/v1/tasks/tsk_missing' }));

      // Assess
      expect(result.statusCode).toBe(404);
      expect(jsonOf(result)).toEqual({
        error: { code: 'task_not_found', message: 'No task with id tsk_missing', details: { taskId: 'tsk_missing' } },
      });
    });
  });

  describe('Route: GET /v1/tasks', () => {
    it('pages through a tenant newest first; nextCursor is absent on the last page', async () => {
      // Prepare
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await submitTask(services, { tenantId: 'list-a', payload: i })).taskId);
      await submitTask(services, { tenantId: 'list-b' });

      // Act
      const first = await api(apiEvent({ path: '/v1/tasks?tenantId=list-a&limit=2' }));
      const firstPage = taskPageSchema.parse(jsonOf(first));
      const second = await api(apiEvent({ path: `/v1/tasks?tenantId=list-a&limit=2&cursor=${firstPage.nextCursor}` }));
      const secondPage = taskPageSchema.parse(jsonOf(second));

      // Assess
      expect(first.statusCode).toBe(200);
      expect(firstPage.items).toHaveLength(2);
      expect(firstPage.nextCursor).toEqual(expect.any(String));
      expect(second.statusCode).toBe(200);
      expect(jsonOf(second)).not.toHaveProperty('nextCursor');
      const listed = [...firstPage.items, ...secondPage.items].map((t) => t.taskId);
      expect(new Set(listed)).toEqual(new Set(ids));
      expect([...firstPage.items, ...secondPage.items].every((t) => t.tenantId === 'list-a')).toBe(true);
    });

    it('filters by state and uses the default limit', async () => {
      // Prepare
      const running = await runningTask(services, { tenantId: 'list-c' });
      await submitTask(services, { tenantId: 'list-c' });

      // Act
      const result = await api(apiEvent({ path: '/v1/tasks?tenantId=list-c&state=RUNNING' }));

      // Assess
      expect(taskPageSchema.parse(jsonOf(result)).items.map((t) => t.taskId)).toEqual([running.taskId]);
    });

    it('refuses a cursor minted for another tenant with 400 invalid_cursor', async () => {
      // Prepare
      for (let i = 0; i < 2; i++) await submitTask(services, { tenantId: 'list-d' });
      const page = jsonOf<{ nextCursor: string }>(await api(apiEvent({ path: '/v1/tasks?tenantId=list-d&limit=1' })));

      // Act
      const result = await api(apiEvent({ path: `/v1/tasks?tenantId=list-a&cursor=${page.nextCursor}` }));

      // Assess
      expect(result.statusCode).toBe(400);
      expect(jsonOf(result)).toMatchObject({ error: { code: 'invalid_cursor' } });
    });

    it('requires tenantId: 400 invalid_request naming the field', async () => {
      // Act
      const result = await api(apiEvent({ path: '/v1/tasks?state=QUEUED' }));

      // Assess
      expect(result.statusCode).toBe(400);
      expect(jsonOf(result)).toMatchObject({
        error: { code: 'invalid_request', details: { in: 'query', issues: [{ path: 'tenantId' }] } },
      });
    });
  });

  describe('Route: POST /v1/tasks/{taskId}/cancel', () => {
    it('cancels a QUEUED task at once', async () => {
      // Prepare
      const task = await submitTask(services, { tenantId: 'cancel-a' });

      // Act
      const result = await api(apiEvent({ method: 'POST', path: `/v1/tasks/${task.taskId}/cancel` }));

      // Assess
      expect(result.statusCode).toBe(200);
      expect(taskViewSchema.parse(jsonOf(result))).toMatchObject({
        state: 'CANCELLED',
        finishedAt: expect.any(String),
      });
      expect((await services.tasks.get(task.taskId))?.state).toBe('CANCELLED');
    });

    it('asks a RUNNING task to stop (cancelRequested) and accepts an empty JSON object body', async () => {
      // Prepare
      const task = await runningTask(services, { tenantId: 'cancel-a' });

      // Act
      const result = await api(apiEvent({ method: 'POST', path: `/v1/tasks/${task.taskId}/cancel`, json: {} }));

      // Assess
      expect(result.statusCode).toBe(200);
      expect(jsonOf(result)).toMatchObject({ state: 'RUNNING', cancelRequested: true });
    });

    it('answers 409 invalid_state for a finished task and leaves it unchanged', async () => {
      // Prepare
      const task = await succeededTask(services, { tenantId: 'cancel-a' });

      // Act
      const result = await api(apiEvent({ method: 'POST', path: `/v1/tasks/${task.taskId}/cancel` }));

      // Assess
      expect(result.statusCode).toBe(409);
      expect(jsonOf(result)).toMatchObject({
        error: { code: 'invalid_state', details: { taskId: task.taskId, state: 'SUCCEEDED', transition: 'cancel' } },
      });
      expect(await services.tasks.get(task.taskId)).toEqual(task);
    });

    it('answers 404 for an unknown task', async () => {
      // Act
      const result = await api(apiEvent({ method: 'POST', path: '/v1/tasks/tsk_nope/cancel' }));

      // Assess
      expect(result.statusCode).toBe(404);
      expect(jsonOf(result)).toMatchObject({ error: { code: 'task_not_found' } });
    });
  });

  describe('Route: POST /v1/tasks/{taskId}/retry', () => {
    it('queues a FAILED task again with a fresh attempt budget, keeping the last error', async () => {
      // Prepare
      const task = await failedTask(services, { tenantId: 'retry-a' });

      // Act
      const result = await api(apiEvent({ method: 'POST', path: `/v1/tasks/${task.taskId}/retry` }));

      // Assess
      expect(task.state).toBe('FAILED');
      expect(result.statusCode).toBe(200);
      expect(taskViewSchema.parse(jsonOf(result))).toMatchObject({
        state: 'QUEUED',
        attempts: 0,
        finishedAt: null,
        error: { message: 'boom', retryable: false },
      });
    });

    it('answers 409 invalid_state for a QUEUED task', async () => {
      // Prepare
      const task = await submitTask(services, { tenantId: 'retry-a' });

      // Act
      const result = await api(apiEvent({ method: 'POST', path: `/v1/tasks/${task.taskId}/retry` }));

      // Assess
      expect(result.statusCode).toBe(409);
      expect(jsonOf(result)).toMatchObject({ error: { code: 'invalid_state', details: { state: 'QUEUED' } } });
    });
  });

  describe('Route: GET and PUT /v1/tenants/{tenantId}', () => {
    it('reports default settings and live counts for a tenant never configured', async () => {
      // Prepare
      await submitTask(services, { tenantId: 'tenant-counts' });
      await runningTask(services, { tenantId: 'tenant-counts' });

      // Act
      const result = await api(apiEvent({ path: '/v1/tenants/tenant-counts' }));

      // Assess
      expect(result.statusCode).toBe(200);
      expect(tenantViewSchema.parse(jsonOf(result))).toEqual({
        tenantId: 'tenant-counts',
        weight: 1,
        maxConcurrency: 10,
        source: 'default',
        counts: { queued: 1, queuedExact: true, dispatched: 0, running: 1 },
      });
    });

    it('counts queued tasks only up to the cap, and says when there are more (a count reads every entry it counts)', async () => {
      // Prepare: 5 queued tasks, and a service whose cap is 3 (QUEUED_COUNT_CAP is 10,000).
      for (let i = 0; i < 5; i++) await submitTask(services, { tenantId: 'tenant-capped' });
      for (let i = 0; i < 2; i++) await submitTask(services, { tenantId: 'tenant-under' });
      const capped = new TaskService({ ...services, queuedCountCap: 3 });
      const reads = vi.spyOn(services.store, 'countByTenantState');

      // Act
      const over = await capped.getTenant('tenant-capped');
      const under = await capped.getTenant('tenant-under');

      // Assess: the index is asked for at most cap + 1 entries.
      expect(over.counts).toEqual({ queued: 3, queuedExact: false, dispatched: 0, running: 0 });
      expect(under.counts).toEqual({ queued: 2, queuedExact: true, dispatched: 0, running: 0 });
      expect(reads).toHaveBeenCalledWith('tenant-capped', 'QUEUED', 4);
      reads.mockRestore();
    });

    it('stores settings with PUT (200 + stored settings) and reads them back as stored', async () => {
      // Act
      const put = await api(
        apiEvent({ method: 'PUT', path: '/v1/tenants/tenant-put', json: { weight: 2.5, maxConcurrency: 7 } }),
      );
      const get = await api(apiEvent({ path: '/v1/tenants/tenant-put' }));

      // Assess
      expect(put.statusCode).toBe(200);
      expect(storedTenantSchema.parse(jsonOf(put))).toMatchObject({
        tenantId: 'tenant-put',
        weight: 2.5,
        maxConcurrency: 7,
      });
      expect(jsonOf(get)).toMatchObject({ weight: 2.5, maxConcurrency: 7, source: 'stored' });
    });

    it('removes the stored settings with DELETE: the tenant follows the configuration again, pause included', async () => {
      // Prepare: a tenant paused the way the CLI and the SDK pause one (its settings stored with paused)
      await api(
        apiEvent({
          method: 'PUT',
          path: '/v1/tenants/tenant-reset',
          json: { weight: 1, maxConcurrency: 10, paused: true },
        }),
      );
      // Act
      const removed = await api(apiEvent({ method: 'DELETE', path: '/v1/tenants/tenant-reset' }));
      const again = await api(apiEvent({ method: 'DELETE', path: '/v1/tenants/tenant-reset' }));
      const get = await api(apiEvent({ path: '/v1/tenants/tenant-reset' }));
      // Assess: 200 with what it follows now, the same again (nothing stored), and GET agrees
      expect(removed.statusCode).toBe(200);
      expect(tenantViewSchema.parse(jsonOf(removed))).toMatchObject({
        weight: 1,
        maxConcurrency: 10,
        source: 'default',
      });
      expect(jsonOf(removed)).not.toHaveProperty('paused');
      expect(again.statusCode).toBe(200);
      expect(jsonOf(get)).toMatchObject({ source: 'default' });
      expect(jsonOf(get)).not.toHaveProperty('paused');
    });

    it('refuses a PUT missing maxConcurrency with 400 and stores nothing', async () => {
      // Prepare
      const before = await snapshotWrites(services);

      // Act
      const result = await api(apiEvent({ method: 'PUT', path: '/v1/tenants/tenant-bad', json: { weight: 1 } }));

      // Assess
      expect(result.statusCode).toBe(400);
      expect(jsonOf(result)).toMatchObject({
        error: { code: 'invalid_request', details: { in: 'body', issues: [{ path: 'maxConcurrency' }] } },
      });
      expect(await snapshotWrites(services)).toEqual(before);
    });
  });

  describe('Route: GET /openapi.json', () => {
    it('serves the OpenAPI 3.1 document', async () => {
      // Act
      const result = await api(apiEvent({ path: '/openapi.json' }));

      // Assess
      expect(result.statusCode).toBe(200);
      expect(jsonOf(result)).toMatchObject({
        openapi: '3.1.0',
        paths: { '/v1/tasks': { post: { operationId: 'submitTask' } } },
      });
    });

    it('names the server that served it first, so trying a request reaches it (another port, a deployed URL)', async () => {
      // Act
      const local = jsonOf(await api(apiEvent({ path: '/openapi.json', headers: { host: '127.0.0.1:4567' } })));
      const deployed = jsonOf(
        await api(apiEvent({ path: '/openapi.json', headers: { 'x-forwarded-proto': 'https' } })),
      );
      // Assess: the local runtime's own origin (plain HTTP); API Gateway's domain over HTTPS
      const urls = (document: unknown) => (document as { servers: { url: string }[] }).servers.map((s) => s.url);
      expect(urls(local)[0]).toBe('http://127.0.0.1:4567');
      expect(urls(deployed)[0]).toBe('https://api.example.test');
      expect(urls(deployed)).toContain('https://{apiId}.execute-api.{region}.amazonaws.com');
    });
  });

  describe('Routing errors', () => {
    it('answers 404 route_not_found for an unknown path', async () => {
      // Act
      const result = await api(apiEvent({ path: '/v2/tasks' }));

      // Assess
      expect(result.statusCode).toBe(404);
      expect(jsonOf(result)).toEqual({ error: { code: 'route_not_found', message: 'No route for GET /v2/tasks' } });
    });

    it('answers 405 with an Allow header for a wrong method on a known path', async () => {
      // Act
      const result = await api(apiEvent({ method: 'DELETE', path: '/v1/tasks/tsk_1' }));

      // Assess
      expect(result.statusCode).toBe(405);
      expect(result.headers?.allow).toBe('GET, HEAD');
      expect(jsonOf(result)).toMatchObject({
        error: { code: 'method_not_allowed', details: { allowed: ['GET', 'HEAD'] } },
      });
    });

    it('strips a named stage from the path as API Gateway sends it', async () => {
      // Prepare
      const event = apiEvent({ path: '/prod/health' });
      const staged = { ...event, requestContext: { ...event.requestContext, stage: 'prod' } };

      // Act
      const result = await api(staged);

      // Assess
      expect(result.statusCode).toBe(200);
    });

    it('reads a base64-encoded body as API Gateway sends binary media', async () => {
      // Prepare
      const body = Buffer.from(JSON.stringify({ tenantId: 'b64', type: 'demo.echo', payload: 'é' })).toString('base64');

      // Act
      const result = await api(
        apiEvent({
          method: 'POST',
          path: '/v1/tasks',
          body,
          isBase64Encoded: true,
          headers: { 'content-type': 'application/json' },
        }),
      );

      // Assess
      expect(result.statusCode).toBe(202);
      expect(jsonOf(result)).toMatchObject({ tenantId: 'b64', payload: 'é' });
    });
  });

  describe('Unexpected errors', () => {
    it('answer 500 internal_error without internals, and are logged', async () => {
      // Prepare
      const logged: { message: string; extra: Record<string, unknown> }[] = [];
      const broken = {
        ...services,
        tasks: {
          describe: async () => {
            throw new Error('connect ECONNREFUSED secret-table.internal:8000');
          },
        } as unknown as TaskService,
      };
      const brokenApi = createApiRouter(broken, {
        logger: { error: (message, extra) => logged.push({ message, extra }) },
      });

      // Act
      const result = await brokenApi(apiEvent({ path: '/v1/tasks/tsk_1' }));

      // Assess
      expect(result.statusCode).toBe(500);
      const error = errorResponseSchema.parse(jsonOf(result)).error;
      expect(error.code).toBe('internal_error');
      expect(result.body).not.toContain('secret-table');
      expect(result.body).not.toContain('ECONNREFUSED');
      expect(logged).toHaveLength(1);
      expect(JSON.stringify(logged[0]!.extra)).toContain('secret-table');
    });
  });
});
