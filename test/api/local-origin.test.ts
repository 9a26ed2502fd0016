/**
 * The local API identifies no caller: every request may act for every tenant. A web page the
 * user visits must not be one of those callers: through DNS rebinding (a name of the page's that
 * turns to 127.0.0.1, so the browser takes the API for the page's own origin) it could read and
 * change every tenant's work, and with a plain cross-site form (no body, so no JSON media type is
 * asked for) it could cancel or retry a task whose id it derived from a guessed idempotency key.
 * The local server answers only requests that name it by a loopback name, from no other origin.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboardProxy } from '../../client/dashboard/proxy.ts';
import type { SchedulerClient } from '../../client/sdk/index.ts';
import { type HttpServer, startHttpServer } from '../../local/http-server.ts';
import { submitTask } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let server: HttpServer;

beforeAll(async () => {
  services = await startTestServices();
  server = await startHttpServer({ services, port: 0 });
});
afterAll(async () => {
  await server.close();
  await services.stop();
});

/** A request with the headers a browser would send (node:http lets a test set Host and Origin). */
function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  port = server.port,
): Promise<{ status: number; body: { error?: { code: string } } & Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') }),
      );
    });
    request.on('error', reject);
    request.end();
  });
}

describe('Local HTTP server: requests from web pages', () => {
  it('refuses a request that names it by a name other than a loopback one (DNS rebinding)', async () => {
    // Act
    const rebound = await send('GET', '/v1/tasks?tenantId=acme', { host: `attacker.example:${server.port}` });

    // Assess
    expect(rebound.status).toBe(403);
    expect(rebound.body.error?.code).toBe('foreign_origin');
  });

  it("refuses a cross-site form's cancel of a task, leaving the task as it was", async () => {
    // Prepare
    const task = await submitTask(services, { tenantId: 'acme' });

    // Act: what a form on another site posts (no body, a form's media type).
    const cancel = await send('POST', `/v1/tasks/${task.taskId}/cancel`, {
      host: `127.0.0.1:${server.port}`,
      origin: 'https://attacker.example',
      'content-type': 'application/x-www-form-urlencoded',
    });
    const opaque = await send('POST', `/v1/tasks/${task.taskId}/cancel`, {
      host: `127.0.0.1:${server.port}`,
      origin: 'null',
    });

    // Assess
    expect([cancel.status, opaque.status]).toEqual([403, 403]);
    expect((await services.tasks.get(task.taskId))?.state).toBe('QUEUED');
  });

  it('answers the CLI, the SDK and its own page: loopback names, no origin or its own', async () => {
    // Act
    const answers = await Promise.all([
      send('GET', '/health', { host: `127.0.0.1:${server.port}` }),
      send('GET', '/health', { host: `localhost:${server.port}` }),
      send('GET', '/health', { host: `[::1]:${server.port}` }),
      send('GET', '/health', { host: `127.0.0.1:${server.port}`, origin: `http://127.0.0.1:${server.port}` }),
      send('GET', '/health', { host: `localhost:${server.port}`, origin: `http://localhost:${server.port}` }),
    ]);

    // Assess
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
  });
});

describe('Dashboard proxy: requests from web pages', () => {
  it("reads the deployed status with the operator's credentials only for its own page", async () => {
    // Prepare: a client that counts the status reads it is asked for.
    let reads = 0;
    const client = {
      status: async () => {
        reads++;
        return { pools: {}, tiers: [] };
      },
    } as unknown as SchedulerClient;
    const proxy = await startDashboardProxy({ client, port: 0 });
    const port = Number(new URL(proxy.url).port);

    // Act
    const rebound = await send('GET', '/v1/status', { host: `attacker.example:${port}` }, port);
    const foreign = await send(
      'GET',
      '/v1/status',
      { host: `127.0.0.1:${port}`, origin: 'https://attacker.example' },
      port,
    );
    const own = await send('GET', '/v1/status', { host: `127.0.0.1:${port}` }, port);
    await proxy.close();

    // Assess
    expect([rebound.status, foreign.status, own.status]).toEqual([403, 403, 200]);
    expect(reads).toBe(1);
  });
});
