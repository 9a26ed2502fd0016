/**
 * The AWS SDK's transport, replaced: an HttpHandler the DynamoDB and SQS clients are given as
 * `requestHandler`. The SDK serialises each command, signs it and sends it here; the answer is
 * parsed, and errors are classified and retried by the SDK's own middleware. So the project's
 * adapters run unchanged, and faults injected here sit BELOW the SDK's retries, where AWS's do:
 * a write applied and its response lost is retried by the SDK, and the retry meets the write.
 *
 *   adapter ─▶ SDK (marshal, retry, sign) ─▶ FaultyHandler ─▶ InMemoryAwsHandler ─▶ fakes
 *                                             └─ or the real NodeHttpHandler (SCHEDULER_FAULTS)
 */
import type { HttpHandler } from '@smithy/core/protocols';
import type { HttpRequest, HttpResponse } from '@smithy/core/transport';
import type { HttpHandlerOptions } from '@smithy/types';
import { DynamoDbError, type InMemoryDynamoDb } from './dynamodb.ts';
import { type InMemorySqs, SqsError } from './sqs.ts';

export type RequestHandler = HttpHandler<Record<string, never>>;

const DYNAMODB_PREFIX = 'DynamoDB_20120810.';
const SQS_PREFIX = 'AmazonSQS.';

export type Service = 'dynamodb' | 'sqs' | 'other';

/** Which service and operation a JSON-protocol request is for (from its X-Amz-Target). */
export function operationOf(request: HttpRequest): { service: Service; operation: string } {
  const target = headerOf(request, 'x-amz-target') ?? '';
  if (target.startsWith(DYNAMODB_PREFIX))
    return { service: 'dynamodb', operation: target.slice(DYNAMODB_PREFIX.length) };
  if (target.startsWith(SQS_PREFIX)) return { service: 'sqs', operation: target.slice(SQS_PREFIX.length) };
  return { service: 'other', operation: target };
}

function headerOf(request: HttpRequest, name: string): string | undefined {
  for (const [key, value] of Object.entries(request.headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

function jsonResponse(
  statusCode: number,
  body: unknown,
  headers: Record<string, string> = {},
): { response: HttpResponse } {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  return {
    response: {
      statusCode,
      headers: { 'content-type': 'application/x-amz-json-1.0', 'content-length': String(bytes.length), ...headers },
      body: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    },
  };
}

/** An error response as the service sends it (the SDK maps `__type` to the error's name). */
export function errorResponse(
  service: Service,
  code: string,
  message: string,
  status = 400,
): { response: HttpResponse } {
  if (service === 'sqs') {
    return jsonResponse(status, { __type: `com.amazonaws.sqs#${code}`, message });
  }
  const type =
    code === 'ValidationException' ? `com.amazon.coral.validate#${code}` : `com.amazonaws.dynamodb.v20120810#${code}`;
  return jsonResponse(status, { __type: type, message });
}

export function bodyText(request: HttpRequest): string {
  const { body } = request;
  if (typeof body === 'string') return body;
  // The SDK's JSON body is a Uint8Array subclass whose valueOf warns: read its bytes directly.
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (body === undefined || body === null) return '{}';
  throw new Error('The simulated AWS handler accepts only string or byte request bodies');
}

/** Answers DynamoDB and SQS requests from the in-memory fakes. */
export class InMemoryAwsHandler implements RequestHandler {
  readonly metadata = { handlerProtocol: 'http/1.1' };
  readonly #dynamodb: InMemoryDynamoDb;
  readonly #sqs: InMemorySqs;

  constructor(dynamodb: InMemoryDynamoDb, sqs: InMemorySqs) {
    this.#dynamodb = dynamodb;
    this.#sqs = sqs;
  }

  async handle(request: HttpRequest, options: HttpHandlerOptions = {}): Promise<{ response: HttpResponse }> {
    const { service, operation } = operationOf(request);
    const input = JSON.parse(bodyText(request)) as Record<string, unknown>;
    try {
      if (service === 'dynamodb') return jsonResponse(200, this.#dynamodb.handle(operation, input));
      if (service === 'sqs') {
        return jsonResponse(
          200,
          await this.#sqs.handle(operation, input, options.abortSignal as AbortSignal | undefined),
        );
      }
      return errorResponse('dynamodb', 'UnknownOperationException', `No simulated service for ${operation}`);
    } catch (error) {
      if (error instanceof DynamoDbError) {
        return jsonResponse(error.status, { __type: error.wireType, message: error.message, ...error.extra });
      }
      if (error instanceof SqsError) return errorResponse('sqs', error.code, error.message);
      throw error;
    }
  }

  updateHttpClientConfig(): void {}
  httpHandlerConfigs(): Record<string, never> {
    return {};
  }
  destroy(): void {}
}
