/**
 * Reading an API Gateway HTTP API (payload v2) event: path segments, query string and JSON
 * body, each checked against a zod schema. Every function here either returns validated data
 * or throws a coded refusal; none does I/O.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { z } from 'zod';
import { ValidationError } from '../core/errors.ts';
import { bodyTooLarge, type FieldIssue, invalidJson, invalidRequest, unsupportedMediaType } from './errors.ts';
import { MAX_BODY_BYTES } from './limits.ts';

/** Case-insensitive header lookup (HTTP API lower-cases names, but a test or adapter may not). */
export function header(event: APIGatewayProxyEventV2, name: string): string | undefined {
  const headers = event.headers ?? {};
  const direct = headers[name];
  if (direct !== undefined) return direct;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/**
 * The request path relative to the API. On a named stage API Gateway puts the stage in
 * `rawPath` (`/prod/v1/tasks`); the `$default` stage does not.
 */
export function requestPath(event: APIGatewayProxyEventV2): string {
  const path = event.rawPath || event.requestContext?.http?.path || '/';
  const stage = event.requestContext?.stage;
  if (stage && stage !== '$default' && path.startsWith(`/${stage}/`)) return path.slice(stage.length + 1);
  return path;
}

export function requestMethod(event: APIGatewayProxyEventV2): string {
  return (event.requestContext?.http?.method ?? 'GET').toUpperCase();
}

/** Turn zod issues into `{ path, message }` with dotted paths; each unknown key is named by its own path. */
export function fieldIssues(error: z.ZodError): FieldIssue[] {
  const issues = error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: [...issue.path, key].map(String).join('.'), message: 'unknown field' }))
      : [{ path: issue.path.map(String).join('.'), message: issue.message }],
  );
  // One check's message said twice for a field (a length and a pattern both failing) is said once.
  return issues.filter(
    (issue, i) => issues.findIndex((other) => other.path === issue.path && other.message === issue.message) === i,
  );
}

export function parseWith<T extends z.ZodType>(
  schema: T,
  value: unknown,
  part: 'path' | 'query' | 'body',
): z.output<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidRequest(part, fieldIssues(parsed.error));
  return parsed.data;
}

/**
 * The query string as a plain object. Parsed from `rawQueryString` because API Gateway joins
 * repeated keys with commas in `queryStringParameters`; a repeated key is refused instead.
 */
export function queryObject(event: APIGatewayProxyEventV2): Record<string, string> {
  const params = new URLSearchParams(event.rawQueryString ?? '');
  const query: Record<string, string> = Object.create(null);
  const repeated: FieldIssue[] = [];
  for (const [key, value] of params) {
    if (key in query) repeated.push({ path: key, message: 'given more than once' });
    query[key] = value;
  }
  if (repeated.length > 0) throw invalidRequest('query', repeated);
  return { ...query };
}

/**
 * JSON media types: `application/json` and `application/<anything>+json`. JSON is UTF-8
 * (RFC 8259 section 8.1), so a `charset` parameter other than UTF-8 is refused (415) rather
 * than read as UTF-8.
 */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const [type, ...parameters] = contentType.split(';');
  const mediaType = type!.trim().toLowerCase();
  if (mediaType !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(mediaType)) return false;
  for (const parameter of parameters) {
    const [name, value = ''] = parameter.split('=');
    if (name!.trim().toLowerCase() !== 'charset') continue;
    const charset = value
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (charset !== 'utf-8' && charset !== 'utf8') return false;
  }
  return true;
}

/**
 * The first key that appears twice in one object of valid JSON text, or undefined. JSON.parse
 * keeps the last silently (`tenantId` given twice would act for the second); refusing is the
 * only reading that cannot surprise. Iterative, so any nesting depth is safe.
 */
export function duplicateKey(text: string): string | undefined {
  const objects: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (char === 0x22 /* " */) {
      let end = i + 1;
      let escaped = false;
      for (; end < text.length; end++) {
        const c = text.charCodeAt(end);
        if (c === 0x5c /* \ */) {
          escaped = true;
          end++;
        } else if (c === 0x22) break;
      }
      if (expectKey) {
        const token = text.slice(i, end + 1);
        const key = escaped ? (JSON.parse(token) as string) : token.slice(1, -1);
        const keys = objects.at(-1)!;
        if (keys.has(key)) return key;
        keys.add(key);
        expectKey = false;
      }
      i = end;
    } else if (char === 0x7b /* { */) {
      objects.push(new Set());
      expectKey = true;
    } else if (char === 0x5b /* [ */) {
      objects.push(null);
    } else if (char === 0x7d /* } */ || char === 0x5d /* ] */) {
      objects.pop();
    } else if (char === 0x2c /* , */) {
      expectKey = objects.at(-1) instanceof Set;
    }
  }
  return undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body as parsed JSON, or `undefined` when there is none. Order of checks: size (413),
 * media type (415), encoding and syntax (400); the schema comes after, in the router.
 */
export function jsonBody(event: APIGatewayProxyEventV2, limitBytes = MAX_BODY_BYTES): unknown {
  if (event.body === undefined || event.body === null || event.body === '') return undefined;
  const bytes = event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8');
  if (bytes.byteLength > limitBytes) throw bodyTooLarge(limitBytes);
  const contentType = header(event, 'content-type');
  if (!isJsonContentType(contentType)) throw unsupportedMediaType(contentType);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalidJson('The body is not valid UTF-8');
  }
  if (text.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw invalidJson(`The body is not valid JSON: ${(error as Error).message}`);
  }
  const duplicate = duplicateKey(text);
  if (duplicate !== undefined) {
    throw new ValidationError(
      'duplicate_key',
      `The body gives the key ${JSON.stringify(duplicate)} twice in one object`,
      {
        key: duplicate,
      },
    );
  }
  return parsed;
}
