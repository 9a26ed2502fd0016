/**
 * What a JSON value must satisfy to be stored in a task item: DynamoDB limits nesting depth and
 * number range (and the SDK refuses numbers beyond MAX_SAFE_INTEGER), and an item is at most
 * 400 KB. Payloads are checked at submit (a 400) and results before they are written (a
 * non-retryable failure), so neither can turn into a write that fails forever.
 */

/** A task's payload, serialized: leaves room under DynamoDB's 400 KB item limit for the result. */
export const MAX_PAYLOAD_BYTES = 200 * 1024;

/** A handler's result, serialized (payload + result + the rest stay under 400 KB). */
export const MAX_RESULT_BYTES = 150 * 1024;

/** Nesting of objects/arrays: DynamoDB stores at most 32 levels in one item. */
export const MAX_VALUE_DEPTH = 24;

/** Smallest non-zero magnitude DynamoDB stores. */
export const MIN_NUMBER_MAGNITUDE = 1e-130;

/** Why a JSON value cannot be stored, or undefined when it can. */
export function storableProblem(value: unknown, maxBytes: number): string | undefined {
  const serialized = JSON.stringify(value ?? null) ?? 'null';
  if (Buffer.byteLength(serialized, 'utf8') > maxBytes) {
    return `must be at most ${maxBytes} bytes when serialized`;
  }
  // Iterative walk: a hostile value may nest far deeper than the call stack allows.
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
  return undefined;
}
