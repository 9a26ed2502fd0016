/**
 * Errors the client throws. An API refusal becomes a SchedulerApiError carrying the API's
 * `{ error: { code, message, details } }`; the common statuses have their own subclass so a
 * caller can `instanceof` them, and `code` is typed with the codes the API is known to send.
 */

/** Codes the API sends today; any other string may appear from a newer server. */
export type KnownApiErrorCode =
  | 'invalid_request'
  | 'invalid_json'
  | 'duplicate_key'
  | 'invalid_cursor'
  | 'mixed_tenants'
  | 'missing_tenant'
  | 'batch_not_found'
  | 'item_too_large'
  | 'all_items_refused'
  | 'invalid_payload'
  | 'unknown_task_type'
  | 'invalid_runtime'
  | 'exceeds_pool'
  | 'timeout_over_cap'
  | 'invalid_schedule'
  | 'unknown_dependency'
  | 'invalid_dependency'
  | 'forbidden'
  | 'task_not_found'
  | 'route_not_found'
  | 'method_not_allowed'
  | 'invalid_state'
  | 'idempotency_key_reused'
  | 'concurrent_update'
  | 'body_too_large'
  | 'unsupported_media_type'
  | 'internal_error';

// `string & {}` keeps the known codes as editor suggestions while allowing any string.
export type ApiErrorCode = KnownApiErrorCode | (string & {});

/** Base of everything the client throws on purpose. */
export class SchedulerClientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SchedulerClientError';
  }
}

/** The API answered with an error status. */
export class SchedulerApiError extends SchedulerClientError {
  readonly status: number;
  readonly code: ApiErrorCode;
  readonly details: unknown;
  /** `METHOD path` of the request, for logs. */
  readonly request: string;

  constructor(input: { status: number; code: ApiErrorCode; message: string; details?: unknown; request: string }) {
    super(input.message);
    this.name = 'SchedulerApiError';
    this.status = input.status;
    this.code = input.code;
    this.details = input.details;
    this.request = input.request;
  }
}

/** 400: the request failed validation; nothing was written. `details.issues` names each field. */
export class InvalidRequestError extends SchedulerApiError {
  override name = 'InvalidRequestError';
}

/** 403: the caller may not act for the tenant. */
export class ForbiddenError extends SchedulerApiError {
  override name = 'ForbiddenError';
}

/** 404: no such task or batch (or route). */
export class NotFoundError extends SchedulerApiError {
  override name = 'NotFoundError';
}

/** 409: the task's state does not allow this, or the idempotency key was used for another request. */
export class ConflictError extends SchedulerApiError {
  override name = 'ConflictError';
}

/** The request never got an HTTP answer (connection refused, DNS, TLS, aborted by timeout). */
export class SchedulerConnectionError extends SchedulerClientError {
  readonly endpoint: string;
  constructor(endpoint: string, cause: unknown) {
    super(`Cannot reach the scheduler at ${endpoint}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
    this.name = 'SchedulerConnectionError';
    this.endpoint = endpoint;
  }
}

/**
 * `waitFor` gave up before the task reached a terminal state; `lastSeen` is the task as last read,
 * `cause` the failure of the last poll when it got no answer (or a transient one).
 */
export class WaitTimeoutError extends SchedulerClientError {
  readonly taskId: string;
  readonly lastSeen: unknown;
  constructor(taskId: string, timeoutMs: number, lastSeen: unknown, cause?: unknown) {
    super(
      `Task ${taskId} did not finish within ${timeoutMs} ms${cause instanceof Error ? ` (last poll: ${cause.message})` : ''}`,
      cause === undefined ? undefined : { cause },
    );
    this.name = 'WaitTimeoutError';
    this.taskId = taskId;
    this.lastSeen = lastSeen;
  }
}

/** The error for an error response: a subclass for the common statuses. */
export function apiErrorFor(status: number, body: unknown, request: string): SchedulerApiError {
  const shaped = body as { error?: { code?: unknown; message?: unknown; details?: unknown }; message?: unknown };
  const error = shaped?.error;
  // API Gateway's own refusals (bad signature, throttling) are `{ "message": "..." }`.
  const message =
    typeof error?.message === 'string'
      ? error.message
      : typeof shaped?.message === 'string'
        ? shaped.message
        : `HTTP ${status} from ${request}`;
  const input = {
    status,
    code: typeof error?.code === 'string' ? error.code : `http_${status}`,
    message,
    details: error?.details,
    request,
  };
  switch (status) {
    case 400:
      return new InvalidRequestError(input);
    case 403:
      return new ForbiddenError(input);
    case 404:
      return new NotFoundError(input);
    case 409:
      return new ConflictError(input);
    default:
      return new SchedulerApiError(input);
  }
}
