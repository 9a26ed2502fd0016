/**
 * Edges of the HTTP contract (issue 15, item 9, and issue 13's response size): invalid UTF-8,
 * non-UTF-8 charsets, duplicate JSON keys, an idempotent replay that spells out a default, HEAD
 * where GET exists, and list pages that stay under Lambda's 6 MB response limit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const LIST_RESPONSE_BUDGET_BYTES = 5 * 1024 * 1024;

import { type HttpServer, startHttpServer } from '../../local/http-server.ts';
import { type ApiRouter, createApiRouter } from '../../runtime/api/router.ts';
import { apiEvent, jsonOf } from '../helpers/api-events.ts';
import { snapshotWrites, startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let api: ApiRouter;
let server: HttpServer;

beforeAll(async () => {
  services = await startTestServices();
  api = createApiRouter(services);
  server = await startHttpServer({ services, port: 0 });
});
afterAll(async () => {
  await server.close();
  await services.stop();
});

const submitText = (body: string, contentType = 'application/json') =>
  api(apiEvent({ method: 'POST', path: '/v1/tasks', body, headers: { 'content-type': contentType } }));
const codeOf = (result: { body?: string | undefined }) =>
  (JSON.parse(result.body!) as { error: { code: string } }).error.code;

describe('Request encoding', () => {
  it('refuses a body that is not valid UTF-8 over HTTP with a coded 400, writing nothing', async () => {
    // Prepare: "é" in ISO-8859-1 (0xE9) inside an otherwise valid submit.
    const before = await snapshotWrites(services);
    const bytes = Buffer.concat([
      Buffer.from('{"tenantId":"enc","type":"demo.echo","payload":"caf'),
      Buffer.from([0xe9]),
      Buffer.from('"}'),
    ]);

    // Act
    const response = await fetch(`${server.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: bytes,
    });

    // Assess
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'invalid_json' } });
    expect(await snapshotWrites(services)).toEqual(before);
  });

  it('keeps valid UTF-8 over HTTP intact (emoji, noncharacters)', async () => {
    const payload = 'caf\u00e9 \u{1F600} \uFFFE\uFFFF \u{10FFFF}';
    const response = await fetch(`${server.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenantId: 'enc', type: 'demo.echo', payload }),
    });
    expect(response.status).toBe(202);
    const { taskId } = (await response.json()) as { taskId: string };
    const read = await fetch(`${server.url}/v1/tasks/${taskId}`);
    expect(((await read.json()) as { payload: unknown }).payload).toBe(payload);
  });

  for (const charset of ['iso-8859-1', 'latin1', 'utf-16', '"windows-1252"']) {
    it(`refuses charset=${charset} with 415`, async () => {
      const result = await submitText('{"tenantId":"enc","type":"demo.echo"}', `application/json; charset=${charset}`);
      expect(result.statusCode).toBe(415);
      expect(codeOf(result)).toBe('unsupported_media_type');
    });
  }

  for (const charset of ['utf-8', 'UTF-8', '"utf-8"', 'utf8']) {
    it(`accepts charset=${charset}`, async () => {
      const result = await submitText('{"tenantId":"enc","type":"demo.echo"}', `application/json; charset=${charset}`);
      expect(result.statusCode).toBe(202);
    });
  }
});

describe('Duplicate JSON keys', () => {
  for (const [name, body] of [
    ['at the top', '{"tenantId":"a","tenantId":"b","type":"demo.echo"}'],
    ['in the payload', '{"tenantId":"a","type":"demo.echo","payload":{"x":[{"k":1,"k":2}]}}'],
    ['spelled with an escape', '{"tenantId":"a","type":"demo.echo","payload":{"k":1,"\\u006b":2}}'],
  ] as const) {
    it(`refuses a duplicate key ${name} with a coded 400`, async () => {
      const result = await submitText(body);
      expect(result.statusCode).toBe(400);
      expect(codeOf(result)).toBe('duplicate_key');
    });
  }

  it('allows the same key in sibling objects and strings that look like keys', async () => {
    const result = await submitText(
      '{"tenantId":"a","type":"demo.echo","payload":[{"k":1},{"k":2},"\\"k\\":3",{"a":{"k":1},"k":{"a":1}}]}',
    );
    expect(result.statusCode).toBe(202);
  });
});

describe('Idempotent replay', () => {
  it('treats a field spelled out with its default value as equal to its absence', async () => {
    // Prepare
    const bare = { tenantId: 'idem', type: 'demo.echo', payload: { a: 1 }, idempotencyKey: 'spelled-default' };
    const first = await api(apiEvent({ method: 'POST', path: '/v1/tasks', json: bare }));
    const defaults = services.config.taskDefaults;

    // Act
    const replay = await api(
      apiEvent({
        method: 'POST',
        path: '/v1/tasks',
        json: { ...bare, priority: defaults.priority, maxAttempts: defaults.maxAttempts },
      }),
    );
    const different = await api(apiEvent({ method: 'POST', path: '/v1/tasks', json: { ...bare, priority: 'high' } }));

    // Assess
    expect(first.statusCode).toBe(202);
    expect(replay.statusCode).toBe(200);
    expect(jsonOf(replay)).toMatchObject({ taskId: (jsonOf(first) as { taskId: string }).taskId });
    expect(different.statusCode).toBe(409);
  });
});

describe('HEAD', () => {
  it('answers HEAD wherever GET is routed, with the GET status and headers and no body', async () => {
    const { taskId } = jsonOf(await submitText('{"tenantId":"head","type":"demo.echo"}')) as { taskId: string };
    for (const path of ['/health', '/openapi.json', `/v1/tasks/${taskId}`, '/v1/tasks?tenantId=head', '/v1/status']) {
      const result = await api(apiEvent({ method: 'HEAD', path }));
      expect(result.statusCode, path).toBe(200);
      expect(result.headers?.['content-type']).toBe('application/json; charset=utf-8');
      expect(result.body ?? '').toBe('');
    }
    expect((await api(apiEvent({ method: 'HEAD', path: '/v1/tasks/tsk_none' }))).statusCode).toBe(404);
  });

  it('lists HEAD in Allow next to GET', async () => {
    const result = await api(apiEvent({ method: 'DELETE', path: '/health' }));
    expect(result.statusCode).toBe(405);
    expect(result.headers?.allow).toBe('GET, HEAD');
  });

  it('answers HEAD over HTTP', async () => {
    const response = await fetch(`${server.url}/health`, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
  });

  it("gives HEAD the GET's Content-Length (RFC 9110 9.3.2), not 0", async () => {
    for (const path of ['/openapi.json', '/v1/tasks?tenantId=head', '/v1/tasks/tsk_none']) {
      // Act
      const get = await fetch(`${server.url}${path}`);
      const bytes = (await get.arrayBuffer()).byteLength;
      const head = await fetch(`${server.url}${path}`, { method: 'HEAD' });

      // Assess
      expect(bytes, path).toBeGreaterThan(0);
      expect(head.status, path).toBe(get.status);
      expect(head.headers.get('content-length'), path).toBe(String(bytes));
      expect(await head.text(), path).toBe('');
    }
  });
});

describe('List responses under the Lambda response limit', () => {
  it('ends a page early when its items would pass the byte budget; the cursor continues without gaps', async () => {
    // Prepare: payloads of quotes double when escaped, twice over in the Lambda response.
    const payload = '"'.repeat(95_000);
    const submitted: string[] = [];
    for (let i = 0; i < 20; i++) {
      const result = await api(
        apiEvent({ method: 'POST', path: '/v1/tasks', json: { tenantId: 'big', type: 'demo.echo', payload } }),
      );
      submitted.push((jsonOf(result) as { taskId: string }).taskId);
    }

    // Act
    const seen: string[] = [];
    const pageSizes: number[] = [];
    let cursor: string | undefined;
    do {
      const result = await api(
        apiEvent({ path: `/v1/tasks?tenantId=big&limit=100${cursor ? `&cursor=${cursor}` : ''}` }),
      );
      expect(result.statusCode).toBe(200);
      // What Lambda counts: the whole result object, body escaped inside it.
      expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(6 * 1024 * 1024);
      const page = jsonOf(result) as { items: { taskId: string }[]; nextCursor?: string };
      pageSizes.push(page.items.length);
      seen.push(...page.items.map((item) => item.taskId));
      cursor = page.nextCursor;
    } while (cursor);

    // Assess
    expect(pageSizes.length).toBeGreaterThan(1);
    expect(pageSizes[0]).toBeLessThan(20);
    expect([...seen].sort()).toEqual([...submitted].sort());
    expect(LIST_RESPONSE_BUDGET_BYTES).toBeLessThan(6 * 1024 * 1024);
  });

  it('keeps /v1/status under the limit too', async () => {
    const result = await api(apiEvent({ path: '/v1/status?tenants=big&recent=20' }));
    expect(result.statusCode).toBe(200);
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(6 * 1024 * 1024);
  });
});
