/**
 * Size and range limits of the HTTP API, in one place so the schemas, the local HTTP server
 * and the OpenAPI document agree.
 */

/** Whole request body (the API Gateway payload limit is far higher; this keeps items small). */
export const MAX_BODY_BYTES = 256 * 1024;

/** A task's payload, serialized: leaves room under DynamoDB's 400 KB item limit for the result. */
export const MAX_PAYLOAD_BYTES = 200 * 1024;

/** Nesting of objects/arrays in a payload: DynamoDB stores at most 32 levels in one item. */
export const MAX_PAYLOAD_DEPTH = 24;

/** Smallest non-zero magnitude DynamoDB stores; larger than MAX_SAFE_INTEGER the SDK refuses. */
export const MIN_NUMBER_MAGNITUDE = 1e-130;

export const MAX_ID_LENGTH = 128;

export const LIST_LIMIT = { min: 1, max: 100, default: 20 } as const;

/** Longest cursor accepted (a base64url DynamoDB key of three short strings is far below). */
export const MAX_CURSOR_LENGTH = 4096;
