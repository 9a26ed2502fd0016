/**
 * Fuzzing the HTTP API (fast-check) over methods, paths, query strings, content types and
 * bodies, mixing valid pieces with garbage so requests reach every layer of validation.
 * Properties: never a 5xx; every refusal is a coded 4xx with the documented error shape; a
 * refused request writes nothing (tables and queues unchanged); an accepted payload reads back
 * exactly as sent.
 *
 * Hostile shapes are generated on purpose (issue 15): keys named after Object.prototype members
 * at any depth, nesting far past the limit, the whole Unicode range in strings (lone surrogates
 * and noncharacters included) and tenant ids that are JavaScript object keys.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import { errorResponseSchema } from '../../runtime/api/views.ts';
import { PRIORITY_TIERS, RUNTIMES, TASK_STATES } from '../../runtime/core/task.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { runningTask, submitTask } from '../helpers/factories.ts';
import { snapshotWrites, startTestServices, type TestServices, type WriteSnapshot } from '../helpers/services.ts';

/** FUZZ_RUNS=5000 for a longer hunt. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 250);

let services: TestServices;
let api: ApiRouter;
let knownTaskIds: string[];
const unexpected: { message: string; extra: Record<string, unknown> }[] = [];

beforeAll(async () => {
  services = await startTestServices();
  // Unexpected errors are collected (and must stay absent) rather than printed.
  api = createApiRouter(services, { logger: { error: (message, extra) => unexpected.push({ message, extra }) } });
  knownTaskIds = [
    (await submitTask(services, { tenantId: 'fuzz' })).taskId,
    (await runningTask(services, { tenantId: 'fuzz' })).taskId,
  ];
});
afterAll(async () => {
  await services.stop();
});

/** Keys and ids that are also names on Object.prototype (or the prototype accessor itself). */
const PROTOTYPE_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  '__defineGetter__',
  '__lookupSetter__',
] as const;
/** Noncharacters and the edges of the planes: valid Unicode that some transports refuse. */
const noncharacter = fc.constantFrom('\uFFFE', '\uFFFF', '\uFDD0', '\uFDEF', '\u{1FFFE}', '\u{10FFFF}', '\u{1F600}');
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
/** Strings over the whole range: any code point, lone surrogates, noncharacters, controls. */
const unicodeText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc
    .array(fc.oneof(loneSurrogate, noncharacter, fc.string({ unit: 'binary', maxLength: 3 })), { maxLength: 8 })
    .map((parts) => parts.join('')),
);
const anyText = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), unicodeText);
const goodId = fc.oneof(
  { arbitrary: fc.stringMatching(/^[A-Za-z0-9_.:@-]{1,20}$/), weight: 4 },
  { arbitrary: fc.constantFrom(...PROTOTYPE_NAMES), weight: 1 },
);
const hostileKey = fc.oneof(fc.constantFrom(...PROTOTYPE_NAMES), fc.string({ maxLength: 8 }), unicodeText);

/**
 * JSON text (not a value: a `__proto__` key must reach the body as a key, which building an
 * object and stringifying it cannot guarantee) with hostile keys and strings at any depth.
 */
