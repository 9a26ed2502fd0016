/**
 * τ of the wait bound is enforced: a task asking for a longer timeout than its pool's cap
 * (pools.<runtime>.maxTimeoutSeconds) is refused with a coded 400 naming the cap, and nothing
 * is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { snapshotWrites, startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let api: ApiRouter;

beforeAll(async () => {
  services = await startTestServices({
    config: {
      pools: {
        lambda: { concurrency: 5, maxTimeoutSeconds: 60 },
        fargate: { vcpu: 4, memoryMiB: 8192, maxTimeoutSeconds: 3600 },
      },
    },
  });
  api = createApiRouter(services);
});
afterAll(async () => {
  await services.stop();
});

const submit = (json: unknown) => apiEvent({ method: 'POST', path: '/v1/tasks', json });
const valid = { tenantId: 'acme', type: 'demo.sleep', payload: { ms: 1 } };

describe('POST /v1/tasks (timeout caps)', () => {
  it.each([
    { runtime: 'lambda', timeoutSeconds: 61, cap: 60 },
    { runtime: 'fargate', timeoutSeconds: 3601, cap: 3600 },
  ])('refuses a $runtime task asking for $timeoutSeconds s with timeout_over_cap, naming the cap', async (row) => {
    // Prepare
    const before = await snapshotWrites(services);
    // Act
    const response = await api(submit({ ...valid, runtime: row.runtime, timeoutSeconds: row.timeoutSeconds }));
    // Assess
    expect(response.statusCode).toBe(400);
    const body = jsonOf(response) as { error: { code: string; message: string; details: { cap: number } } };
    expect(body.error.code).toBe('timeout_over_cap');
    expect(body.error.message).toContain(`pools.${row.runtime}.maxTimeoutSeconds`);
    expect(body.error.details.cap).toBe(row.cap);
    expect(await snapshotWrites(services)).toEqual(before);
  });

  it('accepts a task at the cap', async () => {
    const response = await api(submit({ ...valid, runtime: 'fargate', timeoutSeconds: 3600 }));
    expect(response.statusCode).toBe(202);
  });
});
