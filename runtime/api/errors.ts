/**
 * The HTTP edge of the typed errors: the status each core error answers with (the core knows
 * codes, not HTTP), and the refusals only the HTTP layer can make (routing, media type, size,
 * authorization). ApiError extends SchedulerError so one mapping turns every refusal into
 * `{ error: { code, message, details } }`.
 */
import {
  ConcurrentUpdateError,
  IdempotencyConflictError,
  InvalidTransitionError,
  SchedulerError,
  SchedulerFencedError,
  StaleAttemptError,
  TaskNotFoundError,
  ValidationError,
} from '../core/errors.ts';

export class ApiError extends SchedulerError {
  readonly status: number;
  /** Extra response headers (e.g. `allow` on a 405). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: string,
    status: number,
    message: string,
    options: { details?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(code, message, options.details === undefined ? undefined : { details: options.details });
    this.name = 'ApiError';
    this.status = status;
    this.headers = options.headers ?? {};
  }
}

/**
 * The HTTP status a typed error answers with: 4xx for a refusal that changed nothing (bad input,
 * unknown task, a state or write conflict), 500 for anything else (a configuration error
 * included: the caller did nothing wrong).
 */
export function httpStatusOf(error: SchedulerError): number {
  if (error instanceof ApiError) return error.status;
  if (error instanceof ValidationError) return 400;
  if (error instanceof TaskNotFoundError) return 404;
  if (
    error instanceof IdempotencyConflictError ||
    error instanceof InvalidTransitionError ||
    error instanceof StaleAttemptError ||
    error instanceof ConcurrentUpdateError ||
    error instanceof SchedulerFencedError
  ) {
    return 409;
  }
  return 500;
}

export const routeNotFound = (method: string, path: string): ApiError =>
  new ApiError('route_not_found', 404, `No route for ${method} ${path}`);

export const methodNotAllowed = (method: string, path: string, allowed: readonly string[]): ApiError =>
  new ApiError('method_not_allowed', 405, `${method} is not allowed on ${path}; use ${allowed.join(' or ')}`, {
    details: { allowed },
    headers: { allow: allowed.join(', ') },
  });

export const bodyTooLarge = (limitBytes: number): ApiError =>
  new ApiError('body_too_large', 413, `The request body exceeds ${limitBytes} bytes`, {
    details: { limitBytes },
  });

export const unsupportedMediaType = (contentType: string | undefined): ApiError =>
  new ApiError(
    'unsupported_media_type',
    415,
    `The body must be JSON (Content-Type: application/json)${contentType ? `, not ${contentType}` : ''}`,
  );

export const invalidJson = (message: string): ValidationError => new ValidationError('invalid_json', message);

export const forbidden = (tenantId: string): ApiError =>
  new ApiError('forbidden', 403, `The caller may not act for tenant ${tenantId}`, { details: { tenantId } });

/** Where an invalid value was found. */
export type RequestPart = 'path' | 'query' | 'body';

export interface FieldIssue {
  /** Dotted field path within the part, e.g. `resources.vcpu`; empty for the part as a whole. */
  readonly path: string;
  readonly message: string;
}

export const invalidRequest = (part: RequestPart, issues: readonly FieldIssue[]): ValidationError =>
  new ValidationError(
    'invalid_request',
    `Invalid ${part === 'path' ? 'path parameter' : part === 'query' ? 'query string' : 'request body'}: ` +
      issues.map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message)).join('; '),
    { in: part, issues },
  );