const { jsonText } = fc.letrec<{ jsonText: string }>((tie) => ({
  jsonText: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(
      fc.constantFrom('null', 'true', 'false', '0', '-1.5e3', '1e-7'),
      unicodeText.map((s) => JSON.stringify(s)),
    ),
    fc.array(tie('jsonText'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
    fc
      .uniqueArray(fc.tuple(hostileKey, tie('jsonText')), { maxLength: 4, selector: ([key]) => key })
      .map((entries) => `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`),
  ),
})) as { jsonText: fc.Arbitrary<string> };

/** Arrays and objects nested around the depth limit (24) or far past any call stack. */
const deepText = fc
  .tuple(
    fc.oneof(fc.integer({ min: 20, max: 30 }), fc.integer({ min: 1_000, max: 20_000 })),
    fc.constantFrom(['[', ']'], ['{"a":', '}'], ['{"__proto__":', '}'], ['{"constructor":', '}']),
  )
  .map(([depth, [open, close]]) => `${open.repeat(depth)}1${close.repeat(depth)}`);
const idLike = fc.oneof(goodId, anyText, fc.constant('x'.repeat(129)));
const segment = fc.oneof(
  // A URL carries UTF-8, which has no lone surrogates: they travel as U+FFFD.
  idLike.map((id) => encodeURIComponent(id.toWellFormed())),
  anyText, // unencoded, as a misbehaving client might send
  fc.constantFrom('%', '%E0%A4%A', '%2F', '..', ''),
);

/** Ids of real tasks, read when a value is generated (they exist only after `beforeAll`). */
const knownTask = () => fc.nat(1).map((i) => knownTaskIds[i]!);

const path = fc.oneof(
  fc.constantFrom('/health', '/openapi.json', '/v1/tasks', '/', '/v1', '/v1/tenants', '/v1/tasks/'),
  fc.tuple(fc.oneof(segment, knownTask())).map(([id]) => `/v1/tasks/${id}`),
  fc
    .tuple(fc.oneof(segment, knownTask()), fc.constantFrom('cancel', 'retry', 'x'))
    .map(([id, op]) => `/v1/tasks/${id}/${op}`),
  segment.map((id) => `/v1/tenants/${id}`),
  fc.constantFrom(...PROTOTYPE_NAMES).map((id) => `/v1/tenants/${id}`),
  fc
    .array(fc.oneof(goodId, anyText), { maxLength: 4 })
    .map((ids) => `/v1/status?${new URLSearchParams({ tenants: ids.join(',') })}`),
  fc.array(segment, { maxLength: 5 }).map((segments) => `/${segments.join('/')}`),
);

const queryValue = fc.oneof(
  goodId,
  anyText,
  fc.constantFrom(...TASK_STATES, 'done'),
  fc.integer({ min: -5, max: 200 }).map(String),
  fc.base64String({ maxLength: 60 }),
);
const query = fc.oneof(
  fc.constant(''),
  fc
    .array(fc.tuple(fc.oneof(fc.constantFrom('tenantId', 'state', 'limit', 'cursor'), anyText), queryValue), {
      maxLength: 5,
    })
    .map((pairs) => new URLSearchParams(pairs).toString()),
  anyText, // not even key=value
);

/**
 * Mostly a good value, sometimes out of range or any JSON: enough bodies get past the schema
 * to reach the registry, the service and the store.
 */
const loose = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof(
    { arbitrary: good, weight: 9 },
    { arbitrary: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.double(), fc.integer()), weight: 1 },
  );
const submitBody = fc.record(
  {
    tenantId: loose(goodId),
    type: loose(fc.constantFrom('demo.echo', 'demo.echo', 'demo.sleep', 'demo.fail', 'demo.nope')),
    payload: fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.record({ ms: loose(fc.nat(10)) }),
      fc.record({ failTimes: loose(fc.nat(3)) }),
    ),
    priority: loose(fc.constantFrom(...PRIORITY_TIERS)),
    idempotencyKey: loose(goodId),
    resources: loose(
      fc.record(
        { vcpu: fc.double({ min: 0.25, max: 4, noNaN: true }), memoryMiB: fc.integer({ min: 128, max: 4096 }) },
        { requiredKeys: [] },
      ),
    ),
    runtime: loose(fc.constantFrom(...RUNTIMES)),
    timeoutSeconds: loose(fc.integer({ min: 1, max: 900 })),
    maxAttempts: loose(fc.integer({ min: 1, max: 100 })),
    delaySeconds: loose(fc.integer({ min: 0, max: 3600 })),
    runAt: loose(
      fc.integer({ min: -86_400, max: 30 * 86_400 }).map((s) => new Date(Date.now() + s * 1000).toISOString()),
    ),
  },
  { requiredKeys: ['tenantId', 'type'] },
);
/** Now and then an unknown key, which the strict schema must refuse. */
const withUnknownKey = fc.oneof(
  { arbitrary: submitBody, weight: 7 },
  {
    arbitrary: fc.tuple(submitBody, fc.jsonValue({ maxDepth: 1 })).map(([submit, extra]) => ({ ...submit, extra })),
    weight: 1,
  },
);
const tenantBody = fc.record(
  {
    weight: loose(fc.double({ min: -1, max: 2000, noNaN: true })),
    maxConcurrency: loose(fc.integer({ min: -1, max: 200_000 })),
  },
  { requiredKeys: [] },
);

