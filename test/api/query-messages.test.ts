/**
 * A bad page size or `recent` is refused with one issue that says what is wanted: `limit=0` said
 * "Too small: expected number to be >=1" (and `limit=abc` "an integer from 1 to 100"), and
 * `recent=abc` gave two issues, the first "Too big: expected string to have <=2 characters".
 */
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

const issuesOf = async (path: string, rawQueryString: string) => {
  const result = await api(apiEvent({ path: `${path}?${rawQueryString}` }));
  expect(result.statusCode, `${path}?${rawQueryString}`).toBe(400);
  return (jsonOf(result) as { error: { details: { issues: { path: string; message: string }[] } } }).error.details
    .issues;
};

describe('Query numbers: one issue, saying what is wanted', () => {
  for (const [path, prefix] of [
    ['/v1/tasks', 'tenantId=a&'],
    ['/v1/batches', 'tenantId=a&'],
  ] as const) {
    for (const limit of ['0', '101', '999', 'abc', '1.5', '-1', '1000']) {
      it(`${path} limit=${limit}`, async () => {
        expect(await issuesOf(path, `${prefix}limit=${limit}`)).toEqual([
          { path: 'limit', message: 'an integer from 1 to 100' },
        ]);
      });
    }
  }

  for (const recent of ['21', '99', 'abc', '100000', '-1', '1.5']) {
    it(`/v1/status recent=${recent}`, async () => {
      expect(await issuesOf('/v1/status', `recent=${recent}`)).toEqual([
        { path: 'recent', message: 'an integer from 0 to 20' },
      ]);
    });
  }
});
