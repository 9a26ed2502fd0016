/**
 * Contract test: live responses (successes and refusals) of every operation are checked against
 * the OpenAPI document the API serves, with a JSON Schema validator (ajv, draft 2020-12) over
 * the document's own schemas; every example in the document is checked the same way; and the
 * document lints clean with Redocly's recommended rules.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../runtime/api/limits.ts';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import type { Services } from '../../runtime/app/wiring.ts';
import type { SchedulerSnapshot } from '../../runtime/core/scheduler-snapshot.ts';
import { type ApiEventInput, apiEvent } from '../helpers/api-events.ts';
import { succeededTask } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

interface Operation {
  operationId: string;
  responses: Record<string, { content?: Record<string, { schema: unknown; example?: unknown }> }>;
  requestBody?: { content: Record<string, { schema: unknown; example?: unknown }> };
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

let services: TestServices;
let api: ApiRouter;
let guarded: ApiRouter;
let failing: ApiRouter;
let document: Document;
const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormats as unknown as (ajv: Ajv2020) => void)(ajv);

beforeAll(async () => {
  services = await startTestServices();
  api = createApiRouter(services);
  // A caller who may act for every tenant but `denied` (403s).
  guarded = createApiRouter(services, { authorize: (_event, tenantId) => tenantId !== 'denied' });
  // A store that fails unexpectedly (500s); its errors are logged nowhere.
  const broken = new Proxy(services.tasks, {
    get: (target, key) =>
      key === 'describe' || key === 'get'
        ? () => Promise.reject(new Error('store unreachable'))
        : Reflect.get(target, key, target),
  });
  failing = createApiRouter({ ...services, tasks: broken } as Services, { logger: { error() {} } });
  const served = await api(apiEvent({ path: '/openapi.json' }));
  document = JSON.parse(served.body!) as Document;
  ajv.addSchema(document, 'openapi.json');
});
afterAll(async () => {
  await services.stop();
});

/** JSON-pointer escaping of one path segment. */
const pointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * Which documented operation answers `method path` (templates matched segment by segment). A
 * method the path does not have is answered with the 405 its operations document.
 */
function operationFor(method: string, path: string): { template: string; method: string; operation: Operation } {
  const segments = path.split('?')[0]!.split('/');
  for (const [template, operations] of Object.entries(document.paths)) {
    const parts = template.split('/');
    if (parts.length !== segments.length) continue;
    if (parts.every((part, i) => part.startsWith('{') || part === segments[i])) {
      const [documented, operation] =
        Object.entries(operations).find(([name]) => name === method.toLowerCase()) ?? Object.entries(operations)[0]!;
      return { template, method: documented, operation };
    }
  }
  throw new Error(`No documented operation for ${method} ${path}`);
}

const checked = new Map<string, Set<number>>();

/** Send a request and check the answer's status and body against the document. */
async function expectConforms(
  input: ApiEventInput,
  status: number,
  router: ApiRouter = api,
): Promise<APIGatewayProxyStructuredResultV2> {
  const method = (input.method ?? 'GET').toUpperCase();
  const result = await router(apiEvent(input));
  expect(result.statusCode, `${method} ${input.path}: ${result.body}`).toBe(status);
  const { template, method: documented, operation } = operationFor(method, input.path);
  const response = operation.responses[String(status)];
  expect(response, `${operation.operationId} does not document ${status}`).toBeDefined();
  expect(result.headers?.['content-type']).toBe('application/json; charset=utf-8');
  const schemaRef = `openapi.json#/paths/${pointer(template)}/${documented}/responses/${status}/content/application~1json/schema`;
  const validate = ajv.getSchema(schemaRef) ?? ajv.compile({ $ref: schemaRef });
  const body = JSON.parse(result.body!) as unknown;
  expect(validate(body), `${operation.operationId} ${status}: ${ajv.errorsText(validate.errors)}`).toBe(true);
  if (!checked.has(operation.operationId)) checked.set(operation.operationId, new Set());
  checked.get(operation.operationId)!.add(status);
  return result;
}

const json = (method: string, path: string, body: unknown): ApiEventInput => ({ method, path, json: body });
const taskIdOf = (result: APIGatewayProxyStructuredResultV2) => (JSON.parse(result.body!) as { taskId: string }).taskId;