const body = fc.oneof(
  fc.constant(undefined),
  withUnknownKey.map((b) => JSON.stringify(b)),
  tenantBody.map((b) => JSON.stringify(b)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.constantFrom('{}', '{', 'null', '[]', '""', ' ', '{"a":1}}'),
  anyText,
);

/** Anything at all, mostly refused early (routing, media type, syntax). */
const anyRequest = fc.record({
  method: fc.oneof(
    fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
    fc.stringMatching(/^[A-Z]{1,8}$/),
  ),
  path,
  query,
  body,
  contentType: fc.constantFrom(
    undefined,
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/problem+json',
    '',
  ),
});

const jsonOrNot = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 9 },
  { arbitrary: fc.constantFrom('text/plain', 'application/xml'), weight: 1 },
);

/** A well-aimed request to a real route with a fuzzed body, so validation deeper down is exercised. */
const aimedRequest = fc.oneof(
  fc.tuple(withUnknownKey, jsonOrNot).map(([b, contentType]) => ({
    method: 'POST',
    path: '/v1/tasks',
    query: '',
    body: JSON.stringify(b),
    contentType,
  })),
  // A submit of the simplest valid shape with a fuzzed payload: demo.echo takes any JSON.
  fc.tuple(goodId, fc.jsonValue({ maxDepth: 4 })).map(([tenantId, payload]) => ({
    method: 'POST',
    path: '/v1/tasks',
    query: '',
    body: JSON.stringify({ tenantId, type: 'demo.echo', payload }),
    contentType: 'application/json',
  })),
  // Hostile payloads, given as text so their keys arrive exactly as generated.
  fc
    .tuple(goodId, fc.oneof({ arbitrary: jsonText, weight: 4 }, { arbitrary: deepText, weight: 1 }))
    .map(([tenantId, payload]) => ({
      method: 'POST',
      path: '/v1/tasks',
      query: '',
      body: `{"tenantId":${JSON.stringify(tenantId)},"type":"demo.echo","payload":${payload}}`,
      contentType: 'application/json',
    })),
  // Deep nesting and hostile keys outside the payload.
  fc
    .tuple(fc.oneof(jsonText, deepText), fc.constantFrom('tenantId', 'resources', 'extra', 'type'))
    .map(([value, field]) => ({
      method: 'POST',
      path: '/v1/tasks',
      query: '',
      body: `{"tenantId":"fuzz","type":"demo.echo",${JSON.stringify(field)}:${value}}`,
      contentType: 'application/json',
    })),
  fc.tuple(segment, tenantBody).map(([tenant, b]) => ({
    method: 'PUT',
    path: `/v1/tenants/${tenant}`,
    query: '',
    body: JSON.stringify(b),
    contentType: 'application/json',
  })),
  fc
    .tuple(
      fc.oneof(segment, knownTask()),
      fc.constantFrom('cancel', 'retry'),
      fc.constantFrom(undefined, '{}', '{"a":1}'),
    )
    .map(([id, op, b]) => ({
      method: 'POST',
      path: `/v1/tasks/${id}/${op}`,
      query: '',
      body: b,
      contentType: 'application/json',
    })),
  query.map((q) => ({ method: 'GET', path: '/v1/tasks', query: q, body: undefined, contentType: undefined })),
);

