/**
 * Lost responses below the AWS SDK's retries. AWS can apply a write and lose its response (a
 * timeout, a reset connection): the SDK then retries the same request, and a conditional write
 * that landed the first time now fails its condition. Fault injection above the SDK (a
 * middleware) cannot produce that sequence; this decorator of the client's HTTP handler can:
 *
 *   SDK attempt 1 ──▶ handler ──▶ emulator applies the write ──▶ response dropped, TimeoutError
 *   SDK attempt 2 ──▶ handler ──▶ emulator: ConditionalCheckFailed ──▶ what the caller sees
 *
 * `decide` sees each HTTP request (the operation from `x-amz-target`, its JSON input, the SDK's
 * attempt number) after it was answered, and returns true to throw the answer away. Works for the
 * JSON protocols of DynamoDB and SQS.
 */

/** One request on the wire, as the decider sees it. */
export interface WireCall {
  /** `DynamoDB_20120810` or `AmazonSQS`. */
  readonly service: string;
  /** e.g. `PutItem`, `SendMessageBatch`. */
  readonly operation: string;
  /** The request's JSON body (DynamoDB's attribute-value form for items). */
  readonly input: Record<string, unknown>;
  /** The SDK's attempt number of this request (1 for the first try, 2 for its first retry...). */
  readonly attempt: number;
}

/** Decide, after the request was applied, whether its response is lost. */
export type LoseResponse = (call: WireCall) => boolean;

/** What the SDK throws when a socket times out after sending: retryable (a transient error). */
export class LostResponseError extends Error {
  readonly code = 'ETIMEDOUT';
  readonly $metadata = {};
  readonly call: WireCall;
  constructor(call: WireCall) {
    super(`injected: the response to ${call.service}.${call.operation} (attempt ${call.attempt}) was lost`);
    this.name = 'TimeoutError';
    this.call = call;
  }
}

/** The shape of a smithy HttpHandler, only as far as this decorator needs it. */
interface RequestHandlerLike {
  handle(request: unknown, options?: unknown): Promise<unknown>;
  destroy?(): void;
  updateHttpClientConfig?(key: never, value: never): void;
  httpHandlerConfigs?(): object;
}

/** Counts of what the decorator saw and dropped, for reports. */
export interface LostResponseCounts {
  calls: number;
  lost: number;
}

/** Wrap an HTTP handler so that responses `decide` picks are lost after the request landed. */
export function losingResponses(
  inner: RequestHandlerLike,
  decide: LoseResponse,
  counts: LostResponseCounts = { calls: 0, lost: 0 },
): RequestHandlerLike {
  return {
    async handle(request: unknown, options?: unknown) {
      const response = await inner.handle(request, options);
      counts.calls++;
      const call = wireCall(request);
      if (call && decide(call)) {
        counts.lost++;
        // Read the answer to its end so the connection is reused, then drop it.
        await drain(response);
        throw new LostResponseError(call);
      }
      return response;
    },
    destroy: () => inner.destroy?.(),
    updateHttpClientConfig: (key: never, value: never) => inner.updateHttpClientConfig?.(key, value),
    httpHandlerConfigs: () => inner.httpHandlerConfigs?.() ?? {},
  };
}

/**
 * Install on a constructed client (DynamoDBClient, SQSClient; a DynamoDBDocumentClient shares its
 * client's handler). The SDK reads `config.requestHandler` at every send, so this takes effect on
 * the next call. Returns the counts.
 */
export function installLostResponses(
  client: { config: { requestHandler: unknown } },
  decide: LoseResponse,
): LostResponseCounts {
  const counts: LostResponseCounts = { calls: 0, lost: 0 };
  client.config.requestHandler = losingResponses(client.config.requestHandler as RequestHandlerLike, decide, counts);
  return counts;
}

function wireCall(request: unknown): WireCall | undefined {
  const { headers, body } = request as { headers?: Record<string, string>; body?: unknown };
  const target = headerOf(headers, 'x-amz-target');
  if (!target) return undefined;
  const [service = '', operation = ''] = target.split('.');
  let input: Record<string, unknown> = {};
  const text =
    typeof body === 'string' ? body : body instanceof Uint8Array ? new TextDecoder().decode(body) : undefined;
  if (text !== undefined) {
    try {
      input = JSON.parse(text) as Record<string, unknown>;
    } catch {
      input = {};
    }
  }
  const attempt = Number(/attempt=(\d+)/.exec(headerOf(headers, 'amz-sdk-request') ?? '')?.[1] ?? '1');
  return { service, operation, input, attempt };
}

function headerOf(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

async function drain(output: unknown): Promise<void> {
  const body = (output as { response?: { body?: unknown } }).response?.body as
    | { resume?: () => void; [Symbol.asyncIterator]?: () => AsyncIterator<unknown> }
    | undefined;
  if (body && typeof body[Symbol.asyncIterator] === 'function') {
    for await (const _chunk of body as AsyncIterable<unknown>) {
      // discard
    }
  }
}

/** Matchers for common decisions: DynamoDB's attribute-value items read as plain strings. */
export function attributeString(item: unknown, name: string): string | undefined {
  const value = (item as Record<string, { S?: string; N?: string }> | undefined)?.[name];
  return value?.S ?? value?.N;
}

/**
 * Lose the response to the first PutItem on `table` whose item matches `match` (first SDK
 * attempt only), then none: the shape of every item-1 reproduction.
 */
export function loseFirstPut(
  tableName: string,
  match: (item: Record<string, unknown>) => boolean,
): LoseResponse & { readonly fired: () => number } {
  let fired = 0;
  const decide = ((call: WireCall) => {
    if (fired > 0 || call.operation !== 'PutItem' || call.input.TableName !== tableName) return false;
    if (!match((call.input.Item ?? {}) as Record<string, unknown>)) return false;
    fired++;
    return true;
  }) as LoseResponse & { fired: () => number };
  Object.defineProperty(decide, 'fired', { value: () => fired });
  return decide;
}
