/**
 * A corpus of malformed requests: each is refused with its coded 4xx and the documented error
 * shape, and nothing is written (tables and queues unchanged).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import { errorResponseSchema } from '../../runtime/api/views.ts';
import { type ApiEventInput, apiEvent, jsonOf } from '../helpers/api-events.ts';
import { submitTask } from '../helpers/factories.ts';
import { snapshotWrites, startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let api: ApiRouter;
let queuedTaskId: string;

beforeAll(async () => {
  services = await startTestServices();
  api = createApiRouter(services);
  // Something in every table, so "unchanged" is not trivially "still empty".
  queuedTaskId = (await submitTask(services, { tenantId: 'existing' })).taskId;
  await services.tasks.putTenant('existing', { weight: 1, maxConcurrency: 2 });
});
afterAll(async () => {
  await services.stop();
});

const valid = { tenantId: 'acme', type: 'demo.sleep', payload: { ms: 1 } };
const submit = (json: unknown): ApiEventInput => ({ method: 'POST', path: '/v1/tasks', json });
const submitRaw = (body: string, contentType?: string): ApiEventInput => ({
  method: 'POST',
  path: '/v1/tasks',
  body,
  ...(contentType ? { headers: { 'content-type': contentType } } : {}),
});
const nested = (depth: number): unknown => (depth === 0 ? 1 : { n: nested(depth - 1) });

interface Case {
  readonly name: string;
  readonly request: ApiEventInput | (() => ApiEventInput);
  readonly status: number;
  readonly code: string;
  /** A field path that must be named in `details.issues`. */
  readonly field?: string;
}

