/**
 * The dashboard for a deployed stack. Every route of the deployed API requires SigV4, which a
 * browser cannot sign, so `tasks dashboard --endpoint URL` serves the same page on localhost
 * and answers its one data request (GET /v1/status) through the signing SchedulerClient with
 * the operator's AWS credentials. Nothing else is proxied: the page only reads.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SchedulerApiError } from '../sdk/errors.ts';
import type { SchedulerClient } from '../sdk/index.ts';
import { foreignOriginBody, foreignOriginRefusal } from './foreign-origin.ts';
import { dashboardRoutes } from './routes.ts';

export interface DashboardProxy {
  readonly url: string;
  close(): Promise<void>;
}

export async function startDashboardProxy(options: {
  client: SchedulerClient;
  port?: number;
  host?: string;
}): Promise<DashboardProxy> {
  const host = options.host ?? '127.0.0.1';
  const server: Server = createServer((request, response) => {
    // It reads with the operator's credentials: a web page the operator visits must not (foreign-origin.ts).
    const refusal = foreignOriginRefusal(request.headers, host);
    if (refusal) {
      response.writeHead(403, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      return void response.end(foreignOriginBody(refusal));
    }
    const url = new URL(request.url ?? '/', 'http://dashboard.local');
    const page = dashboardRoutes(request.method ?? 'GET', url.pathname);
    if (page) return void page(request, response);
    if (request.method !== 'GET' || url.pathname !== '/v1/status') {
      response.writeHead(404, { 'content-type': 'application/json' });
      return void response.end(JSON.stringify({ error: { code: 'route_not_found', message: 'Not proxied' } }));
    }
    const recent = Number(url.searchParams.get('recent') ?? '5');
    const tenants = url.searchParams.get('tenants')?.split(',').filter(Boolean);
    options.client
      .status({ recent: Number.isInteger(recent) ? recent : 5, tenants })
      .then((status) => {
        response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        response.end(JSON.stringify(status));
      })
      .catch((error: unknown) => {
        const status = error instanceof SchedulerApiError ? error.status : 502;
        const code = error instanceof SchedulerApiError ? error.code : 'upstream_unreachable';
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { code, message: (error as Error).message } }));
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8080, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
