/**
 * The local HTTP front door: turns each node:http request into the API Gateway HTTP API
 * (payload v2) event the deployed Lambda receives and calls the same router, so the API
 * behaves identically on a laptop and on AWS.
 */
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { foreignOriginBody, foreignOriginRefusal } from '../client/dashboard/foreign-origin.ts';
import { bodyTooLarge } from '../runtime/api/errors.ts';
import { MAX_BODY_BYTES } from '../runtime/api/limits.ts';
import { type ApiRouterOptions, createApiRouter, errorResult } from '../runtime/api/router.ts';
import { API_ROUTES } from '../runtime/api/routes.ts';
import type { Services } from '../runtime/app/wiring.ts';

/** A raw node handler for a route outside the API (e.g. the dashboard at GET /). */
export type RawHandler = (request: IncomingMessage, response: ServerResponse) => void | Promise<void>;

export interface HttpServerOptions {
  readonly services: Services;
  /** 0 picks a free port. */
  readonly port: number;
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** Consulted before the API router; return a handler to take the request. */
  readonly extraRoutes?: (method: string, path: string) => RawHandler | undefined;
  /** Router options (no authorization locally unless given). */
  readonly router?: ApiRouterOptions;
  /** @default MAX_BODY_BYTES */
  readonly maxBodyBytes?: number;
}

export interface HttpServer {
  /** Base URL, e.g. `http://127.0.0.1:3000`. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Past the limit the rest of the body is read and dropped (so the client, still sending, gets
 * the 413 rather than a reset), up to this many bytes; then the connection is closed.
 */
const DRAIN_FACTOR = 8;

export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const router = createApiRouter(options.services, options.router);
  // A route may take more than MAX_BODY_BYTES (the batch submit): its own limit for its path.
  const limitFor = (method: string, path: string): number =>
    options.maxBodyBytes ??
    API_ROUTES.find((route) => route.method === method && route.path === path)?.body?.maxBytes ??
    MAX_BODY_BYTES;
  const host = options.host ?? '127.0.0.1';

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      // Reachable only when the client left or writing the response failed: nothing can be sent.
      if (!(error instanceof ClientGoneError)) console.error('local http server: failed to answer', error);
      response.destroy();
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const method = (request.method ?? 'GET').toUpperCase();
    const url = request.url ?? '/';
    const queryAt = url.indexOf('?');
    const rawPath = queryAt === -1 ? url : url.slice(0, queryAt);
    // No caller is identified here: a web page the user visits must not be one (foreign-origin.ts).
    const refusal = foreignOriginRefusal(request.headers, host);
    if (refusal) {
      response.writeHead(403, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
      response.end(method === 'HEAD' ? undefined : foreignOriginBody(refusal));
      request.resume();
      return;
    }
    const extra = options.extraRoutes?.(method, rawPath);
    if (extra) {
      await extra(request, response);
      return;
    }
    const limit = limitFor(method, rawPath);
    const body = await readBody(request, limit);
    const event = toEvent(request, method, url, body.bytes);
    const result = body.tooLarge ? errorResult(bodyTooLarge(limit), event, console) : await router(event);
    writeResult(response, result, body.tooLarge && !body.complete, method === 'HEAD');
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

class ClientGoneError extends Error {
  constructor() {
    super('The client closed the connection before sending the whole body');
    this.name = 'ClientGoneError';
  }
}

interface BodyRead {
  readonly bytes: Buffer | undefined;
  readonly tooLarge: boolean;
  /** False when reading stopped before the end (the connection must then be closed). */
  readonly complete: boolean;
}

/** Read the body, holding at most `limit` bytes in memory whatever the client sends. */
function readBody(request: IncomingMessage, limit: number): Promise<BodyRead> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit * DRAIN_FACTOR) {
    request.pause();
    return Promise.resolve({ bytes: undefined, tooLarge: true, complete: false });
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const finish = (read: BodyRead) => {
      if (settled) return;
      settled = true;
      resolve(read);
    };
    request.on('data', (chunk: Buffer) => {
      received += chunk.byteLength;
      if (received <= limit) chunks.push(chunk);
      else chunks.length = 0;
      if (received > limit * DRAIN_FACTOR) {
        request.pause();
        finish({ bytes: undefined, tooLarge: true, complete: false });
      }
    });
    request.on('end', () => {
      if (received > limit) finish({ bytes: undefined, tooLarge: true, complete: true });
      else
        finish({
          bytes: received === 0 ? undefined : Buffer.concat(chunks),
          tooLarge: false,
          complete: true,
        });
    });
    request.on('error', (error) => {
      if (!settled) reject(error);
    });
    // The client went away mid-body: nothing to answer, and a truncated body must not be routed.
    request.on('close', () => {
      if (!settled && !request.complete) {
        settled = true;
        reject(new ClientGoneError());
      }
    });
  });
}

/**
 * The event API Gateway would build for this request (payload format 2.0, `$default` stage).
 * A body that is not valid UTF-8 is passed base64-encoded, as API Gateway passes binary bodies,
 * so the router sees the bytes and refuses them instead of reading U+FFFD replacements.
 */
export function toEvent(
  request: IncomingMessage,
  method: string,
  url: string,
  bytes: Buffer | undefined,
): APIGatewayProxyEventV2 {
  const text = bytes === undefined || !isUtf8(bytes) ? undefined : bytes.toString('utf8');
  const body = text ?? bytes?.toString('base64');
  const queryAt = url.indexOf('?');
  const rawPath = queryAt === -1 ? url : url.slice(0, queryAt);
  const rawQueryString = queryAt === -1 ? '' : url.slice(queryAt + 1);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const queryStringParameters: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(rawQueryString)) {
    // API Gateway joins repeated keys with a comma.
    queryStringParameters[key] = key in queryStringParameters ? `${queryStringParameters[key]},${value}` : value;
  }
  let path = rawPath;
  try {
    path = decodeURI(rawPath);
  } catch {
    // Keep the raw path; the router reports malformed segments itself.
  }
  const now = new Date();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    ...(headers.cookie ? { cookies: headers.cookie.split(/;\s*/) } : {}),
    headers,
    ...(Object.keys(queryStringParameters).length > 0 ? { queryStringParameters } : {}),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0]!,
      http: {
        method,
        path,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
    },
    ...(body === undefined ? {} : { body }),
    isBase64Encoded: bytes !== undefined && text === undefined,
  };
}

function writeResult(
  response: ServerResponse,
  result: APIGatewayProxyStructuredResultV2,
  closeAfter: boolean,
  head: boolean,
): void {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  if (result.cookies?.length) headers['set-cookie'] = result.cookies;
  if (closeAfter) headers.connection = 'close';
  const body =
    result.body === undefined ? Buffer.alloc(0) : Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8');
  // A HEAD's result carries its GET's length (runtime/api/router.ts) and no body.
  if (!(head && body.length === 0 && headers['content-length'] !== undefined))
    headers['content-length'] = String(body.length);
  response.writeHead(result.statusCode ?? 200, headers);
  response.end(body, () => {
    if (closeAfter) response.socket?.destroy();
  });
}
