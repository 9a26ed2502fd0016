/**
 * CapacitySlice (runtime/scheduler/capacity-slice.ts): sharded schedulers' policies start tasks
 * only within the allowances they wrote; an allowance never grows without a successful write and
 * lapses when it cannot be renewed.
 */
import { describe, expect, it } from 'vitest';
import type { SlicesWrite } from '../../runtime/adapters/control-store.ts';
import { type CapacitySlices, nextSlices } from '../../runtime/core/capacity-slices.ts';
import type { SchedulingPolicy } from '../../runtime/core/policy/policy.ts';
import { CapacitySlice } from '../../runtime/scheduler/capacity-slice.ts';
import { candidate, drain, makePolicy } from './policy/helpers.ts';

const CAPACITY = { slots: 10, milliVcpu: 16_000, memoryMiB: 32_768 };
const OPTIONS = { shards: 2, staleAfterMs: 30_000, heldAtMostMs: 60_000 };
const NONE = { slots: 0, milliVcpu: 0, memoryMiB: 0 };

/** The control store's two calls, in memory, with the item's conditional semantics and faults on demand. */
class FakeControl {
  stored: CapacitySlices | undefined;
  failNext = 0;
  /** Runs before the next put is checked (another shard writing first). */
  beforePut: (() => void) | undefined;
  puts = 0;

  gets = 0;

  async getCapacitySlices(): Promise<CapacitySlices | undefined> {
    this.gets++;
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('ProvisionedThroughputExceededException');
    }
    return this.stored && structuredClone(this.stored);
  }

  async putCapacitySlices(state: CapacitySlices, expectedVersion: number): Promise<SlicesWrite> {
    this.puts++;
    const before = this.beforePut;
    this.beforePut = undefined;
    before?.();
    if ((this.stored?.version ?? 0) !== expectedVersion)
      return { written: false, current: structuredClone(this.stored) };
    this.stored = structuredClone(state);
    return { written: true };
  }
}

function shardWithBacklog(
  control: FakeControl,
  shard: number,
  tasks: number,
): { policy: SchedulingPolicy; slice: CapacitySlice } {
  const policy = makePolicy({ pools: { slots: CAPACITY.slots } });
  for (let i = 0; i < tasks; i++) policy.add(candidate({ taskId: `s${shard}-${i}`, tenantId: `t${shard}` }));
  const slice = new CapacitySlice({
    control,
    policy,
    shard,
    shards: 2,
    capacity: CAPACITY,
    heldAtMostMs: OPTIONS.heldAtMostMs,
  });
  return { policy, slice };
}

