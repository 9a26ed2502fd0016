import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IndexedHeap, NOT_IN_HEAP } from '../../../runtime/core/policy/heap.ts';

interface Item {
  key: number;
  id: number;
  index: number;
}

const newHeap = () =>
  new IndexedHeap<Item>((a, b) => (a.key !== b.key ? a.key < b.key : a.id < b.id), {
    get: (item) => item.index,
    set: (item, index) => {
      item.index = index;
    },
  });

const sorted = (items: Item[]) => [...items].sort((a, b) => a.key - b.key || a.id - b.id).map((item) => item.id);

describe('Class: IndexedHeap', () => {
  describe('Method: pop / update / remove', () => {
    it('pops items in key order after arbitrary re-keys and removals', () => {
      fc.assert(
        fc.property(
          fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 60 }),
          fc.array(fc.tuple(fc.nat(), fc.integer({ min: -10, max: 60 }), fc.boolean()), { maxLength: 40 }),
          (keys, edits) => {
            // Prepare
            const heap = newHeap();
            const live = keys.map((key, id) => ({ key, id, index: NOT_IN_HEAP }));
            for (const item of live) heap.push(item);
            // Act
            for (const [pick, key, drop] of edits) {
              if (live.length === 0) break;
              const item = live[pick % live.length] as Item;
              if (drop) {
                expect(heap.remove(item)).toBe(true);
                live.splice(live.indexOf(item), 1);
              } else {
                item.key = key;
                heap.update(item);
              }
            }
            const popped: number[] = [];
            for (let item = heap.pop(); item; item = heap.pop()) popped.push(item.id);
            // Assess
            expect(popped).toEqual(sorted(live));
          },
        ),
      );
    });
  });

  describe('Method: ordered', () => {
    it('walks items best first without changing the heap', () => {
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 80 }), (keys) => {
          // Prepare
          const heap = newHeap();
          const items = keys.map((key, id) => ({ key, id, index: NOT_IN_HEAP }));
          for (const item of items) heap.push(item);
          // Act
          const walked = [...heap.ordered()].map((item) => item.id);
          // Assess
          expect(walked).toEqual(sorted(items));
          expect(heap.size).toBe(items.length);
        }),
      );
    });
  });
});
