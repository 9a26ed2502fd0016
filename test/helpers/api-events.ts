/**
 * Synthetic API Gateway HTTP API (payload 2.0) events, shaped like the ones API Gateway sends,
 * for driving the API router or Lambda handler without a network.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

export interface ApiEventInput {
  readonly method?: string;
  /** Path with an optional query string: `/v1/tasks?tenantId=a`. */
  readonly path: string;
  /** A value is sent as JSON (content-type application/json unless `headers` say otherwise). */
  readonly json?: unknown;
  /** Raw body text, sent as given. */
  readonly body?: string;
  readonly headers?: Record<string, string>;
  /** Caller identity as API Gateway's IAM authorization reports it. */
  readonly iam?: { readonly userArn: string; readonly accountId?: string; readonly callerId?: string };
  readonly isBase64Encoded?: boolean;
}

let counter = 0;

export function apiEvent(input: ApiEventInput): APIGatewayProxyEventV2 {
  const method = (input.method ?? 'GET').toUpperCase();
  const queryAt = input.path.indexOf('?');
  const rawPath = queryAt === -1 ? input.path : input.path.slice(0, queryAt);
  const rawQueryString = queryAt === -1 ? '' : input.path.slice(queryAt + 1);
  const body = input.body ?? (input.json === undefined ? undefined : JSON.stringify(input.json));
  const headers: Record<string, string> = {
    host: 'api.example.test',
    'user-agent': 'test',
    ...(body !== undefined && input.json !== undefined ? { 'content-type': 'application/json' } : {}),
  };
  for (const [name, value] of Object.entries(input.headers ?? {})) headers[name.toLowerCase()] = value;
  const query: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(rawQueryString)) {
    query[key] = key in query ? `${query[key]},${value}` : value;
  }
  const requestContext = {
    accountId: '111122223333',
    apiId: 'api',
    domainName: 'api.example.test',
    domainPrefix: 'api',
    http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'test' },
    requestId: `req-${++counter}`,
    routeKey: '$default',
    stage: '$default',
    time: new Date().toISOString(),
    timeEpoch: Date.now(),
    ...(input.iam
      ? {
          authorizer: {
            iam: {
              accessKey: 'AKIAEXAMPLE',
              accountId: input.iam.accountId ?? '111122223333',
              callerId: input.iam.callerId ?? 'AROAEXAMPLE:session',
              cognitoIdentity: null,
              principalOrgId: '',
              userArn: input.iam.userArn,
              userId: 'AROAEXAMPLE:session',
            },
          },
        }
      : {}),
  };
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext,
    ...(body === undefined ? {} : { body }),
    isBase64Encoded: input.isBase64Encoded ?? false,
  };
}

/** The parsed JSON body of a router result. */
export function jsonOf<T = Record<string, unknown>>(result: { body?: string | undefined }): T {
  return JSON.parse(result.body ?? 'null') as T;
}
