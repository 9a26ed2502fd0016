/**
 * Serving the dashboard: as a raw route of the local HTTP server (GET / and /index.html), and
 * as an API Gateway result for the deployed API's Lambda, should the stack route GET / to it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { DASHBOARD_HEADERS, DASHBOARD_HTML } from './page.ts';

export const DASHBOARD_PATHS: readonly string[] = ['/', '/index.html'];

const body = Buffer.from(DASHBOARD_HTML, 'utf8');

/** A plain node:http handler: what the local HTTP server's `extraRoutes` and the CLI's proxy call. */
export type PageHandler = (request: IncomingMessage, response: ServerResponse) => void;

const serveDashboard: PageHandler = (request, response) => {
  response.writeHead(200, { ...DASHBOARD_HEADERS, 'content-length': String(body.length) });
  response.end(request.method === 'HEAD' ? undefined : body);
};

/** The `extraRoutes` hook of the local HTTP server (local/http-server.ts): the page for GET/HEAD of its paths, else the API. */
export function dashboardRoutes(method: string, path: string): PageHandler | undefined {
  return (method === 'GET' || method === 'HEAD') && DASHBOARD_PATHS.includes(path) ? serveDashboard : undefined;
}

/** The page as a Lambda (API Gateway HTTP API) result. */
export function dashboardResult(): APIGatewayProxyStructuredResultV2 {
  return { statusCode: 200, headers: { ...DASHBOARD_HEADERS }, body: DASHBOARD_HTML };
}
