/** The pure batch rules (runtime/core/batch.ts): shards, sizes, the then payload, sweep delays. */
import { describe, expect, it } from 'vitest';
import {
  BATCH_SHARD_SIZE,
  countSetOf,
  impliedItemKey,
  nextSweepDelayMs,
  OPEN_BATCH_SHARDS,
  openShardOf,
  shardCount,
  shardOfIndex,
  shardSize,
  thenPayload,
} from '../../runtime/core/batch.ts';

describe('core/batch', () => {
  it('covers every index of a batch with exactly one shard, of the right size', () => {
    for (const total of [1, 99, 100, 101, 999, 1000]) {
      const shards = shardCount(total);
      const sizes = Array.from({ length: shards }, (_, shard) => shardSize(total, shard));
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(total);
      expect(sizes.every((size) => size >= 1 && size <= BATCH_SHARD_SIZE)).toBe(true);
      expect(shardOfIndex(total - 1)).toBe(shards - 1);
    }
    expect(shardSize(250, 3)).toBe(0);
  });

  it('counts end states only', () => {
    expect(
      ['QUEUED', 'DISPATCHED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'].map((s) => countSetOf(s as never)),
    ).toEqual([undefined, undefined, undefined, 'succeeded', 'failed', 'cancelled']);
  });

  it('adds the batch summary to the payload, wrapping a payload that is not an object', () => {
    const summary = { batchId: 'bat_x', succeeded: 2, failed: 1, cancelled: 0 };
    expect(thenPayload({ report: 'r' }, summary)).toEqual({ report: 'r', batch: summary });
    expect(thenPayload(undefined, summary)).toEqual({ batch: summary });
    expect(thenPayload([1, 2], summary)).toEqual({ value: [1, 2], batch: summary });
    expect(thenPayload({ batch: 'mine' }, summary).batch).toEqual(summary);
  });

  it('spreads open batches over the open keys and backs the sweeper off to 30 minutes', () => {
    const shards = new Set(Array.from({ length: 200 }, (_, i) => openShardOf(`bat_${i}`)));
    expect(shards).toEqual(new Set(Array.from({ length: OPEN_BATCH_SHARDS }, (_, i) => i)));
    expect([0, 1, 2, 5, 20].map(nextSweepDelayMs)).toEqual([60_000, 120_000, 240_000, 1_800_000, 1_800_000]);
    expect(impliedItemKey('bat_x', 7)).toBe('bat_x#7');
  });
});
