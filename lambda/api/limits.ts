/**
 * Size and range limits of the HTTP API, in one place so the schemas, the local HTTP server
 * and the OpenAPI document agree.
 */

/** Whole request body (the API Gateway payload limit is far higher; this keeps items small). */
export const MAX_BODY_BYTES = 256 * 1024;

export { MAX_PAYLOAD_BYTES, MAX_VALUE_DEPTH as MAX_PAYLOAD_DEPTH, MIN_NUMBER_MAGNITUDE } from '../core/storable.ts';

export const MAX_ID_LENGTH = 128;

export const LIST_LIMIT = { min: 1, max: 100, default: 20 } as const;

/** Longest cursor accepted (a base64url DynamoDB key of three short strings is far below). */
export const MAX_CURSOR_LENGTH = 4096;