describe('Contract: live responses match the served OpenAPI document', () => {
  it('GET /health', async () => {
    await expectConforms({ path: '/health' }, 200);
    await expectConforms({ path: '/health?verbose=1' }, 400);
    await expectConforms({ method: 'DELETE', path: '/health' }, 405);
  });

  it('POST /v1/tasks', async () => {
    const submit = { tenantId: 'contract', type: 'demo.echo', payload: { a: 1 }, idempotencyKey: 'k1' };
    await expectConforms(json('POST', '/v1/tasks', submit), 202);
    await expectConforms(json('POST', '/v1/tasks', submit), 200);
    await expectConforms(json('POST', '/v1/tasks', { ...submit, payload: { a: 2 } }), 409);
    await expectConforms(json('POST', '/v1/tasks', { tenantId: 'contract' }), 400);
    await expectConforms(json('POST', '/v1/tasks', { ...submit, tenantId: 'denied' }), 403, guarded);
    await expectConforms(
      { method: 'POST', path: '/v1/tasks', body: '{}', headers: { 'content-type': 'text/plain' } },
      415,
    );
    await expectConforms(json('POST', '/v1/tasks', { ...submit, payload: 'x'.repeat(MAX_BODY_BYTES) }), 413);
    await expectConforms({ method: 'PATCH', path: '/v1/tasks' }, 405);
  });

  it('GET /v1/tasks', async () => {
    await expectConforms({ path: '/v1/tasks?tenantId=contract&limit=5' }, 200);
    await expectConforms({ path: '/v1/tasks?tenantId=contract&state=QUEUED' }, 200);
    await expectConforms({ path: '/v1/tasks?limit=5' }, 400);
    await expectConforms({ path: '/v1/tasks?tenantId=contract&cursor=bm9wZQ' }, 400);
    await expectConforms({ path: '/v1/tasks?tenantId=denied' }, 403, guarded);
  });

  it('GET /v1/tasks/{taskId}', async () => {
    const created = await api(apiEvent(json('POST', '/v1/tasks', { tenantId: 'contract', type: 'demo.echo' })));
    await expectConforms({ path: `/v1/tasks/${taskIdOf(created)}` }, 200);
    await expectConforms({ path: '/v1/tasks/tsk_missing' }, 404);
    await expectConforms({ path: '/v1/tasks/bad%20id' }, 400);
    await expectConforms({ path: '/v1/tasks/tsk_any' }, 500, failing);
  });

  it('POST /v1/tasks/{taskId}/cancel and /retry', async () => {
    const created = await api(apiEvent(json('POST', '/v1/tasks', { tenantId: 'contract', type: 'demo.echo' })));
    const taskId = taskIdOf(created);
    await expectConforms({ method: 'POST', path: `/v1/tasks/${taskId}/cancel` }, 200);
    await expectConforms({ method: 'POST', path: `/v1/tasks/${taskId}/retry` }, 200);
    await expectConforms(json('POST', `/v1/tasks/${taskId}/cancel`, { reason: 'x' }), 400);
    await expectConforms(
      { method: 'POST', path: `/v1/tasks/${taskId}/cancel`, body: 'x', headers: { 'content-type': 'text/plain' } },
      415,
    );
    await expectConforms({ method: 'POST', path: '/v1/tasks/tsk_missing/cancel' }, 404);
    await expectConforms({ method: 'POST', path: '/v1/tasks/tsk_missing/retry' }, 404);
    const done = await succeededTask(services, { tenantId: 'contract' });
    await expectConforms({ method: 'POST', path: `/v1/tasks/${done.taskId}/cancel` }, 409);
    await expectConforms({ method: 'POST', path: `/v1/tasks/${done.taskId}/retry` }, 409);
    await expectConforms(json('POST', `/v1/tasks/${taskId}/retry`, [1]), 400);
    await expectConforms({ method: 'POST', path: '/v1/tasks/tsk_any/cancel' }, 500, failing);
  });

  it('GET and PUT /v1/tenants/{tenantId}', async () => {
    await expectConforms(json('PUT', '/v1/tenants/contract', { weight: 2, maxConcurrency: 3 }), 200);
    await expectConforms(
      json('PUT', '/v1/tenants/contract', {
        weight: 2,
        maxConcurrency: 3,
        maxStartsPerSecond: 4,
        burst: 4,
        paused: true,
      }),
      200,
    );
    await expectConforms(json('PUT', '/v1/tenants/contract', { weight: 2, maxConcurrency: 3, burst: 4 }), 400);
    await expectConforms({ path: '/v1/tenants/contract' }, 200);
    // The scheduler's share of a tenant it holds (paused, one task waiting, runs measured): the
    // snapshot's bookkeeping beside the share (hold, parked, waitingTaskId, longestRunSeconds)
    // is not part of the answer.
    await services.control.putSnapshot({
      at: new Date().toISOString(),
      policy: 'fair-share',
      pools: {
        lambda: { used: 0, capacity: 50 },
        fargate: { vcpuUsed: 0, vcpu: 16, memoryMiBUsed: 0, memoryMiB: 32768 },
      },
      tiers: {
        critical: { waiting: 0, oldestWaitSeconds: 0 },
        high: { waiting: 0, oldestWaitSeconds: 0 },
        normal: { waiting: 1, oldestWaitSeconds: 4 },
        low: { waiting: 0, oldestWaitSeconds: 0 },
      },
      tenants: {
        contract: {
          running: 0,
          queued: 1,
          weight: 2,
          maxConcurrency: 3,
          dominantShare: 0,
          entitlement: 1,
          hold: 'tenant_paused',
          parked: 1,
          longestRunSeconds: 2,
          waitingTaskId: 'tsk_waiting',
        },
      },
      dispatchRate: 0,
    } satisfies SchedulerSnapshot);
    const held = await expectConforms({ path: '/v1/tenants/contract' }, 200);
    expect((JSON.parse(held.body!) as { share: unknown }).share).toEqual({
      running: 0,
      queued: 1,
      weight: 2,
      maxConcurrency: 3,
      dominantShare: 0,
      entitlement: 1,
    });
    await expectConforms({ path: '/v1/tenants/__proto__' }, 200);
    await expectConforms(json('PUT', '/v1/tenants/contract', { weight: -1, maxConcurrency: 3 }), 400);
    await expectConforms({ path: '/v1/tenants/a%20b' }, 400);
    await expectConforms({ path: '/v1/tenants/denied' }, 403, guarded);
    await expectConforms(json('PUT', '/v1/tenants/denied', { weight: 1, maxConcurrency: 1 }), 403, guarded);
    await expectConforms({ method: 'DELETE', path: '/v1/tenants/contract-reset' }, 200);
    await expectConforms({ method: 'DELETE', path: '/v1/tenants/a%20b' }, 400);
    await expectConforms({ method: 'DELETE', path: '/v1/tenants/denied' }, 403, guarded);
    await expectConforms(
      { method: 'PUT', path: '/v1/tenants/contract', body: 'w=1', headers: { 'content-type': 'text/plain' } },
      415,
    );
  });

  it('GET /v1/task-types and PUT /v1/task-types/{type}', async () => {
    const onlyOne = createApiRouter(services, { authorize: (_event, tenantId) => tenantId === 'contract' });
    await expectConforms(json('PUT', '/v1/task-types/demo.echo', { paused: true }), 200);
    await expectConforms({ path: '/v1/task-types' }, 200);
    await expectConforms(json('PUT', '/v1/task-types/demo.echo', { paused: false }), 200);
    await expectConforms(json('PUT', '/v1/task-types/demo.echo', { paused: 'yes' }), 400);
    await expectConforms({ path: '/v1/task-types?x=1' }, 400);
    await expectConforms({ path: '/v1/task-types' }, 403, onlyOne);
    await expectConforms(json('PUT', '/v1/task-types/demo.echo', { paused: true }), 403, onlyOne);
    await expectConforms(
      { method: 'PUT', path: '/v1/task-types/demo.echo', body: 'p=1', headers: { 'content-type': 'text/plain' } },
      415,
    );
  });

  it('POST /v1/tasks/batch, GET /v1/batches/{batchId}, its tasks, and GET /v1/batches', async () => {
    const item = { tenantId: 'contract', type: 'demo.echo', payload: { b: 1 } };
    const batch = { tasks: [item, { ...item, type: 'demo.nope' }], idempotencyKey: 'contract-batch' };
    const accepted = await expectConforms(json('POST', '/v1/tasks/batch', batch), 200);
    const { batchId } = JSON.parse(accepted.body!) as { batchId: string };
    await expectConforms(json('POST', '/v1/tasks/batch', { ...batch, tasks: [item] }), 409);
    await expectConforms(json('POST', '/v1/tasks/batch', { tasks: [] }), 400);
    await expectConforms(json('POST', '/v1/tasks/batch', { tasks: [{ ...item, tenantId: 'denied' }] }), 403, guarded);
    await expectConforms(
      json('POST', '/v1/tasks/batch', { tasks: [{ ...item, payload: 'x'.repeat(MAX_BODY_BYTES) }] }),
      413,
    );
    await expectConforms(
      { method: 'POST', path: '/v1/tasks/batch', body: '{}', headers: { 'content-type': 'text/plain' } },
      415,
    );
    await expectConforms({ path: `/v1/batches/${batchId}` }, 200);
    await expectConforms({ path: '/v1/batches/bat_missing' }, 404);
    await expectConforms({ path: '/v1/batches/not-a-batch' }, 400);
    await expectConforms({ path: `/v1/batches/${batchId}/tasks` }, 200);
    await expectConforms({ path: `/v1/batches/${batchId}/tasks?state=QUEUED&limit=1` }, 200);
    await expectConforms({ path: `/v1/batches/${batchId}/tasks?cursor=bm90LWEtY3Vyc29y` }, 400);
    await expectConforms({ path: `/v1/batches/${batchId}/tasks?tenantId=contract` }, 400);
    await expectConforms({ path: '/v1/batches/bat_missing/tasks' }, 404);
    await expectConforms({ path: '/v1/batches?tenantId=contract' }, 200);
    await expectConforms({ path: '/v1/batches' }, 400);
    await expectConforms({ path: '/v1/batches?tenantId=denied' }, 403, guarded);
  });

  it('GET /v1/status', async () => {
    await expectConforms({ path: '/v1/status' }, 200);
    await expectConforms({ path: '/v1/status?tenants=contract,constructor&recent=3' }, 200);
    await expectConforms({ path: '/v1/status?recent=99' }, 400);
  });

  it('GET /openapi.json', async () => {
    await expectConforms({ path: '/openapi.json' }, 200);
    await expectConforms({ path: '/openapi.json?format=yaml' }, 400);
  });

  it('checked a success and a refusal of every documented operation', () => {
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods));
    expect(operations.length).toBeGreaterThanOrEqual(10);
    for (const { operationId } of operations) {
      const statuses = [...(checked.get(operationId) ?? [])];
      expect(
        statuses.some((s) => s < 300),
        `${operationId}: no success checked`,
      ).toBe(true);
      expect(
        statuses.some((s) => s >= 400),
        `${operationId}: no refusal checked`,
      ).toBe(true);
    }
  });
});

