/**
 * The HTTP API router over API Gateway HTTP API (payload v2) events. The Lambda handler and
 * the local HTTP server both call it, so the API behaves the same in both places.
 *
 * A request is checked completely before any I/O: route (404, 405), path parameters and query
 * (400), body size (413), media type (415), JSON and schema (400), then the task-type registry
 * and config rules inside TaskService (400), then the caller's tenant (403). Only then does a
 * handler read or write. So a refused request never writes anything.
 *
 * Status codes: 400 for every validation failure, syntactic or semantic (unknown task type,
 * payload not matching its type, runtime limits); 422 is not used, so clients handle one code.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Services } from '../app/wiring.ts';
import { SchedulerError } from '../core/errors.ts';
import type { AuthorizeFn } from './caller.ts';
import {
  ApiError,
  forbidden,
  httpStatusOf,
  invalidJson,
  invalidRequest,
  methodNotAllowed,
  routeNotFound,
} from './errors.ts';
import { jsonBody, parseWith, queryObject, requestMethod, requestPath } from './request.ts';
import type { AnyRoute, ApiResponse } from './route.ts';
import { API_ROUTES } from './routes.ts';
import type { ErrorResponse } from './views.ts';

export type { AuthorizeFn };

export interface ApiLogger {
  error(message: string, extra: Record<string, unknown>): void;
}

export interface ApiRouterOptions {
  /** Absent: every caller may act for every tenant (local runtime, open deployments). */
  readonly authorize?: AuthorizeFn | undefined;
  /** Where unexpected errors are logged (their details never reach the response). */
  readonly logger?: ApiLogger;
}

export type ApiRouter = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>;

const consoleLogger: ApiLogger = {
  error: (message, extra) => console.error(JSON.stringify({ level: 'ERROR', message, ...extra })),
};

interface CompiledRoute {
  readonly route: AnyRoute;
  /** Literal segments as strings; parameter segments as `{ name }`. */
  readonly segments: readonly (string | { readonly name: string })[];
}

function compile(route: AnyRoute): CompiledRoute {
  const segments = route.path
    .split('/')
    .slice(1)
    .map((segment) => (segment.startsWith('{') && segment.endsWith('}') ? { name: segment.slice(1, -1) } : segment));
  return { route, segments };
}

/** Raw (still percent-encoded) path parameters when the path fits the template. */
function matchPath(compiled: CompiledRoute, rawSegments: readonly string[]): Record<string, string> | undefined {
  if (rawSegments.length !== compiled.segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, segment] of compiled.segments.entries()) {
    const raw = rawSegments[i]!;
    if (typeof segment === 'string') {
      if (segment !== raw) return undefined;
    } else {
      if (raw === '') return undefined;
      params[segment.name] = raw;
    }
  }
  return params;
}

function decodeParams(raw: Record<string, string>): Record<string, string> {
  const decoded: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    try {
      decoded[name] = decodeURIComponent(value);
    } catch {
      throw invalidRequest('path', [{ path: name, message: 'malformed percent-encoding' }]);
    }
  }
  return decoded;
}

export function createApiRouter(services: Services, options: ApiRouterOptions = {}): ApiRouter {
  const routes = API_ROUTES.map(compile);
  const logger = options.logger ?? consoleLogger;
  const authorize = options.authorize;

  const mayActFor = async (event: APIGatewayProxyEventV2, tenantId: string) =>
    authorize ? (await authorize(event, tenantId)) === true : true;

  async function dispatch(event: APIGatewayProxyEventV2): Promise<ApiResponse> {
    const method = requestMethod(event);
    const path = requestPath(event);
    const rawSegments = path.split('/').slice(1);
    const matches = routes.flatMap((compiled) => {
      const params = matchPath(compiled, rawSegments);
      return params ? [{ compiled, params }] : [];
    });
    if (matches.length === 0) throw routeNotFound(method, path);
    // HEAD is GET without the body (RFC 9110 section 9.3.2): routed wherever GET is.
    const routedAs = method === 'HEAD' ? 'GET' : method;
    const match = matches.find(({ compiled }) => compiled.route.method === routedAs);
    if (!match) {
      throw methodNotAllowed(
        method,
        path,
        matches.flatMap(({ compiled }) =>
          compiled.route.method === 'GET' ? ['GET', 'HEAD'] : [compiled.route.method],
        ),
      );
    }
    const { route } = match.compiled;
    const params = parseWith(route.params, decodeParams(match.params), 'path');
    const query = parseWith(route.query, queryObject(event), 'query');
    let body: unknown;
    if (route.body) {
      const raw = jsonBody(event, route.body.maxBytes);
      if (raw === undefined && route.body.required) throw invalidJson('A JSON body is required');
      body = raw === undefined ? undefined : parseWith(route.body.schema, raw, 'body');
    }
    return route.handle({
      params,
      query,
      body,
      event,
      services,
      mayActFor: (tenantId) => mayActFor(event, tenantId),
      async requireTenant(tenantId) {
        if (!(await mayActFor(event, tenantId))) throw forbidden(tenantId);
      },
    });
  }

  return async (event) => {
    let result: APIGatewayProxyStructuredResultV2;
    try {
      result = toResult(await dispatch(event));
    } catch (error) {
      result = errorResult(error, event, logger);
    }
    if (requestMethod(event) !== 'HEAD') return result;
    // HEAD: the GET's status and headers, its Content-Length included (RFC 9110 9.3.2), no body.
    const length = Buffer.byteLength(result.body ?? '', result.isBase64Encoded ? 'base64' : 'utf8');
    return { ...result, headers: { ...result.headers, 'content-length': String(length) }, body: '' };
  };
}

function toResult(response: ApiResponse): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: response.status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...response.headers },
    body: JSON.stringify(response.body),
  };
}

/** Coded refusals keep their code, status and details; anything else is a 500 that leaks nothing. */
export function errorResult(
  error: unknown,
  event: APIGatewayProxyEventV2,
  logger: ApiLogger,
): APIGatewayProxyStructuredResultV2 {
  const status = error instanceof SchedulerError ? httpStatusOf(error) : 500;
  if (error instanceof SchedulerError && status < 500) {
    const body: ErrorResponse = {
      error: {
        code: error.code,
        message: error.message,
        details: error.details,
      },
    };
    return toResult({ status, body, headers: error instanceof ApiError ? error.headers : undefined });
  }
  const requestId = event.requestContext?.requestId;
  logger.error('Unhandled error in API request', {
    requestId,
    method: requestMethod(event),
    path: requestPath(event),
    error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
  });
  const body: ErrorResponse = {
    error: {
      code: 'internal_error',
      message: `Internal error${requestId ? ` (request ${requestId})` : ''}; it has been logged`,
    },
  };
  return toResult({ status: 500, body });
}