const request = fc.oneof(anyRequest, aimedRequest);

const echo = (payload: unknown, idempotencyKey?: string) =>
  JSON.stringify({
    tenantId: 'fuzz-coverage',
    type: 'demo.echo',
    payload,
    ...(idempotencyKey ? { idempotencyKey } : {}),
  });
/** A request reaching each status the check below requires (in order: 409 reuses the 202's key). */
const COVERAGE_EXAMPLES = [
  { method: 'GET', path: '/health', query: '', body: undefined, contentType: undefined },
  { method: 'POST', path: '/v1/tasks', query: '', body: echo(1, 'fuzz-409'), contentType: 'application/json' },
  { method: 'POST', path: '/v1/tasks', query: '', body: echo(2, 'fuzz-409'), contentType: 'application/json' },
  { method: 'POST', path: '/v1/tasks', query: '', body: '{}', contentType: 'application/json' },
  { method: 'GET', path: '/no/such/route', query: '', body: undefined, contentType: undefined },
  { method: 'DELETE', path: '/v1/tasks', query: '', body: undefined, contentType: undefined },
  { method: 'POST', path: '/v1/tasks', query: '', body: echo(3), contentType: 'text/plain' },
] as const;

describe('Router: fuzzed requests', () => {
  it(
    'never answers 5xx; refusals are coded 4xx with the error shape and write nothing',
    async () => {
      let baseline: WriteSnapshot = await snapshotWrites(services);
      const statuses = new Map<number, number>();

      await fc.assert(
        fc.asyncProperty(request, async (input) => {
          // Prepare
          const event = apiEvent({
            method: input.method,
            path: input.query ? `${input.path}?${input.query}` : input.path,
            ...(input.body === undefined ? {} : { body: input.body }),
            ...(input.contentType === undefined ? {} : { headers: { 'content-type': input.contentType } }),
          });

          // Act
          const result = await api(event);

          // Assess
          const status = result.statusCode ?? 0;
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          expect(status).toBeGreaterThanOrEqual(200);
          expect(status).toBeLessThan(500);
          const after = await snapshotWrites(services);
          if (input.method === 'HEAD') {
            expect(result.body).toBe('');
            if (status >= 400) expect(after).toEqual(baseline);
          } else if (status >= 400) {
            const { error } = errorResponseSchema.parse(jsonOf(result));
            expect(error.code).toMatch(/^[a-z_]+$/);
            expect(after).toEqual(baseline);
          } else {
            expect([200, 202]).toContain(status);
            baseline = after;
            if (input.method === 'POST' && input.path === '/v1/tasks' && input.body !== undefined) {
              // The payload as stored and returned is the payload as sent, key for key.
              const sent = JSON.parse(input.body) as { type?: unknown; payload?: unknown };
              const returned = (jsonOf(result) as { payload: unknown }).payload;
              if (status === 202 && sent.type === 'demo.echo' && sent.payload !== undefined) {
                expect(JSON.stringify(returned)).toBe(JSON.stringify(sent.payload));
              }
            }
          }
        }),
        // One request per status class always runs first, so the coverage check below does not
        // depend on the random draw; the random requests then run on top.
        { numRuns: RUNS, examples: COVERAGE_EXAMPLES.map((example): [typeof example] => [example]) },
      );

      expect(unexpected).toEqual([]);
      // The generator must reach both acceptance and many kinds of refusal to mean anything.
      const seen = Object.fromEntries(statuses);
      for (const status of [200, 202, 400, 404, 405, 409, 415]) {
        expect(seen, `no ${status} among ${JSON.stringify(seen)}`).toHaveProperty(String(status));
      }
    },
    60_000 + RUNS * 100,
  );
});
