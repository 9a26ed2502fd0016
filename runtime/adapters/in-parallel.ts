/**
 * Bounded concurrency for an adapter's independent calls (the chunks of one batch operation, the
 * shards of one scatter-gather): AWS answers each in its own latency, so waiting on them one after
 * another adds the latencies up; all at once can open more connections than the SDK's pool holds.
 */
/** `fn` over `inputs`, at most `concurrency` at a time; results in input order. */
export async function inParallel<I, O>(
  inputs: readonly I[],
  concurrency: number,
  fn: (input: I, index: number) => Promise<O>,
): Promise<O[]> {
  const results = new Array<O>(inputs.length);
  let next = 0;
  const worker = async () => {
    while (next < inputs.length) {
      const index = next++;
      results[index] = await fn(inputs[index] as I, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, inputs.length) }, worker));
  return results;
}

/**
 * `items` cut into consecutive chunks of at most `maxItems` and at most `maxBytes` by `sizeOf`
 * (an item larger than `maxBytes` alone makes its own chunk): the calls a batch operation needs.
 */
export function sizedChunks<T>(
  items: readonly T[],
  sizeOf: (item: T) => number,
  maxItems: number,
  maxBytes: number,
): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (chunk.length > 0 && (chunk.length >= maxItems || bytes + size > maxBytes)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}
