/**
 * Serving the dashboard: as a raw route of the local HTTP server (GET / and /index.html), and
 * as an API Gateway result for the deployed API's Lambda, should the stack route GET / to it.
 */
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { RawHandler } from '../../local/http-server.ts';
import { DASHBOARD_HEADERS, DASHBOARD_HTML } from './page.ts';

export const DASHBOARD_PATHS: readonly string[] = ['/', '/index.html'];

const body = Buffer.from(DASHBOARD_HTML, 'utf8');

const serveDashboard: RawHandler = (request, response) => {
  response.writeHead(200, { ...DASHBOARD_HEADERS, 'content-length': String(body.length) });
  response.end(request.method === 'HEAD' ? undefined : body);
};

/** The `extraRoutes` hook of startHttpServer: the page for GET/HEAD of its paths, else the API. */
export function dashboardRoutes(method: string, path: string): RawHandler | undefined {
  return (method === 'GET' || method === 'HEAD') && DASHBOARD_PATHS.includes(path) ? serveDashboard : undefined;
}

/** The page as a Lambda (API Gateway HTTP API) result. */
export function dashboardResult(): APIGatewayProxyStructuredResultV2 {
  return { statusCode: 200, headers: { ...DASHBOARD_HEADERS }, body: DASHBOARD_HTML };
}
