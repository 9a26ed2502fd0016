/**
 * The HTTP API, played for a stack deployed into moto (moto's CloudFormation does not create
 * AWS::ApiGatewayV2::*, and moto runs no integration): each request becomes the payload 2.0 event
 * API Gateway would send to the deployed API function (local/http-server.ts's toEvent), with the
 * IAM identity API Gateway adds once it has checked the SigV4 signature. Signatures are not
 * checked here: every request is taken as signed by `callerArn`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toEvent } from '../../local/http-server.ts';
import type { InvokeOutcome } from './lambda-service.ts';

export interface PlayedApi {
  readonly url: string;
  readonly requests: number;
  close(): Promise<void>;
}

export async function startApiGateway(options: {
  readonly invoke: (event: unknown) => Promise<InvokeOutcome>;
  readonly callerArn: string;
  readonly accountId: string;
}): Promise<PlayedApi> {
  let requests = 0;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests++;
      const method = (request.method ?? 'GET').toUpperCase();
      const bytes = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      const base = toEvent(request, method, request.url ?? '/', bytes);
      const event = {
        ...base,
        requestContext: {
          ...base.requestContext,
          accountId: options.accountId,
          authorizer: {
            iam: {
              accessKey: 'ASIADEPLOYCHECK',
              accountId: options.accountId,
              callerId: 'AIDADEPLOYCHECK',
              principalOrgId: null,
              userArn: options.callerArn,
              userId: 'AIDADEPLOYCHECK',
            },
          },
        },
      };
      options.invoke(event).then(
        (outcome) => {
          if (!outcome.ok) {
            // What API Gateway answers when the integration fails.
            response.writeHead(500, { 'content-type': 'application/json' });
            response.end('{"message":"Internal Server Error"}');
            return;
          }
          const result = outcome.result as {
            statusCode?: number;
            headers?: Record<string, string | number | boolean>;
            body?: string;
            isBase64Encoded?: boolean;
          };
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
          response.writeHead(result.statusCode ?? 200, headers);
          response.end(
            result.body === undefined
              ? undefined
              : Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8'),
          );
        },
        (error: unknown) => {
          response.writeHead(500, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ message: String(error) }));
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
