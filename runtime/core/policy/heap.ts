/**
 * A binary min-heap whose items know their own position, so an item can be re-keyed or removed
 * in O(log n) without searching. The position lives on the item (through `slot`), which keeps the
 * hot path free of Map look-ups; an item may sit in several heaps as long as each uses its own slot.
 */
export interface HeapSlot<T> {
  get(item: T): number;
  set(item: T, index: number): void;
}

export const NOT_IN_HEAP = -1;

export class IndexedHeap<T> {
  readonly #items: T[] = [];
  readonly #before: (a: T, b: T) => boolean;
  readonly #slot: HeapSlot<T>;

  /** `before(a, b)` is true when `a` must come out first. */
  constructor(before: (a: T, b: T) => boolean, slot: HeapSlot<T>) {
    this.#before = before;
    this.#slot = slot;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  has(item: T): boolean {
    const index = this.#slot.get(item);
    return index !== NOT_IN_HEAP && this.#items[index] === item;
  }

  push(item: T): void {
    this.#items.push(item);
    this.#slot.set(item, this.#items.length - 1);
    this.#siftUp(this.#items.length - 1);
  }

  pop(): T | undefined {
    const top = this.#items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  /** Insert, or restore the heap order after the item's key changed. */
  upsert(item: T): void {
    if (this.has(item)) this.update(item);
    else this.push(item);
  }

  /** Restore the heap order after the item's key changed (either direction). */
  update(item: T): void {
    const index = this.#slot.get(item);
    if (!this.#siftUp(index)) this.#siftDown(index);
  }

  remove(item: T): boolean {
    if (!this.has(item)) return false;
    const index = this.#slot.get(item);
    const last = this.#items.pop() as T;
    this.#slot.set(item, NOT_IN_HEAP);
    if (index < this.#items.length) {
      this.#items[index] = last;
      this.#slot.set(last, index);
      if (!this.#siftUp(index)) this.#siftDown(index);
    }
    return true;
  }

  /** Restore the heap order of every item at once, after the order itself changed. O(n). */
  rebuild(): void {
    for (let index = Math.floor(this.#items.length / 2) - 1; index >= 0; index--) this.#siftDown(index);
  }

  /**
   * Items in heap order, best first, without modifying the heap: a best-first walk of the tree
   * with a small frontier heap, so visiting the k best costs O(k log k).
   */
  *ordered(): Generator<T> {
    const items = this.#items;
    if (items.length === 0) return;
    const frontier: number[] = [0];
    const better = (i: number, j: number) => this.#before(items[i] as T, items[j] as T);
    while (frontier.length > 0) {
      const index = popIndex(frontier, better);
      yield items[index] as T;
      const left = 2 * index + 1;
      if (left < items.length) pushIndex(frontier, left, better);
      if (left + 1 < items.length) pushIndex(frontier, left + 1, better);
    }
  }

  /** Every item, in no particular order. */
  values(): readonly T[] {
    return this.#items;
  }

  #siftUp(start: number): boolean {
    const items = this.#items;
    const item = items[start] as T;
    let index = start;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = items[parentIndex] as T;
      if (!this.#before(item, parent)) break;
      items[index] = parent;
      this.#slot.set(parent, index);
      index = parentIndex;
    }
    items[index] = item;
    this.#slot.set(item, index);
    return index !== start;
  }

  #siftDown(start: number): void {
    const items = this.#items;
    const item = items[start] as T;
    const length = items.length;
    let index = start;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      let child = left;
      if (right < length && this.#before(items[right] as T, items[left] as T)) child = right;
      const childItem = items[child] as T;
      if (!this.#before(childItem, item)) break;
      items[index] = childItem;
      this.#slot.set(childItem, index);
      index = child;
    }
    items[index] = item;
    this.#slot.set(item, index);
  }
}

function pushIndex(heap: number[], value: number, better: (i: number, j: number) => boolean): void {
  heap.push(value);
  let index = heap.length - 1;
  while (index > 0) {
    const parent = (index - 1) >> 1;
    if (!better(heap[index] as number, heap[parent] as number)) break;
    [heap[index], heap[parent]] = [heap[parent] as number, heap[index] as number];
    index = parent;
  }
}

function popIndex(heap: number[], better: (i: number, j: number) => boolean): number {
  const top = heap[0] as number;
  const last = heap.pop() as number;
  if (heap.length > 0) {
    heap[0] = last;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= heap.length) break;
      let child = left;
      if (left + 1 < heap.length && better(heap[left + 1] as number, heap[left] as number)) child = left + 1;
      if (!better(heap[child] as number, heap[index] as number)) break;
      [heap[index], heap[child]] = [heap[child] as number, heap[index] as number];
      index = child;
    }
  }
  return top;
}
