/**
 * The chunked sorted list behind every simulated index partition (sim/aws/sorted-list.ts): its
 * order, its range search and its cursors must match a plain sorted array through inserts and
 * deletes, across chunk splits and merges.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../runtime/core/random.ts';
import { type Cursor, SortedList } from '../../sim/aws/sorted-list.ts';

interface Entry {
  readonly sort: number;
  /** Breaks ties between equal sort values, as an index's table key does. */
  readonly id: string;
}
const compare = (a: Entry, b: Entry) => a.sort - b.sort || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Every entry from a cursor on, forward or backward. */
function read(list: SortedList<Entry>, from: Cursor, forward: boolean): Entry[] {
  const out: Entry[] = [];
  for (let at = from; list.at(at) !== undefined; at = list.step(at, forward)) out.push(list.at(at)!);
  return out;
}
const first = (list: SortedList<Entry>) => list.firstWhere(() => true);

describe('SortedList', () => {
  it('keeps random inserts and deletes in order, ties broken by id, across chunk splits', () => {
    // Prepare: many ties (sort values 0..49) and enough entries for several chunks.
    const random = seededRandom(7);
    const list = new SortedList(compare);
    const reference: Entry[] = [];

    // Act
    for (let i = 0; i < 5000; i++) {
      const entry = { sort: Math.floor(random() * 50), id: `t-${Math.floor(random() * 1e9)}-${i}` };
      list.insert(entry);
      reference.push(entry);
      if (i % 3 === 0) {
        const [gone] = reference.splice(Math.floor(random() * reference.length), 1);
        expect(list.delete(gone!)).toBe(true);
      }
    }
    reference.sort(compare);

    // Assess
    expect(list.size).toBe(reference.length);
    expect(read(list, first(list), true)).toEqual(reference);
    expect(read(list, list.step(list.end(), false), false)).toEqual([...reference].reverse());
  });

  it('inserts and deletes batches, large ones by merging, to the same order as one by one', () => {
    // Prepare: batches from 1 entry to several times the list's size, with ties on sort.
    const random = seededRandom(5);
    const batched = new SortedList(compare);
    const single = new SortedList(compare);
    const reference: Entry[] = [];
    let n = 0;
    const entry = () => ({ sort: Math.floor(random() * 40), id: `t-${Math.floor(random() * 1e9)}-${n++}` });

    // Act
    for (const size of [1, 3000, 10, 100, 500, 64, 5000, 2, 800]) {
      const added = Array.from({ length: size }, entry);
      batched.insertAll([...added]);
      for (const value of added) single.insert(value);
      reference.push(...added);
      // Then delete a batch of about a third of what is held, picked at random.
      const gone = reference.filter(() => random() < 0.33);
      batched.deleteAll(gone);
      for (const value of gone) single.delete(value);
      const goneSet = new Set(gone);
      reference.splice(0, reference.length, ...reference.filter((value) => !goneSet.has(value)));

      // Assess
      const expected = [...reference].sort(compare);
      expect(batched.size).toBe(expected.length);
      expect(read(batched, first(batched), true)).toEqual(expected);
      expect(read(single, first(single), true)).toEqual(expected);
      expect(read(batched, batched.step(batched.end(), false), false)).toEqual(expected.reverse());
    }
  });

  it('refuses to delete an entry it does not hold, even one equal in sort value', () => {
    const list = new SortedList(compare);
    list.insert({ sort: 1, id: 'a' });

    expect(list.delete({ sort: 1, id: 'b' })).toBe(false);
    expect(list.delete({ sort: 1, id: 'a' })).toBe(true);
    expect(list.delete({ sort: 1, id: 'a' })).toBe(false);
    expect(list.size).toBe(0);
    expect(list.at(first(list))).toBeUndefined();
  });

  it('finds a range by binary search: the first entry at or after a bound, past the end when none', () => {
    const list = new SortedList(compare);
    for (let i = 0; i < 3000; i++) list.insert({ sort: i * 2, id: 'x' });

    expect(list.at(list.firstWhere((entry) => entry.sort >= 1001))).toEqual({ sort: 1002, id: 'x' });
    expect(list.at(list.firstWhere((entry) => entry.sort >= 0))).toEqual({ sort: 0, id: 'x' });
    expect(
      SortedList.order(
        list.firstWhere((entry) => entry.sort >= 6000),
        list.end(),
      ),
    ).toBe(0);
    expect(
      list.at(
        list.step(
          list.firstWhere((entry) => entry.sort >= 1001),
          false,
        ),
      ),
    ).toEqual({ sort: 1000, id: 'x' });
  });

  it('resumes after the last entry read when entries are deleted and inserted between pages', () => {
    // Prepare: read pages of 100, resuming after the last entry read (as ExclusiveStartKey does),
    // while deleting every entry read and inserting new ones behind and ahead of the reader.
    const list = new SortedList(compare);
    for (let i = 0; i < 2000; i++) list.insert({ sort: i, id: 'a' });
    const seen: Entry[] = [];
    let last: Entry | undefined;
    let insertedAhead = 0;

    // Act
    for (;;) {
      const from = last ? list.firstWhere((entry) => compare(entry, last!) > 0) : first(list);
      const page = read(list, from, true).slice(0, 100);
      if (page.length === 0) break;
      seen.push(...page);
      last = page.at(-1)!;
      for (const entry of page) list.delete(entry);
      list.insert({ sort: last.sort - 0.5, id: 'behind' });
      if (last.sort < 1000) {
        list.insert({ sort: last.sort + 1500.5, id: 'ahead' });
        insertedAhead++;
      }
    }

    // Assess: every original entry once, in order, and each entry inserted ahead of the reader.
    const originals = seen.filter((entry) => entry.id === 'a');
    expect(originals.map((entry) => entry.sort)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    expect(insertedAhead).toBeGreaterThan(5);
    expect(seen.filter((entry) => entry.id === 'ahead')).toHaveLength(insertedAhead);
    expect(seen.filter((entry) => entry.id === 'behind')).toHaveLength(0);
    expect(seen.map((entry) => entry.sort)).toEqual([...seen.map((entry) => entry.sort)].sort((a, b) => a - b));
  });
});
