import { describe, expect, it } from 'vitest';
import { warmUpTarget } from '../../bench/local-memory.ts';

describe('local-memory: the row its flatness ratios divide by', () => {
  it('is 20,000 tasks in a long run', () => {
    expect(warmUpTarget(100_000, 10_000)).toBe(20_000);
    expect(warmUpTarget(50_000, 10_000)).toBe(20_000);
  });

  it('is the second row of a shorter run', () => {
    expect(warmUpTarget(3_000, 500)).toBe(1_000);
  });

  it('is never the last row: the quick run (20,000 tasks) compares its last row with its first', () => {
    expect(warmUpTarget(20_000, 10_000)).toBe(10_000);
  });
});
