/**
 * A sorted list in chunks (the layout of Python's `sortedcontainers`): inserts and deletes cost a
 * binary search and a splice of one chunk, and a range is found by binary search. The simulated
 * DynamoDB keeps each index partition in one, so a Query reads O(log n + page) entries of a
 * partition of a million rather than sorting the whole table. A batch of entries large against
 * the list (the flood's backlog reaching the indexes) is merged in one pass instead.
 */
const CHUNK = 512;
/** A batch this large against the list (1 in this many) is merged in one pass, not one by one. */
const MERGE_RATIO = 16;
const MERGE_AT_LEAST = 64;

/** A place in the list: chunk and offset (offset === chunk length only past the end). */
export interface Cursor {
  chunk: number;
  offset: number;
}

export class SortedList<T> {
  readonly #chunks: T[][] = [];
  readonly #compare: (a: T, b: T) => number;
  #size = 0;

  /** `compare` must be a total order with no two distinct entries equal. */
  constructor(compare: (a: T, b: T) => number) {
    this.#compare = compare;
  }

  get size(): number {
    return this.#size;
  }

  insert(value: T): void {
    const chunks = this.#chunks;
    this.#size++;
    if (chunks.length === 0) {
      chunks.push([value]);
      return;
    }
    let c = this.#chunkFor((entry) => this.#compare(entry, value) >= 0);
    if (c === chunks.length) c--;
    const chunk = chunks[c]!;
    chunk.splice(
      lowerIndex(chunk, (entry) => this.#compare(entry, value) >= 0),
      0,
      value,
    );
    if (chunk.length > 2 * CHUNK) chunks.splice(c + 1, 0, chunk.splice(CHUNK));
  }

  /** Remove the entry equal to `value`; false when there is none. */
  delete(value: T): boolean {
    const at = this.firstWhere((entry) => this.#compare(entry, value) >= 0);
    const chunk = this.#chunks[at.chunk];
    if (!chunk || at.offset >= chunk.length || this.#compare(chunk[at.offset]!, value) !== 0) return false;
    chunk.splice(at.offset, 1);
    if (chunk.length === 0) this.#chunks.splice(at.chunk, 1);
    this.#size--;
    return true;
  }

  /**
   * Insert every value (none equal to another or to an entry; `values` is sorted in place). A
   * large batch is merged with the entries in one pass: O(n + k log k) rather than k searches
   * and splices.
   */
  insertAll(values: T[]): void {
    if (!this.#isLargeBatch(values.length)) {
      for (const value of values) this.insert(value);
      return;
    }
    values.sort(this.#compare);
    const entries = this.#chunks.flat();
    const merged: T[] = new Array(entries.length + values.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < entries.length && j < values.length) {
      merged[k++] = this.#compare(entries[i]!, values[j]!) < 0 ? entries[i++]! : values[j++]!;
    }
    while (i < entries.length) merged[k++] = entries[i++]!;
    while (j < values.length) merged[k++] = values[j++]!;
    this.#rebuild(merged);
  }

  /**
   * Remove every value, each an entry of this list (the same object); a large batch in one pass.
   */
  deleteAll(values: readonly T[]): void {
    if (!this.#isLargeBatch(values.length)) {
      for (const value of values) this.delete(value);
      return;
    }
    const gone = new Set(values);
    this.#rebuild(this.#chunks.flat().filter((entry) => !gone.has(entry)));
  }

  #isLargeBatch(count: number): boolean {
    return count >= MERGE_AT_LEAST && count * MERGE_RATIO >= this.#size;
  }

  /** Replace the entries with these, in order, in full chunks. */
  #rebuild(entries: T[]): void {
    this.#chunks.length = 0;
    for (let at = 0; at < entries.length; at += CHUNK) this.#chunks.push(entries.slice(at, at + CHUNK));
    this.#size = entries.length;
  }

  /**
   * The first entry for which `atOrAfter` holds (it must be false, then true, along the list);
   * past the end when none does.
   */
  firstWhere(atOrAfter: (entry: T) => boolean): Cursor {
    const c = this.#chunkFor(atOrAfter);
    if (c === this.#chunks.length) return this.end();
    return { chunk: c, offset: lowerIndex(this.#chunks[c]!, atOrAfter) };
  }

  end(): Cursor {
    return { chunk: this.#chunks.length, offset: 0 };
  }

  /** The entry at a cursor, or undefined past either end. */
  at(cursor: Cursor): T | undefined {
    return this.#chunks[cursor.chunk]?.[cursor.offset];
  }

  /** The next cursor (forward) or the previous one (backward); a copy. */
  step(cursor: Cursor, forward: boolean): Cursor {
    const chunks = this.#chunks;
    if (forward) {
      const chunk = chunks[cursor.chunk];
      if (chunk && cursor.offset + 1 < chunk.length) return { chunk: cursor.chunk, offset: cursor.offset + 1 };
      return { chunk: cursor.chunk + 1, offset: 0 };
    }
    if (cursor.offset > 0) return { chunk: cursor.chunk, offset: cursor.offset - 1 };
    const previous = cursor.chunk - 1;
    return previous < 0 ? { chunk: -1, offset: 0 } : { chunk: previous, offset: chunks[previous]!.length - 1 };
  }

  /** Cursor order: negative when a is before b. */
  static order(a: Cursor, b: Cursor): number {
    return a.chunk - b.chunk || a.offset - b.offset;
  }

  /** The first chunk whose last entry satisfies `atOrAfter` (chunks.length if none). */
  #chunkFor(atOrAfter: (entry: T) => boolean): number {
    const chunks = this.#chunks;
    let lo = 0;
    let hi = chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const chunk = chunks[mid]!;
      if (atOrAfter(chunk[chunk.length - 1]!)) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

function lowerIndex<T>(values: readonly T[], atOrAfter: (entry: T) => boolean): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (atOrAfter(values[mid]!)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