const CORPUS: Case[] = [
  // Body syntax and media type
  { name: 'truncated JSON', request: submitRaw('{"tenantId":', 'application/json'), status: 400, code: 'invalid_json' },
  {
    name: 'JSON with trailing comma',
    request: submitRaw('{"a":1,}', 'application/json'),
    status: 400,
    code: 'invalid_json',
  },
  { name: 'empty body', request: submitRaw('', 'application/json'), status: 400, code: 'invalid_json' },
  { name: 'whitespace body', request: submitRaw('  \n', 'application/json'), status: 400, code: 'invalid_json' },
  {
    name: 'invalid UTF-8',
    request: {
      method: 'POST',
      path: '/v1/tasks',
      body: Buffer.from([0x7b, 0xff, 0x7d]).toString('base64'),
      isBase64Encoded: true,
      headers: { 'content-type': 'application/json' },
    },
    status: 400,
    code: 'invalid_json',
  },
  { name: 'JSON null body', request: submit(null), status: 400, code: 'invalid_request' },
  { name: 'JSON array body', request: submit([valid]), status: 400, code: 'invalid_request' },
  { name: 'JSON string body', request: submit('demo.sleep'), status: 400, code: 'invalid_request' },
  {
    name: 'text/plain body',
    request: submitRaw(JSON.stringify(valid), 'text/plain'),
    status: 415,
    code: 'unsupported_media_type',
  },
  { name: 'no content type', request: submitRaw(JSON.stringify(valid)), status: 415, code: 'unsupported_media_type' },
  {
    name: 'form body',
    request: submitRaw('tenantId=acme', 'application/x-www-form-urlencoded'),
    status: 415,
    code: 'unsupported_media_type',
  },
  {
    name: 'body over 256 KiB',
    request: submitRaw(`{"x":"${'a'.repeat(262_144)}"}`, 'application/json'),
    status: 413,
    code: 'body_too_large',
  },
  // Required fields, types and formats
  {
    name: 'missing tenantId',
    request: submit({ type: 'demo.sleep', payload: { ms: 1 } }),
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  {
    name: 'numeric tenantId',
    request: submit({ ...valid, tenantId: 42 }),
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  {
    name: 'empty tenantId',
    request: submit({ ...valid, tenantId: '' }),
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  {
    name: 'tenantId with a slash',
    request: submit({ ...valid, tenantId: 'a/b' }),
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  {
    name: 'unicode tenantId',
    request: submit({ ...valid, tenantId: 'tenänt' }),
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  {
    name: 'tenantId of 129 chars',
    request: submit({ ...valid, tenantId: 't'.repeat(129) }),
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  { name: 'missing type', request: submit({ tenantId: 'acme' }), status: 400, code: 'invalid_request', field: 'type' },
  {
    name: 'upper-case type',
    request: submit({ ...valid, type: 'Demo.Sleep' }),
    status: 400,
    code: 'invalid_request',
    field: 'type',
  },
  {
    name: 'unknown task type',
    request: submit({ ...valid, type: 'demo.nope' }),
    status: 400,
    code: 'unknown_task_type',
  },
  {
    name: 'unknown field',
    request: submit({ ...valid, color: 'red' }),
    status: 400,
    code: 'invalid_request',
    field: 'color',
  },
  {
    name: '__proto__ field',
    request: submitRaw('{"tenantId":"a","type":"demo.echo","__proto__":{"x":1}}', 'application/json'),
    status: 400,
    code: 'invalid_request',
    field: '__proto__',
  },
  {
    name: 'idempotencyKey with a space',
    request: submit({ ...valid, idempotencyKey: 'a b' }),
    status: 400,
    code: 'invalid_request',
    field: 'idempotencyKey',
  },
  // Payload
  {
    name: 'demo.sleep ms as a string',
    request: submit({ ...valid, payload: { ms: 'ten' } }),
    status: 400,
    code: 'invalid_payload',
  },
  {
    name: 'demo.sleep extra payload key',
    request: submit({ ...valid, payload: { ms: 1, extra: true } }),
    status: 400,
    code: 'invalid_payload',
  },
  {
    name: 'demo.sleep negative ms',
    request: submit({ ...valid, payload: { ms: -5 } }),
    status: 400,
    code: 'invalid_payload',
  },
  {
    name: 'demo.sleep without payload',
    request: submit({ tenantId: 'acme', type: 'demo.sleep' }),
    status: 400,
    code: 'invalid_payload',
  },
  {
    name: 'payload over 200 KiB',
    request: submit({ tenantId: 'acme', type: 'demo.echo', payload: 'p'.repeat(205_000) }),
    status: 400,
    code: 'invalid_request',
    field: 'payload',
  },
  {
    name: 'payload number beyond DynamoDB',
    request: submit({ tenantId: 'acme', type: 'demo.echo', payload: { n: 1e300 } }),
    status: 400,
    code: 'invalid_request',
    field: 'payload',
  },
  {
    name: 'payload number too small for DynamoDB',
    request: submit({ tenantId: 'acme', type: 'demo.echo', payload: [5e-324] }),
    status: 400,
    code: 'invalid_request',
    field: 'payload',
  },
  {
    name: 'payload nested 30 deep',
    request: submit({ tenantId: 'acme', type: 'demo.echo', payload: nested(30) }),
    status: 400,
    code: 'invalid_request',
    field: 'payload',
  },
  // Ranges and enums
  {
    name: 'unknown priority',
    request: submit({ ...valid, priority: 'urgent' }),
    status: 400,
    code: 'invalid_request',
    field: 'priority',
  },
  {
    name: 'unknown runtime',
    request: submit({ ...valid, runtime: 'k8s' }),
    status: 400,
    code: 'invalid_request',
    field: 'runtime',
  },
  {
    name: 'vcpu below 0.25',
    request: submit({ ...valid, resources: { vcpu: 0.1 } }),
    status: 400,
    code: 'invalid_request',
    field: 'resources.vcpu',
  },
  {
    name: 'vcpu above 16',
    request: submit({ ...valid, resources: { vcpu: 17 } }),
    status: 400,
    code: 'invalid_request',
    field: 'resources.vcpu',
  },
  {
    name: 'memoryMiB below 128',
    request: submit({ ...valid, resources: { memoryMiB: 64 } }),
    status: 400,
    code: 'invalid_request',
    field: 'resources.memoryMiB',
  },
  {
    name: 'fractional memoryMiB',
    request: submit({ ...valid, resources: { memoryMiB: 512.5 } }),
    status: 400,
    code: 'invalid_request',
    field: 'resources.memoryMiB',
  },
  {
    name: 'unknown resource',
    request: submit({ ...valid, resources: { gpu: 1 } }),
    status: 400,
    code: 'invalid_request',
    field: 'resources.gpu',
  },
  {
    name: 'timeoutSeconds 0',
    request: submit({ ...valid, timeoutSeconds: 0 }),
    status: 400,
    code: 'invalid_request',
    field: 'timeoutSeconds',
  },
  {
    name: 'timeoutSeconds above a day',
    request: submit({ ...valid, timeoutSeconds: 86_401 }),
    status: 400,
    code: 'invalid_request',
    field: 'timeoutSeconds',
  },
  {
    name: 'fractional timeoutSeconds',
    request: submit({ ...valid, timeoutSeconds: 1.5 }),
    status: 400,
    code: 'invalid_request',
    field: 'timeoutSeconds',
  },
  {
    name: 'maxAttempts 0',
    request: submit({ ...valid, maxAttempts: 0 }),
    status: 400,
    code: 'invalid_request',
    field: 'maxAttempts',
  },
  {
    name: 'maxAttempts 101',
    request: submit({ ...valid, maxAttempts: 101 }),
    status: 400,
    code: 'invalid_request',
    field: 'maxAttempts',
  },
  {
    name: 'negative delaySeconds',
    request: submit({ ...valid, delaySeconds: -1 }),
    status: 400,
    code: 'invalid_request',
    field: 'delaySeconds',
  },
  {
    name: 'fractional delaySeconds',
    request: submit({ ...valid, delaySeconds: 1.5 }),
    status: 400,
    code: 'invalid_request',
    field: 'delaySeconds',
  },
  {
    name: 'delaySeconds above a year',
    request: submit({ ...valid, delaySeconds: 31_536_001 }),
    status: 400,
    code: 'invalid_request',
    field: 'delaySeconds',
  },
  {
    name: 'both delaySeconds and runAt',
    request: submit({ ...valid, delaySeconds: 5, runAt: '2030-01-01T00:00:00Z' }),
    status: 400,
    code: 'invalid_request',
    field: 'runAt',
  },
  {
    name: 'runAt without an offset',
    request: submit({ ...valid, runAt: '2030-01-01T00:00:00' }),
    status: 400,
    code: 'invalid_request',
    field: 'runAt',
  },
  {
    name: 'runAt in words',
    request: submit({ ...valid, runAt: 'tomorrow' }),
    status: 400,
    code: 'invalid_request',
    field: 'runAt',
  },
  {
    name: 'runAt over a year ahead',
    request: () => submit({ ...valid, runAt: new Date(Date.now() + 400 * 86_400_000).toISOString() }),
    status: 400,
    code: 'invalid_schedule',
  },
  {
    name: 'lambda runtime with a 1000 s timeout',
    request: submit({ ...valid, runtime: 'lambda', timeoutSeconds: 1000 }),
    status: 400,
    code: 'invalid_runtime',
  },
  {
    name: 'lambda runtime asking more memory than a Lambda worker has',
    request: submit({ ...valid, runtime: 'lambda', resources: { vcpu: 1, memoryMiB: 4096 } }),
    status: 400,
    code: 'exceeds_pool',
  },
  {
    name: 'lambda runtime asking more vCPU than a Lambda worker has',
    request: submit({ ...valid, runtime: 'lambda', resources: { vcpu: 4, memoryMiB: 1024 } }),
    status: 400,
    code: 'exceeds_pool',
  },
  {
    name: 'larger than the Fargate pool',
    request: submit({ ...valid, resources: { vcpu: 16, memoryMiB: 122_880 } }),
    status: 400,
    code: 'exceeds_pool',
  },
  // Tenants
  {
    name: 'tenant weight 0',
    request: { method: 'PUT', path: '/v1/tenants/acme', json: { weight: 0, maxConcurrency: 1 } },
    status: 400,
    code: 'invalid_request',
    field: 'weight',
  },
  {
    name: 'fractional maxConcurrency',
    request: { method: 'PUT', path: '/v1/tenants/acme', json: { weight: 1, maxConcurrency: 1.5 } },
    status: 400,
    code: 'invalid_request',
    field: 'maxConcurrency',
  },
  {
    name: 'tenant settings with an extra key',
    request: { method: 'PUT', path: '/v1/tenants/acme', json: { weight: 1, maxConcurrency: 1, burst: 3 } },
    status: 400,
    code: 'invalid_request',
    field: 'burst',
  },
  {
    name: 'tenant PUT without a body',
    request: { method: 'PUT', path: '/v1/tenants/acme' },
    status: 400,
    code: 'invalid_json',
  },
  {
    name: 'encoded slash in tenant id',
    request: { method: 'PUT', path: '/v1/tenants/a%2Fb', json: { weight: 1, maxConcurrency: 1 } },
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  {
    name: 'unicode tenant id in path',
    request: { path: '/v1/tenants/t%C3%A9' },
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  {
    name: 'tenant id of 200 chars in path',
    request: { path: `/v1/tenants/${'x'.repeat(200)}` },
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  { name: 'slash in tenant path', request: { path: '/v1/tenants/a/b' }, status: 404, code: 'route_not_found' },
  // Listing
  {
    name: 'list without tenantId',
    request: { path: '/v1/tasks' },
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  {
    name: 'limit 0',
    request: { path: '/v1/tasks?tenantId=acme&limit=0' },
    status: 400,
    code: 'invalid_request',
    field: 'limit',
  },
  {
    name: 'limit 101',
    request: { path: '/v1/tasks?tenantId=acme&limit=101' },
    status: 400,
    code: 'invalid_request',
    field: 'limit',
  },
  {
    name: 'limit not a number',
    request: { path: '/v1/tasks?tenantId=acme&limit=ten' },
    status: 400,
    code: 'invalid_request',
    field: 'limit',
  },
  {
    name: 'unknown state',
    request: { path: '/v1/tasks?tenantId=acme&state=DONE' },
    status: 400,
    code: 'invalid_request',
    field: 'state',
  },
  {
    name: 'cursor with bad characters',
    request: { path: '/v1/tasks?tenantId=acme&cursor=%21%21%21' },
    status: 400,
    code: 'invalid_request',
    field: 'cursor',
  },
  {
    name: 'cursor that is not a key',
    request: { path: `/v1/tasks?tenantId=acme&cursor=${Buffer.from('{"a":1}').toString('base64url')}` },
    status: 400,
    code: 'invalid_cursor',
  },
  {
    name: 'cursor that is not JSON',
    request: { path: '/v1/tasks?tenantId=acme&cursor=bm90LWpzb24' },
    status: 400,
    code: 'invalid_cursor',
  },
  {
    name: 'tenantId given twice',
    request: { path: '/v1/tasks?tenantId=acme&tenantId=other' },
    status: 400,
    code: 'invalid_request',
    field: 'tenantId',
  },
  {
    name: 'unknown query parameter',
    request: { path: '/v1/tasks?tenantId=acme&sort=asc' },
    status: 400,
    code: 'invalid_request',
    field: 'sort',
  },
  {
    name: 'query on a route without one',
    request: { path: '/health?verbose=1' },
    status: 400,
    code: 'invalid_request',
    field: 'verbose',
  },
  // Routes and methods
  { name: 'unknown route', request: { path: '/v1/jobs' }, status: 404, code: 'route_not_found' },
  { name: 'trailing slash', request: { path: '/v1/tasks/' }, status: 404, code: 'route_not_found' },
  {
    name: 'DELETE a task',
    request: { method: 'DELETE', path: '/v1/tasks/tsk_1' },
    status: 405,
    code: 'method_not_allowed',
  },
  {
    name: 'PATCH a tenant',
    request: { method: 'PATCH', path: '/v1/tenants/acme', json: { weight: 1 } },
    status: 405,
    code: 'method_not_allowed',
  },
  { name: 'GET a cancel', request: { path: '/v1/tasks/tsk_1/cancel' }, status: 405, code: 'method_not_allowed' },
  {
    name: 'PUT the task collection',
    request: { method: 'PUT', path: '/v1/tasks', json: valid },
    status: 405,
    code: 'method_not_allowed',
  },
  {
    name: 'malformed percent-encoding in a task id',
    request: { path: '/v1/tasks/%E0%A4%A' },
    status: 400,
    code: 'invalid_request',
    field: 'taskId',
  },
  // Cancel and retry
  {
    name: 'cancel with options',
    request: () => ({ method: 'POST', path: `/v1/tasks/${queuedTaskId}/cancel`, json: { force: true } }),
    status: 400,
    code: 'invalid_request',
    field: 'force',
  },
  {
    name: 'cancel with a text body',
    request: () => ({
      method: 'POST',
      path: `/v1/tasks/${queuedTaskId}/cancel`,
      body: 'now',
      headers: { 'content-type': 'text/plain' },
    }),
    status: 415,
    code: 'unsupported_media_type',
  },
  {
    name: 'cancel of an unknown task',
    request: { method: 'POST', path: '/v1/tasks/tsk_unknown/cancel' },
    status: 404,
    code: 'task_not_found',
  },
  {
    name: 'retry of an unknown task',
    request: { method: 'POST', path: '/v1/tasks/tsk_unknown/retry' },
    status: 404,
    code: 'task_not_found',
  },
  {
    name: 'retry of a QUEUED task',
    request: () => ({ method: 'POST', path: `/v1/tasks/${queuedTaskId}/retry` }),
    status: 409,
    code: 'invalid_state',
  },
];

describe('Router: malformed requests', () => {
  it('has a corpus of at least 40 cases', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(40);
  });

  it.each(CORPUS)('refuses $name with $status $code and writes nothing', async ({ request, status, code, field }) => {
    // Prepare
    const before = await snapshotWrites(services);
    const event = apiEvent(typeof request === 'function' ? request() : request);

    // Act
    const result = await api(event);

    // Assess
    expect(result.statusCode).toBe(status);
    const { error } = errorResponseSchema.parse(jsonOf(result));
    expect(error.code).toBe(code);
    expect(error.message.length).toBeGreaterThan(0);
    if (field !== undefined) {
      const issues = (error.details as { issues: { path: string }[] }).issues.map((issue) => issue.path);
      expect(issues).toContain(field);
    }
    expect(await snapshotWrites(services)).toEqual(before);
  });
});
