import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MicroBatcher } from '../../runtime/worker/micro-batcher.ts';

describe('Class: MicroBatcher', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const make = (flush: (items: number[]) => Promise<void> = async () => {}) => {
    const batches: number[][] = [];
    const errors: [unknown, readonly number[]][] = [];
    const batcher = new MicroBatcher<number>({
      delayMs: 20,
      flush: async (items) => {
        batches.push(items);
        await flush(items);
      },
      onError: (error, items) => errors.push([error, items]),
    });
    return { batcher, batches, errors };
  };

  it('flushes as soon as ten wait, and a partial batch after the delay', async () => {
    const { batcher, batches } = make();
    for (let i = 0; i < 13; i++) batcher.add(i);
    expect(batches).toEqual([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]);

    await vi.advanceTimersByTimeAsync(19);
    expect(batches).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toEqual([
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      [10, 11, 12],
    ]);
  });

  it('the delay runs from the first item of a batch, not the last', async () => {
    const { batcher, batches } = make();
    batcher.add(1);
    await vi.advanceTimersByTimeAsync(15);
    batcher.add(2);
    await vi.advanceTimersByTimeAsync(5);
    expect(batches).toEqual([[1, 2]]);
  });

  it('drain flushes what waits and waits for flushes in progress', async () => {
    let release: () => void = () => {};
    const { batcher, batches } = make((items) =>
      items[0] === 0 ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve(),
    );
    for (let i = 0; i < 12; i++) batcher.add(i);
    let drained = false;
    const draining = batcher.drain().then(() => (drained = true));
    expect(batches.map((b) => b.length)).toEqual([10, 2]);
    await vi.advanceTimersByTimeAsync(0);
    expect(drained).toBe(false);
    release();
    await draining;
    expect(drained).toBe(true);
  });

  it('reports a failed flush with its items and carries on', async () => {
    const { batcher, batches, errors } = make(async (items) => {
      if (items.includes(1)) throw new Error('throttled');
    });
    batcher.add(1);
    await batcher.drain();
    batcher.add(2);
    await batcher.drain();
    expect(batches).toEqual([[1], [2]]);
    expect(errors.map(([error, items]) => [(error as Error).message, items])).toEqual([['throttled', [1]]]);
  });
});
