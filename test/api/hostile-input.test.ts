/**
 * Regressions from the hostile-input review (issue 15): payload keys named after
 * Object.prototype members, nesting far past the depth limit, and tenant ids that are
 * JavaScript object keys. Each was a 500 or a broken response; each is now either stored and
 * returned faithfully or refused with a coded 400.
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import { dispatch, start, succeed } from '../../runtime/core/lifecycle.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { dispatchAsScheduler } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let api: ApiRouter;
const unexpected: unknown[] = [];

beforeAll(async () => {
  services = await startTestServices();
  api = createApiRouter(services, { logger: { error: (message, extra) => unexpected.push({ message, extra }) } });
});
afterAll(async () => {
  await services.stop();
});
beforeEach(() => {
  unexpected.length = 0;
});

/** A submit whose body is sent as raw text, so `__proto__` stays an own key of the JSON. */
const submitText = (body: string) =>
  api(apiEvent({ method: 'POST', path: '/v1/tasks', body, headers: { 'content-type': 'application/json' } }));

const PROTOTYPE_KEYS = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

describe('Payload keys named after Object.prototype members', () => {
  for (const key of PROTOTYPE_KEYS) {
    it(`accepts "${key}" at the top and deep inside, and returns it as given`, async () => {
      // Prepare
      const payloadText = `{"${key}":"Acme Ltd","meta":{"${key}":{"${key}":[{"${key}":1}]}}}`;
      const body = `{"tenantId":"proto-keys","type":"demo.echo","payload":${payloadText}}`;

      // Act
      const submitted = await submitText(body);
      const taskId = (jsonOf(submitted) as { taskId: string }).taskId;
      const read = await api(apiEvent({ path: `/v1/tasks/${taskId}` }));
      const listed = await api(apiEvent({ path: '/v1/tasks?tenantId=proto-keys&limit=100' }));

      // Assess
      expect(submitted.statusCode).toBe(202);
      expect(read.statusCode).toBe(200);
      expect(JSON.stringify((JSON.parse(read.body!) as { payload: unknown }).payload)).toBe(payloadText);
      const items = (JSON.parse(listed.body!) as { items: { taskId: string; payload: unknown }[] }).items;
      expect(JSON.stringify(items.find((item) => item.taskId === taskId)?.payload)).toBe(payloadText);
      expect(unexpected).toEqual([]);
    });
  }

  it('stores a result with such keys when the attempt succeeds', async () => {
    // Prepare
    const submitted = await submitText('{"tenantId":"proto-keys","type":"demo.echo","payload":{}}');
    const { taskId } = jsonOf(submitted) as { taskId: string };
    const result = JSON.parse('{"constructor":"x","__proto__":{"constructor":{"__proto__":null}}}');
    const dispatched = await dispatchAsScheduler(services.store, taskId, services.now(), 60);
    await services.store.transition(taskId, (t) => start(t, dispatched.fence, services.now(), 60));

    // Act
    await services.store.transition(taskId, (t) => succeed(t, dispatched.fence, services.now(), result));
    const read = await api(apiEvent({ path: `/v1/tasks/${taskId}` }));

    // Assess
    expect(JSON.stringify((JSON.parse(read.body!) as { result: unknown }).result)).toBe(JSON.stringify(result));
  });

  it('treats an idempotent replay with such keys as the same request', async () => {
    // Prepare
    const body =
      '{"tenantId":"proto-keys","type":"demo.echo","idempotencyKey":"p1","payload":{"__proto__":{"a":1},"constructor":2}}';

    // Act
    const first = await submitText(body);
    const second = await submitText(body);

    // Assess
    expect(first.statusCode).toBe(202);
    expect(second.statusCode).toBe(200);
  });
});

describe('Nesting far past the depth limit', () => {
  for (const [name, open, close] of [
    ['arrays', '[', ']'],
    ['objects', '{"a":', '}'],
  ] as const) {
    it(`refuses ${name} nested 10,000 deep with a coded 400`, async () => {
      // Prepare
      const deep = `${open.repeat(10_000)}1${close.repeat(10_000)}`;

      // Act
      const result = await submitText(`{"tenantId":"deep","type":"demo.echo","payload":${deep}}`);

      // Assess
      expect(result.statusCode).toBe(400);
      expect((jsonOf(result) as { error: { code: string } }).error.code).toBe('invalid_request');
      expect(unexpected).toEqual([]);
    });
  }

  it('refuses deep nesting in any other field with a coded 400', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const result = await submitText(`{"tenantId":${deep},"type":"demo.echo","extra":${deep}}`);
    expect(result.statusCode).toBe(400);
    expect(unexpected).toEqual([]);
  });
});

describe('Tenant ids that are JavaScript object keys', () => {
  const TENANTS = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];

  for (const tenantId of TENANTS) {
    it(`GET /v1/tenants/${tenantId} answers the defaults`, async () => {
      const result = await api(apiEvent({ path: `/v1/tenants/${tenantId}` }));
      expect(result.statusCode).toBe(200);
      expect(jsonOf(result)).toMatchObject({
        tenantId,
        weight: services.config.tenantDefaults.weight,
        maxConcurrency: services.config.tenantDefaults.maxConcurrency,
        source: 'default',
      });
    });
  }

  it('stores settings for such tenants and lists them in /v1/status with their settings', async () => {
    // Prepare
    for (const tenantId of TENANTS) {
      const put = await api(
        apiEvent({ method: 'PUT', path: `/v1/tenants/${tenantId}`, json: { weight: 2, maxConcurrency: 7 } }),
      );
      expect(put.statusCode).toBe(200);
      await submitText(`{"tenantId":"${tenantId}","type":"demo.echo","payload":{}}`);
    }

    // Act
    const tenant = await api(apiEvent({ path: '/v1/tenants/__proto__' }));
    const status = await api(apiEvent({ path: `/v1/status?tenants=${TENANTS.join(',')}` }));

    // Assess
    expect(jsonOf(tenant)).toMatchObject({ tenantId: '__proto__', weight: 2, maxConcurrency: 7, source: 'stored' });
    expect(tenant.body).toContain('"counts":{"queued":1');
    const rows = (jsonOf(status) as { tenants: { tenantId: string; weight: number; queued: number }[] }).tenants;
    for (const tenantId of TENANTS) {
      expect(rows.find((row) => row.tenantId === tenantId)).toMatchObject({ weight: 2, maxConcurrency: 7, queued: 1 });
    }
    expect(unexpected).toEqual([]);
  });

  it('round-trips a scheduler snapshot keyed by such tenants', async () => {
    // Prepare
    const share = { running: 1, queued: 2, weight: 1, maxConcurrency: 3, dominantShare: 0.1, entitlement: 0.5 };
    const tenants = Object.fromEntries(TENANTS.map((tenantId) => [tenantId, share]));

    // Act
    await services.control.putSnapshot({ at: new Date().toISOString(), tenants });
    const read = await services.control.getSnapshot<{ tenants: Record<string, unknown> }>();

    // Assess
    expect(Object.keys(read!.tenants).sort()).toEqual([...TENANTS].sort());
    for (const tenantId of TENANTS)
      expect(Object.getOwnPropertyDescriptor(read!.tenants, tenantId)?.value).toEqual(share);
  });
});
