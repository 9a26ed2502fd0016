/**
 * What a JSON value must satisfy to be stored in a task item, and how it is stored.
 *
 * Payloads and results are stored as JSON text (`payloadJson`, `resultJson`), not as DynamoDB
 * maps: the SDK's marshaller cannot carry keys named after Object.prototype members
 * (`constructor` makes it throw, `__proto__` is lost), and text round-trips every JSON value
 * exactly. Limits still apply: a payload leaves room under the 400 KB item for the result, and
 * nesting is bounded so no reader or writer overflows its stack. Payloads are checked at submit
 * (a 400) and results before they are written (a non-retryable failure), so neither can turn
 * into a write that fails forever.
 */

/** A task's payload, serialized: leaves room under DynamoDB's 400 KB item limit for the result. */
export const MAX_PAYLOAD_BYTES = 200 * 1024;

/** A handler's result, serialized (payload + result + the rest stay under 400 KB). */
export const MAX_RESULT_BYTES = 150 * 1024;

/**
 * A failed attempt's error as recorded on the task, in UTF-8 bytes: a handler may throw an error
 * of any size (a 1 MB message, a 1 MB `name`), and the end write must still fit the item. Longer
 * text is cut (`clipText`) and ends with ` …[truncated: N bytes]`, N the original's length.
 */
export const MAX_ERROR_MESSAGE_BYTES = 4096;
export const MAX_ERROR_NAME_BYTES = 256;

/**
 * `text` in at most `maxBytes` bytes of UTF-8: whole when it fits, else its first characters and
 * ` …[truncated: N bytes]`. Cut between characters (never inside a surrogate pair or a UTF-8
 * sequence), and well-formed: a lone surrogate becomes U+FFFD, as any UTF-8 encoder makes it.
 */
export function clipText(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return text.toWellFormed();
  const marker = ` …[truncated: ${bytes} bytes]`;
  const budget = Math.max(0, maxBytes - Buffer.byteLength(marker, 'utf8'));
  // Each UTF-16 unit is at least one byte of UTF-8, so the first budget + 1 units hold the cut.
  const head = Buffer.from(text.slice(0, budget + 1).toWellFormed(), 'utf8');
  let end = Math.min(budget, head.byteLength);
  // Back up to the first byte of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && end < head.byteLength && (head[end]! & 0xc0) === 0x80) end--;
  return head.subarray(0, end).toString('utf8') + marker;
}

/**
 * Nesting of objects/arrays. Kept at the level DynamoDB maps allow (32) minus headroom, so the
 * limit clients see does not depend on how the value is stored.
 */
export const MAX_VALUE_DEPTH = 24;

/** Smallest non-zero magnitude DynamoDB stores. */
export const MIN_NUMBER_MAGNITUDE = 1e-130;

/** Why a JSON value cannot be stored, or undefined when it can. */
export function storableProblem(value: unknown, maxBytes: number): string | undefined {
  // Iterative walk BEFORE serializing: a hostile value may nest far deeper than the call stack
  // allows, and JSON.stringify recurses. A cycle exceeds the depth limit too.
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (typeof current === 'number') {
      const magnitude = Math.abs(current);
      if (magnitude > Number.MAX_SAFE_INTEGER || (magnitude !== 0 && magnitude < MIN_NUMBER_MAGNITUDE)) {
        return `numbers must be 0 or between ${MIN_NUMBER_MAGNITUDE} and ${Number.MAX_SAFE_INTEGER} in magnitude`;
      }
    } else if (current !== null && typeof current === 'object') {
      if (depth >= MAX_VALUE_DEPTH) return `must nest at most ${MAX_VALUE_DEPTH} levels deep`;
      for (const child of Object.values(current)) stack.push({ value: child, depth: depth + 1 });
    }
  }
  let serialized: string;
  try {
    serialized = JSON.stringify(value ?? null) ?? 'null';
  } catch (error) {
    // A BigInt, or a toJSON or getter that throws: no retry can serialize it either.
    return `cannot be serialized as JSON (${error instanceof Error ? `${error.name}: ${error.message}` : String(error)})`;
  }
  if (Buffer.byteLength(serialized, 'utf8') > maxBytes) {
    return `must be at most ${maxBytes} bytes when serialized`;
  }
  return undefined;
}

/** Task fields holding arbitrary JSON, stored as text under `<field>Json`. */
const JSON_FIELDS = ['payload', 'result'] as const;

/** The record with each JSON field replaced by its text (`payload` → `payloadJson`). */
export function encodeJsonFields(record: object): Record<string, unknown> {
  const encoded: Record<string, unknown> = { ...record };
  for (const field of JSON_FIELDS) {
    if (!Object.hasOwn(encoded, field)) continue;
    const value = encoded[field];
    delete encoded[field];
    if (value !== undefined) encoded[`${field}Json`] = JSON.stringify(value);
  }
  return encoded;
}

/** The inverse of encodeJsonFields; items written before the change (maps) read as they are. */
export function decodeJsonFields(item: Record<string, unknown>): Record<string, unknown> {
  const decoded: Record<string, unknown> = { ...item };
  for (const field of JSON_FIELDS) {
    const text = decoded[`${field}Json`];
    delete decoded[`${field}Json`];
    if (typeof text === 'string') decoded[field] = JSON.parse(text);
  }
  return decoded;
}
