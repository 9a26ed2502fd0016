/**
 * Size and range limits of the HTTP API, in one place so the schemas, the local HTTP server
 * and the OpenAPI document agree.
 */

/** Whole request body (the API Gateway payload limit is far higher; this keeps items small). */
export const MAX_BODY_BYTES = 256 * 1024;

export { MAX_PAYLOAD_BYTES, MAX_VALUE_DEPTH as MAX_PAYLOAD_DEPTH, MIN_NUMBER_MAGNITUDE } from '../core/storable.ts';

export const MAX_ID_LENGTH = 128;

/**
 * Most bytes of tasks in one response (GET /v1/tasks pages, /v1/status's recent tasks). Lambda
 * answers at most 6 MB (6,291,556 bytes), counted on the result object with the body escaped
 * inside it; 100 tasks of 200 KiB payloads and 150 KiB results would be ~35 MB. A page ends
 * early at this budget and its `nextCursor` continues after the last task it holds; one task
 * (at most ~700 KB escaped) always fits.
 */
export const LIST_RESPONSE_BUDGET_BYTES = 5 * 1024 * 1024;

export const LIST_LIMIT = { min: 1, max: 100, default: 20 } as const;

/** Longest cursor accepted (a base64url DynamoDB key of three short strings is far below). */
export const MAX_CURSOR_LENGTH = 4096;
