/**
 * The local HTTP server over real HTTP (127.0.0.1, ephemeral port, fetch): the same router
 * behind node:http, the body limit enforced while streaming, and the extra-routes hook.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, startHttpServer } from '../../local/http-server.ts';
import { MAX_BODY_BYTES } from '../../runtime/api/limits.ts';
import { taskViewSchema } from '../../runtime/api/views.ts';
import { snapshotWrites, startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let server: HttpServer;

beforeAll(async () => {
  services = await startTestServices();
  server = await startHttpServer({
    services,
    port: 0,
    extraRoutes: (method, path) =>
      method === 'GET' && path === '/'
        ? (_request, response) => {
            response.writeHead(200, { 'content-type': 'text/html' });
            response.end('<h1>dashboard</h1>');
          }
        : undefined,
  });
});
afterAll(async () => {
  await server.close();
  await services.stop();
});

/** A request body delivered in chunks (chunked transfer encoding, no content-length). */
function streamOf(chunks: number, chunkBytes: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent === 0) controller.enqueue(new TextEncoder().encode('{"tenantId":"s","type":"demo.echo","payload":"'));
      if (sent < chunks) {
        controller.enqueue(new Uint8Array(chunkBytes).fill(0x61));
        sent++;
      } else {
        controller.enqueue(new TextEncoder().encode('"}'));
        controller.close();
      }
    },
  });
}

describe('Function: startHttpServer', () => {
  it('listens on 127.0.0.1 and serves the API', async () => {
    // Act
    const response = await fetch(`${server.url}/health`);

    // Assess
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await response.json()).toMatchObject({ status: 'ok' });
  });

  it('submits a task and reads it back over HTTP', async () => {
    // Act
    const submitted = await fetch(`${server.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenantId: 'http', type: 'demo.echo', payload: { n: 1 } }),
    });
    const task = taskViewSchema.parse(await submitted.json());
    const read = await fetch(`${server.url}/v1/tasks/${task.taskId}`);
    const listed = await fetch(`${server.url}/v1/tasks?tenantId=http&limit=5`);

    // Assess
    expect(submitted.status).toBe(202);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ taskId: task.taskId, state: 'QUEUED', payload: { n: 1 } });
    expect(((await listed.json()) as { items: { taskId: string }[] }).items.map((t) => t.taskId)).toEqual([
      task.taskId,
    ]);
  });

  it('passes percent-encoded path segments and query strings through as API Gateway does', async () => {
    // Act
    const badId = await fetch(`${server.url}/v1/tenants/a%2Fb`);
    const badQuery = await fetch(`${server.url}/v1/tasks?tenantId=x&tenantId=y`);

    // Assess
    expect(badId.status).toBe(400);
    expect(await badId.json()).toMatchObject({ error: { code: 'invalid_request', details: { in: 'path' } } });
    expect(badQuery.status).toBe(400);
    expect(await badQuery.json()).toMatchObject({ error: { details: { issues: [{ path: 'tenantId' }] } } });
  });

  it('answers 405 with an Allow header', async () => {
    // Act
    const response = await fetch(`${server.url}/v1/tenants/acme`, { method: 'PATCH' });

    // Assess
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD, PUT, DELETE');
  });

  it('refuses a body over the limit with 413 and writes nothing', async () => {
    // Prepare
    const before = await snapshotWrites(services);

    // Act
    const response = await fetch(`${server.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenantId: 'big', type: 'demo.echo', payload: 'x'.repeat(MAX_BODY_BYTES) }),
    });

    // Assess
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({
      error: { code: 'body_too_large', details: { limitBytes: MAX_BODY_BYTES } },
    });
    expect(await snapshotWrites(services)).toEqual(before);
  });

  it('counts a streamed body as it arrives: 413 past the limit', async () => {
    // Prepare
    const before = await snapshotWrites(services);

    // Act: 40 chunks of 8 KiB = 320 KiB, with no content-length to check up front
    const response = await fetch(`${server.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: streamOf(40, 8192),
      duplex: 'half',
    } as RequestInit);

    // Assess
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: 'body_too_large' } });
    expect(await snapshotWrites(services)).toEqual(before);
  });

  it('accepts a streamed body under the limit', async () => {
    // Act: 10 chunks of 8 KiB = 80 KiB
    const response = await fetch(`${server.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: streamOf(10, 8192),
      duplex: 'half',
    } as RequestInit);

    // Assess
    expect(response.status).toBe(202);
    const task = taskViewSchema.parse(await response.json());
    expect((task.payload as string).length).toBe(10 * 8192);
  });

  it('closes the connection after a 413 for a body far beyond the limit', async () => {
    // Act: a declared length past what the server is willing to drain
    const response = await fetch(`${server.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: streamOf(300, 8192),
      duplex: 'half',
    } as RequestInit).catch((error: unknown) => error);

    // Assess: either the 413 arrived before the close, or the client saw the connection close
    if (response instanceof Response) {
      expect(response.status).toBe(413);
      expect(response.headers.get('connection')).toBe('close');
    } else {
      expect(response).toBeInstanceOf(Error);
    }
    const after = await fetch(`${server.url}/health`);
    expect(after.status).toBe(200);
  });

  it('hands routes claimed by extraRoutes to their raw handler', async () => {
    // Act
    const dashboard = await fetch(`${server.url}/`);
    const other = await fetch(`${server.url}/?x=1`, { method: 'POST' });

    // Assess
    expect(dashboard.status).toBe(200);
    expect(dashboard.headers.get('content-type')).toBe('text/html');
    expect(await dashboard.text()).toBe('<h1>dashboard</h1>');
    expect(other.status).toBe(404);
    expect(await other.json()).toMatchObject({ error: { code: 'route_not_found' } });
  });
});