describe('Class: CapacitySlice', () => {
  it('starts nothing before its first write, then shares the pool between two backlogged shards', async () => {
    const control = new FakeControl();
    const a = shardWithBacklog(control, 0, 20);
    const b = shardWithBacklog(control, 1, 20);
    expect(drain(a.policy, 1)).toHaveLength(0);

    await a.slice.sync(1_000);
    expect(a.slice.allowance.slots).toBe(10);
    const startedA = drain(a.policy, 1_000);
    await b.slice.sync(1_100);
    expect(b.slice.allowance.slots).toBe(0);
    // a shrinks to its half at its next report; b grows as a's tasks end and both report.
    await a.slice.sync(3_000);
    expect(a.slice.allowance.slots).toBe(5);
    for (const task of startedA.slice(0, 5)) a.policy.release(task.taskId);
    await a.slice.sync(5_000);
    await b.slice.sync(5_000);
    expect(drain(b.policy, 5_000)).toHaveLength(5);
    expect(drain(a.policy, 5_000)).toHaveLength(0);
    expect(control.stored?.entries['1']?.allowed.slots).toBe(5);
  });

  it('computes again from the record a refusal returns, within the same report', async () => {
    const control = new FakeControl();
    const a = shardWithBacklog(control, 0, 20);
    const b = shardWithBacklog(control, 1, 20);
    await a.slice.sync(1_000);
    // Between a's read and its write, shard 1 writes: a's write is refused, and a computes again
    // from the record the refusal returned (no second read).
    control.beforePut = () => {
      const report = {
        shard: 1,
        held: b.policy.sliceReport(1_400).held,
        weight: { lambda: 1, fargate: 0 },
        need: NONE,
      };
      control.stored = nextSlices(control.stored, report, CAPACITY, 1_400, OPTIONS).next;
    };
    const reads = control.gets;
    const putsBefore = control.puts;
    expect(await a.slice.update(1_500)).toBe(true);
    expect(control.puts - putsBefore).toBe(2);
    expect(control.gets - reads).toBe(1);
    expect(control.stored?.version).toBe(3);
    expect(control.stored?.entries['1']?.reportedAtMs).toBe(1_400);
    expect(a.slice.allowance.slots).toBe(5);
  });

  it('never grows without a successful write, and drops an allowance it cannot renew', async () => {
    const control = new FakeControl();
    const a = shardWithBacklog(control, 0, 20);
    const b = shardWithBacklog(control, 1, 20);
    await a.slice.sync(1_000);
    await b.slice.sync(1_000);
    await a.slice.sync(3_000);
    expect(a.slice.allowance.slots).toBe(5);
    // b leaves (its work done, reported): a's next report would grow it to the pool, but fails.
    for (const task of drain(b.policy, 3_000)) b.policy.release(task.taskId);
    for (let i = 0; i < 20; i++) b.policy.remove(`s1-${i}`);
    await b.slice.sync(3_000);
    control.failNext = 1;
    await a.slice.sync(5_000);
    expect(a.slice.allowance.slots).toBe(5);
    await a.slice.sync(7_000);
    expect(a.slice.allowance.slots).toBe(10);
    // Unable to write for longer than the allowance's lifetime (15 s): nothing more starts.
    control.failNext = 100;
    await a.slice.sync(20_000);
    expect(a.slice.allowance.slots).toBe(10);
    await a.slice.sync(22_001);
    expect(a.slice.allowance.slots).toBe(0);
    expect(drain(a.policy, 22_001)).toHaveLength(0);
  });

  it('applies a shrink before the write, and keeps it when the write fails', async () => {
    const control = new FakeControl();
    const a = shardWithBacklog(control, 0, 20);
    const b = shardWithBacklog(control, 1, 20);
    await a.slice.sync(1_000);
    await b.slice.sync(1_000);
    control.beforePut = () => {
      expect(a.slice.allowance.slots).toBe(5);
    };
    const put = control.putCapacitySlices.bind(control);
    control.putCapacitySlices = async (state, expected) => {
      const result = await put(state, expected);
      throw new Error(`connection reset after ${result.written}`);
    };
    await a.slice.sync(3_000);
    expect(a.slice.allowance.slots).toBe(5);
  });

  it('stops at once when a newer holder of its shard has written (it lost the lease), and writes nothing more', async () => {
    const control = new FakeControl();
    const old = shardWithBacklog(control, 0, 20);
    old.slice.holdLease(4);
    await old.slice.sync(1_000);
    expect(old.slice.allowance.slots).toBe(10);
    const successor = shardWithBacklog(control, 0, 0);
    successor.slice.holdLease(5);
    await successor.slice.sync(2_000);
    const stored = structuredClone(control.stored);

    await old.slice.sync(3_000);
    await old.slice.release(3_500);

    expect(old.slice.allowance.slots).toBe(0);
    expect(drain(old.policy, 3_500)).toHaveLength(0);
    expect(control.stored).toEqual(stored);
  });

  it('releases its allowance on a clean stop: only what it still holds stays claimed', async () => {
    const control = new FakeControl();
    const a = shardWithBacklog(control, 0, 20);
    await a.slice.sync(1_000);
    drain(a.policy, 1_000)
      .slice(0, 7)
      .forEach((task) => {
        a.policy.release(task.taskId);
      });
    await a.slice.release(2_000);
    expect(a.slice.allowance.slots).toBe(0);
    expect(control.stored?.entries['0']).toMatchObject({ allowed: { slots: 0 }, held: { slots: 3 } });
    await a.slice.sync(10_000);
    expect(control.stored?.entries['0']?.reportedAtMs).toBe(2_000);
  });
});