describe('Contract: the document itself', () => {
  it('documents 404, 405, 413 and 500 on every operation, and security and servers', () => {
    const served = document as unknown as { servers: unknown[]; security: unknown[] };
    expect(served.servers.length).toBeGreaterThan(0);
    expect(served.security).toEqual([{ sigv4: [] }]);
    for (const methods of Object.values(document.paths)) {
      for (const operation of Object.values(methods)) {
        expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['404', '405', '413', '500']));
      }
    }
  });

  it("describes API Gateway's own answers on every operation: 403 (signature), 429 (stage throttling), 500", () => {
    // Deployed, API Gateway answers these itself, before the router, as `{ "message" }`
    // (lib/task-api.ts throttles the stage; IAM authorization is on every route).
    const gateway = { 403: 'Forbidden', 429: 'Too Many Requests', 500: 'Internal Server Error' };
    for (const [template, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        for (const [status, message] of Object.entries(gateway)) {
          expect(operation.responses[status], `${operation.operationId} does not document ${status}`).toBeDefined();
          const ref = `openapi.json#/paths/${pointer(template)}/${method}/responses/${status}/content/application~1json/schema`;
          const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
          expect(validate({ message }), `${operation.operationId} ${status}: ${ajv.errorsText(validate.errors)}`).toBe(
            true,
          );
        }
      }
    }
  });

  it('has an example for every request and response body, each valid against its schema', () => {
    let examples = 0;
    for (const [template, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const bodies = [
          ...Object.entries(operation.responses).map(([status, response]) => ({
            at: `responses/${status}`,
            media: response.content?.['application/json'],
          })),
          ...(operation.requestBody
            ? [{ at: 'requestBody', media: operation.requestBody.content['application/json'] }]
            : []),
        ];
        for (const { at, media } of bodies) {
          expect(media?.example, `${operation.operationId} ${at}: no example`).toBeDefined();
          const ref = `openapi.json#/paths/${pointer(template)}/${method}/${at}/content/application~1json/schema`;
          const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
          expect(validate(media!.example), `${operation.operationId} ${at}: ${ajv.errorsText(validate.errors)}`).toBe(
            true,
          );
          examples++;
        }
      }
    }
    expect(examples).toBeGreaterThan(50);
  });

  it('lints clean with Redocly (recommended rules)', async () => {
    // Prepare
    const file = join(tmpdir(), `openapi-${process.pid}.json`);
    writeFileSync(file, JSON.stringify(document));

    // Act
    const { stdout, stderr } = await promisify(execFile)('npx', ['--no-install', 'redocly', 'lint', file], {
      cwd: process.cwd(),
    });

    // Assess: a non-zero exit (an error) rejects above; warnings are refused too.
    expect(`${stdout}${stderr}`).toContain('Your API description is valid');
    expect(`${stdout}${stderr}`).not.toMatch(/warning/i);
  }, 120_000);
});
