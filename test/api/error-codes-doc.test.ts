/**
 * README's "Error codes" list names every code the API answers a refused request with: the batch
 * routes' and the dependency codes were missing (a caller matching on codes met 404
 * batch_not_found, 400 mixed_tenants … that the list did not have).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let api: ApiRouter;

beforeAll(async () => {
  services = await startTestServices();
  api = createApiRouter(services);
});
afterAll(async () => {
  await services.stop();
});

/** The README paragraph that starts "Error codes:", up to the blank line. */
function readmeErrorCodes(): string {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('Error codes:');
  return readme.slice(start, readme.indexOf('\n\n', start));
}

const post = (path: string, body: unknown) =>
  api(
    apiEvent({
      method: 'POST',
      path,
      body: typeof body === 'string' ? body : JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    }),
  );

describe('README: Error codes', () => {
  it('lists the code and status of every refusal the batch and dependency routes answer', async () => {
    // Act: one refusal of each kind.
    const refusals = await Promise.all([
      api(apiEvent({ path: '/v1/batches/bat_none' })),
      post('/v1/tasks/batch', {
        tasks: [
          { tenantId: 'a', type: 'demo.echo' },
          { tenantId: 'b', type: 'demo.echo' },
        ],
      }),
      post('/v1/tasks/batch', { tasks: [{ type: 'demo.echo' }] }),
      post('/v1/tasks/batch', { tasks: [{ tenantId: 'a', type: 'demo.echo', payload: 'x'.repeat(270_000) }] }),
      post('/v1/tasks', { tenantId: 'a', type: 'demo.echo', dependsOn: ['tsk_none'] }),
      post('/v1/tasks/batch', { tasks: [{ tenantId: 'a', type: 'demo.nope' }] }),
    ]);
    const answered = refusals.map((result) => ({
      status: result.statusCode,
      code: (jsonOf(result) as { error: { code: string } }).error.code,
    }));

    // Assess
    expect(answered).toEqual([
      { status: 404, code: 'batch_not_found' },
      { status: 400, code: 'mixed_tenants' },
      { status: 400, code: 'missing_tenant' },
      { status: 413, code: 'item_too_large' },
      { status: 400, code: 'unknown_dependency' },
      { status: 400, code: 'all_items_refused' },
    ]);
    const listed = readmeErrorCodes();
    for (const { status, code } of answered) {
      // Each code under its status: "404 `route_not_found`, `task_not_found`, ..." up to the next status.
      const section = new RegExp(`${status} [^;]*\`${code}\``);
      expect(listed, `${status} ${code}`).toMatch(section);
    }
  });

  it("lists timeout_over_cap, the refusal of a timeout over its pool's maxTimeoutSeconds", async () => {
    // Prepare: a deployment whose Lambda pool caps timeouts at 60 s.
    const capped = await startTestServices({
      config: { pools: { lambda: { concurrency: 5, maxTimeoutSeconds: 60 }, fargate: { vcpu: 4, memoryMiB: 8192 } } },
    });
    try {
      // Act
      const result = await createApiRouter(capped)(
        apiEvent({
          method: 'POST',
          path: '/v1/tasks',
          json: { tenantId: 'a', type: 'demo.echo', timeoutSeconds: 120 },
        }),
      );

      // Assess
      expect(result.statusCode).toBe(400);
      expect((jsonOf(result) as { error: { code: string } }).error.code).toBe('timeout_over_cap');
      expect(readmeErrorCodes()).toMatch(/400 [^;]*`timeout_over_cap`/);
    } finally {
      await capped.stop();
    }
  });
});
