/**
 * The OpenAPI document's examples are answers the code gives: each error example is the body the
 * router answers for the request it illustrates (code, message and details), and the task
 * examples have the fields a real answer to the submit example has. A client generated from the
 * document, or a mock server (Prism) that replays its examples, then behaves as the API does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EXAMPLE_ERRORS,
  EXAMPLE_SUBMIT,
  EXAMPLE_SUCCEEDED_TASK,
  EXAMPLE_TASK,
  EXAMPLE_TASK_ID,
  EXAMPLE_TENANT_ID,
  EXAMPLE_UNKNOWN_DEPENDENCY,
} from '../../runtime/api/examples.ts';
import { MAX_BODY_BYTES } from '../../runtime/api/limits.ts';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { succeededTask } from '../helpers/factories.ts';
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

const errorOf = async (input: Parameters<typeof apiEvent>[0], router: ApiRouter = api) =>
  (jsonOf(await router(apiEvent(input))) as { error: unknown }).error;

describe('OpenAPI examples: what the code answers', () => {
  it('400, 403, 404, 405, 413 and 415: each error example is the answer to its request', async () => {
    const guarded = createApiRouter(services, { authorize: () => false });
    expect(await errorOf({ method: 'POST', path: '/v1/tasks', json: { tenantId: 'a b', type: 'demo.echo' } })).toEqual(
      EXAMPLE_ERRORS[400],
    );
    expect(await errorOf({ path: `/v1/tenants/${EXAMPLE_TENANT_ID}` }, guarded)).toEqual(EXAMPLE_ERRORS[403]);
    expect(await errorOf({ path: `/v1/tasks/${EXAMPLE_TASK_ID}` })).toEqual(EXAMPLE_ERRORS[404]);
    expect(await errorOf({ method: 'DELETE', path: '/v1/tasks' })).toEqual(EXAMPLE_ERRORS[405]);
    expect(
      await errorOf({
        method: 'POST',
        path: '/v1/tasks',
        json: { ...EXAMPLE_SUBMIT, payload: 'x'.repeat(MAX_BODY_BYTES) },
      }),
    ).toEqual(EXAMPLE_ERRORS[413]);
    expect(
      await errorOf({ method: 'POST', path: '/v1/tasks', body: '{}', headers: { 'content-type': 'text/plain' } }),
    ).toEqual(EXAMPLE_ERRORS[415]);
    expect(
      await errorOf({
        method: 'POST',
        path: '/v1/tasks',
        json: { ...EXAMPLE_SUBMIT, idempotencyKey: undefined, dependsOn: EXAMPLE_UNKNOWN_DEPENDENCY.details.missing },
      }),
    ).toEqual(EXAMPLE_UNKNOWN_DEPENDENCY);
  });

  it('409: the example is the answer to a retry of a SUCCEEDED task, its id in the message and details', async () => {
    const done = await succeededTask(services, { tenantId: EXAMPLE_TENANT_ID });
    const error = await errorOf({ method: 'POST', path: `/v1/tasks/${done.taskId}/retry` });
    expect(JSON.parse(JSON.stringify(error).replaceAll(done.taskId, EXAMPLE_TASK_ID))).toEqual(EXAMPLE_ERRORS[409]);
  });

  it('202 and 200: the task examples have the fields of the answers to the submit example, and its key', async () => {
    const accepted = jsonOf(await api(apiEvent({ method: 'POST', path: '/v1/tasks', json: EXAMPLE_SUBMIT })));
    const repeated = jsonOf(await api(apiEvent({ method: 'POST', path: '/v1/tasks', json: EXAMPLE_SUBMIT })));
    expect(Object.keys(EXAMPLE_TASK).sort()).toEqual(Object.keys(accepted as object).sort());
    expect(Object.keys(EXAMPLE_SUCCEEDED_TASK).sort()).toEqual(Object.keys(repeated as object).sort());
    expect(EXAMPLE_TASK.idempotencyKey).toBe(EXAMPLE_SUBMIT.idempotencyKey);
    expect(EXAMPLE_TASK.payload).toEqual(EXAMPLE_SUBMIT.payload);
  });
});
