/**
 * Coalesces single items into batch calls: items are handed to `flush` as soon as `size` are
 * waiting, or `delayMs` after the first of a partial batch. A busy Fargate worker thereby makes
 * one SQS batch call per ten settled attempts instead of ten single calls.
 */
export interface MicroBatcherOptions<T> {
  /** SQS batch calls take at most ten entries. */
  readonly size?: number;
  /** How long an item may wait for company. */
  readonly delayMs: number;
  readonly flush: (items: T[]) => Promise<void>;
  /** A failed flush is reported, not thrown: callers have already moved on. */
  readonly onError: (error: unknown, items: readonly T[]) => void;
}

export class MicroBatcher<T> {
  readonly #options: MicroBatcherOptions<T>;
  #pending: T[] = [];
  #timer: NodeJS.Timeout | undefined;
  readonly #flushing = new Set<Promise<void>>();

  constructor(options: MicroBatcherOptions<T>) {
    this.#options = options;
  }

  add(item: T): void {
    this.#pending.push(item);
    if (this.#pending.length >= (this.#options.size ?? 10)) this.flushNow();
    else this.#timer ??= setTimeout(() => this.flushNow(), this.#options.delayMs);
  }

  flushNow(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const items = this.#pending;
    this.#pending = [];
    const flushing = this.#options
      .flush(items)
      .catch((error) => this.#options.onError(error, items))
      .finally(() => this.#flushing.delete(flushing));
    this.#flushing.add(flushing);
  }

  /** Flush what waits and wait for every flush in progress. */
  async drain(): Promise<void> {
    this.flushNow();
    await Promise.allSettled([...this.#flushing]);
  }
}
