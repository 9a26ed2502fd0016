/**
 * Capacity slices (runtime/core/capacity-slices.ts): the allowances of N sharded schedulers,
 * with what each still holds, never exceed a pool, under any interleaving of reads, writes
 * (refused, lost), dispatches, task ends and time; and they follow demand.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CapacitySlices,
  claimedOf,
  fillByWeight,
  nextSlices,
  releasedSlices,
  type SliceDecision,
  type SliceOptions,
  SliceSupersededError,
  splitByWeight,
} from '../../runtime/core/capacity-slices.ts';
import type { ResourceVector } from '../../runtime/core/policy/types.ts';

const RESOURCES = ['slots', 'milliVcpu', 'memoryMiB'] as const;
const CAPACITY: ResourceVector = { slots: 10, milliVcpu: 8000, memoryMiB: 16_384 };
const OPTIONS: SliceOptions = { shards: 3, staleAfterMs: 30_000, heldAtMostMs: 120_000 };
/** A shard stops using an allowance it could not renew this long after it wrote it (capacity-slice.ts). */
const ALLOWANCE_LIFETIME_MS = OPTIONS.staleAfterMs / 2;
const TASKS: readonly ResourceVector[] = [
  { slots: 1, milliVcpu: 0, memoryMiB: 0 },
  { slots: 0, milliVcpu: 500, memoryMiB: 1024 },
  { slots: 0, milliVcpu: 2000, memoryMiB: 4096 },
  { slots: 0, milliVcpu: 6000, memoryMiB: 2048 },
];
/** What a shard could use beyond what it holds: no cap, nothing, a little, more than the pool. */
const WANTS: readonly (ResourceVector | undefined)[] = [
  undefined,
  { slots: 0, milliVcpu: 0, memoryMiB: 0 },
  { slots: 1, milliVcpu: 1000, memoryMiB: 2048 },
  { slots: 30, milliVcpu: 30_000, memoryMiB: 60_000 },
];
const zero = (): ResourceVector => ({ slots: 0, milliVcpu: 0, memoryMiB: 0 });
const plus = (a: ResourceVector, b: ResourceVector, sign = 1): ResourceVector => ({
  slots: a.slots + sign * b.slots,
  milliVcpu: a.milliVcpu + sign * b.milliVcpu,
  memoryMiB: a.memoryMiB + sign * b.memoryMiB,
});
const within = (a: ResourceVector, b: ResourceVector) => RESOURCES.every((r) => a[r] <= b[r]);
const min = (a: ResourceVector, b: ResourceVector): ResourceVector => ({
  slots: Math.min(a.slots, b.slots),
  milliVcpu: Math.min(a.milliVcpu, b.milliVcpu),
  memoryMiB: Math.min(a.memoryMiB, b.memoryMiB),
});

/** One shard's scheduler as capacity-slice.ts runs it: it never grows without a write that succeeded. */
interface Shard {
  /** Its tasks, each with when it was dispatched: it holds its pool at most OPTIONS.heldAtMostMs. */
  tasks: ResourceVector[];
  startedAtMs: number[];
  allowance: ResourceVector;
  writtenAtMs: number | undefined;
  pending: { readonly expected: number; readonly decision: SliceDecision } | undefined;
  stopped: boolean;
}

class World {
  nowMs = 1_000_000;
  stored: CapacitySlices | undefined;
  readonly shards: Shard[];

  /** The options of a deployment with exactly these shards. */
  get options(): SliceOptions {
    return { ...OPTIONS, shards: this.shards.length };
  }

  constructor(count: number) {
    this.shards = Array.from({ length: count }, () => ({
      tasks: [],
      startedAtMs: [],
      allowance: zero(),
      writtenAtMs: undefined,
      pending: undefined,
      stopped: false,
    }));
  }

  used(shard: Shard): ResourceVector {
    return shard.tasks.reduce((sum, task) => plus(sum, task), zero());
  }

  /** What the shard may dispatch within now (nothing once its last write is too old). */
  usable(shard: Shard): ResourceVector {
    const fresh = shard.writtenAtMs !== undefined && this.nowMs - shard.writtenAtMs <= ALLOWANCE_LIFETIME_MS;
    return fresh && !shard.stopped ? shard.allowance : zero();
  }

  dispatch(index: number, task: ResourceVector): void {
    const shard = this.shards[index] as Shard;
    if (!within(plus(this.used(shard), task), this.usable(shard))) return;
    shard.tasks.push(task);
    shard.startedAtMs.push(this.nowMs);
  }

  end(index: number, pick: number): void {
    const shard = this.shards[index] as Shard;
    if (shard.tasks.length === 0) return;
    shard.tasks.splice(pick % shard.tasks.length, 1);
    shard.startedAtMs.splice(pick % shard.startedAtMs.length, 1);
  }

  /** Time passes; a task ends at the latest when its hold is over (its timeout and leases). */
  tick(ms: number): void {
    this.nowMs += ms;
    for (const shard of this.shards) {
      const keep = shard.startedAtMs.map((at) => this.nowMs - at < OPTIONS.heldAtMostMs);
      shard.tasks = shard.tasks.filter((_, i) => keep[i]);
      shard.startedAtMs = shard.startedAtMs.filter((_, i) => keep[i]);
    }
  }

  /** Read, compute and shrink at once (one synchronous step in the scheduler); the write comes later. */
  /** `more`: what it could use beyond what it holds (its ready tasks); undefined: no cap. */
  read(index: number, weight: { lambda: number; fargate: number }, need: ResourceVector, more?: ResourceVector): void {
    const shard = this.shards[index] as Shard;
    if (shard.pending || shard.stopped) return;
    const held = this.used(shard);
    const report = { shard: index, held, weight, need, ...(more ? { wants: plus(held, more) } : {}) };
    const decision = nextSlices(this.stored, report, CAPACITY, this.nowMs, this.options);
    shard.allowance = min(shard.allowance, decision.allowance);
    shard.pending = { expected: this.stored?.version ?? 0, decision };
  }

  /** `outcome`: ok; refused (another write came first, or a fault); lost (applied, the answer lost). */
  write(index: number, outcome: 'ok' | 'lost' | 'fail'): void {
    const shard = this.shards[index] as Shard;
    const pending = shard.pending;
    if (!pending) return;
    shard.pending = undefined;
    if ((this.stored?.version ?? 0) !== pending.expected || outcome === 'fail') return;
    this.stored = pending.decision.next;
    if (outcome === 'lost') return;
    shard.allowance = pending.decision.allowance;
    shard.writtenAtMs = pending.decision.next.entries[String(index)]?.reportedAtMs;
  }

  stop(index: number): void {
    const shard = this.shards[index] as Shard;
    shard.stopped = true;
    shard.pending = undefined;
    this.stored = releasedSlices(this.stored, index, this.used(shard), this.nowMs, this.options);
  }

  /** The truth: what all shards' tasks hold. */
  totalUsed(): ResourceVector {
    return this.shards.reduce((sum, shard) => plus(sum, this.used(shard)), zero());
  }
}

const shardIndex = fc.nat(2);
const step = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('dispatch' as const),
      shard: shardIndex,
      task: fc.nat(3),
      count: fc.integer({ min: 1, max: 10 }),
    }),
    weight: 6,
  },
  { arbitrary: fc.record({ kind: fc.constant('end' as const), shard: shardIndex, pick: fc.nat() }), weight: 3 },
  {
    arbitrary: fc.record({
      kind: fc.constant('read' as const),
      shard: shardIndex,
      lambda: fc.nat(4),
      fargate: fc.nat(4),
      need: fc.nat(3),
      more: fc.nat(WANTS.length - 1),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('write' as const),
      shard: shardIndex,
      outcome: fc.constantFrom('ok' as const, 'ok' as const, 'lost' as const, 'fail' as const),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('tick' as const),
      // Report intervals; past a write's lifetime; past staleness; past every hold.
      ms: fc.oneof(fc.nat(3000), fc.integer({ min: 10_000, max: 40_000 }), fc.nat(200_000)),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant('stop' as const), shard: shardIndex }), weight: 1 },
);

/** Fill every shard to its allowance with tasks of one size, as a backlogged scheduler does. */
function fill(world: World, index: number, task: ResourceVector): void {
  for (let i = 0; i < 200; i++) {
    const before = world.shards[index]?.tasks.length;
    world.dispatch(index, task);
    if (world.shards[index]?.tasks.length === before) return;
  }
}

/** Rounds of: each shard ends one task, reports (read, write), fills; returns the allowances. */
function converge(
  world: World,
  weights: readonly { lambda: number; fargate: number }[],
  task: ResourceVector,
  rounds = 40,
): ResourceVector[] {
  for (let round = 0; round < rounds; round++) {
    world.shards.forEach((_, index) => {
      world.end(index, round);
      world.read(index, weights[index] as { lambda: number; fargate: number }, zero());
      world.write(index, 'ok');
      fill(world, index, task);
      world.nowMs += 500;
    });
    expect(within(world.totalUsed(), CAPACITY)).toBe(true);
  }
  return world.shards.map((shard) => shard.allowance);
}

describe('capacity slices', () => {
  it('never lets the shards hold more than the pool, in any interleaving', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 150, size: 'max' }), (steps) => {
        const world = new World(3);
        for (const s of steps) {
          switch (s.kind) {
            case 'dispatch':
              for (let i = 0; i < s.count; i++) world.dispatch(s.shard, TASKS[s.task] as ResourceVector);
              break;
            case 'end':
              world.end(s.shard, s.pick);
              break;
            case 'read':
              world.read(
                s.shard,
                { lambda: s.lambda, fargate: s.fargate },
                TASKS[s.need] as ResourceVector,
                WANTS[s.more],
              );
              break;
            case 'write':
              world.write(s.shard, s.outcome);
              break;
            case 'tick':
              world.tick(s.ms);
              break;
            case 'stop':
              world.stop(s.shard);
              break;
          }
          expect(within(world.totalUsed(), CAPACITY)).toBe(true);
          expect(within(claimedOf(world.stored, world.nowMs, OPTIONS), CAPACITY)).toBe(true);
          for (const shard of world.shards) {
            for (const r of RESOURCES) expect(shard.allowance[r]).toBeGreaterThanOrEqual(0);
          }
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('gives a shard alone with demand the whole pool', () => {
    const world = new World(3);
    const weights = [
      { lambda: 2, fargate: 2 },
      { lambda: 0, fargate: 0 },
      { lambda: 0, fargate: 0 },
    ];
    const [alone] = converge(world, weights, TASKS[0] as ResourceVector);
    expect(alone).toEqual(CAPACITY);
    expect(world.used(world.shards[0] as Shard).slots).toBe(CAPACITY.slots);
  });

  it('splits the pool in halves between two equally backlogged shards, even after one held it all', () => {
    const world = new World(2);
    const task = TASKS[1] as ResourceVector;
    converge(
      world,
      [
        { lambda: 1, fargate: 1 },
        { lambda: 0, fargate: 0 },
      ],
      task,
    );
    expect(world.used(world.shards[0] as Shard).milliVcpu).toBe(CAPACITY.milliVcpu);
    const [a, b] = converge(
      world,
      [
        { lambda: 1, fargate: 1 },
        { lambda: 1, fargate: 1 },
      ],
      task,
    );
    expect(a).toEqual({ slots: 5, milliVcpu: 4000, memoryMiB: 8192 });
    expect(b).toEqual({ slots: 5, milliVcpu: 4000, memoryMiB: 8192 });
    expect(world.used(world.shards[1] as Shard).milliVcpu).toBe(4000);
  });

  const weighted = (lambda: number, fargate: number) => ({ lambda, fargate });
  it.each([
    {
      name: 'splits 3:1 by weight',
      weights: [weighted(3, 3), weighted(1, 1)],
      task: TASKS[1] as ResourceVector,
      expected: [
        { slots: 8, milliVcpu: 6000, memoryMiB: 12_288 },
        { slots: 2, milliVcpu: 2000, memoryMiB: 4096 },
      ],
    },
    {
      name: 'shares each pool by the weight of the work in that pool only',
      weights: [weighted(1, 0), weighted(0, 1)],
      task: TASKS[0] as ResourceVector,
      expected: [
        { slots: 10, milliVcpu: 0, memoryMiB: 0 },
        { slots: 0, milliVcpu: 8000, memoryMiB: 16_384 },
      ],
    },
  ])('$name', ({ weights, task, expected }) => {
    expect(converge(new World(2), weights, task)).toEqual(expected);
  });

  it('grants a head task bigger than the fair share, and then gives the pool back', () => {
    const world = new World(2);
    const both = { lambda: 0, fargate: 1 };
    const small = TASKS[1] as ResourceVector;
    converge(world, [both, both], small);
    // Shard 0's head needs 6 vCPU, more than its half: the other shrinks to what is left.
    const big = TASKS[3] as ResourceVector;
    for (let round = 0; round < 40 && !world.shards[0]?.tasks.includes(big); round++) {
      world.end(0, 0);
      world.end(1, 0);
      world.read(0, both, big);
      world.write(0, 'ok');
      world.dispatch(0, big);
      world.read(1, both, small);
      world.write(1, 'ok');
      fill(world, 1, small);
      world.nowMs += 500;
      expect(within(world.totalUsed(), CAPACITY)).toBe(true);
    }
    expect(world.shards[0]?.tasks).toContain(big);
    expect(world.shards[1]?.allowance.milliVcpu).toBe(2000);
    // Its need met, the halves come back.
    const [a, b] = converge(world, [both, both], small);
    expect(a?.milliVcpu).toBe(4000);
    expect(b?.milliVcpu).toBe(4000);
  });

  it('lets the others take what a silent shard claimed only once its tasks can have ended', () => {
    const world = new World(2);
    const both = { lambda: 1, fargate: 1 };
    converge(world, [both, both], TASKS[0] as ResourceVector);
    const report = () => {
      world.read(0, both, zero());
      world.write(0, 'ok');
      return world.shards[0]?.allowance;
    };
    // Shard 1 stops reporting (its lease lost): its weight is gone, its claim stays (5 slots).
    world.nowMs += OPTIONS.staleAfterMs + 1;
    expect(report()?.slots).toBe(5);
    world.nowMs += OPTIONS.heldAtMostMs;
    expect(report()).toEqual(CAPACITY);
  });

  it('keeps only what a cleanly stopped shard still holds claimed', () => {
    const world = new World(2);
    const both = { lambda: 1, fargate: 1 };
    converge(world, [both, both], TASKS[0] as ResourceVector);
    world.end(1, 0);
    world.end(1, 0);
    world.stop(1);
    world.read(0, both, zero());
    world.write(0, 'ok');
    expect(world.shards[0]?.allowance.slots).toBe(7);
  });

  it('keeps a cleanly stopped shard only its equal part of the headroom: the idle one left gets the rest of what its tasks do not hold', () => {
    const world = new World(2);
    const idle = { lambda: 0, fargate: 0 };
    for (let round = 0; round < 2; round++) {
      for (const shard of [0, 1]) {
        world.read(shard, idle, zero(), zero());
        world.write(shard, 'ok');
      }
    }
    // Idle both: 5 slots of headroom each; shard 1 starts one task and stops.
    expect(world.shards[1]?.allowance.slots).toBe(5);
    world.dispatch(1, TASKS[0] as ResourceVector);
    world.stop(1);
    world.read(0, idle, zero(), zero());
    world.write(0, 'ok');
    // What shard 1's task does not hold is free: shard 0 gets its equal half of it as headroom,
    // the other half is kept for shard 1 to start again at once.
    expect(world.shards[0]?.allowance.slots).toBe(Math.floor((CAPACITY.slots - 1) / 2) + ((CAPACITY.slots - 1) % 2));
  });

  it('leaves what a shard does not want to the busy one (its share capped at held + ready tasks)', () => {
    const world = new World(2);
    const both = { lambda: 1, fargate: 1 };
    // Shard 0 runs one task and has nothing waiting; shard 1 has far more than the pool waiting.
    world.dispatch(0, TASKS[0] as ResourceVector);
    for (let round = 0; round < 10; round++) {
      world.read(0, both, zero(), zero());
      world.write(0, 'ok');
      if (round === 0) world.dispatch(0, TASKS[0] as ResourceVector);
      world.read(1, both, zero(), WANTS[3]);
      world.write(1, 'ok');
      fill(world, 1, TASKS[0] as ResourceVector);
      world.nowMs += 1000;
    }
    expect(world.shards[0]?.allowance.slots).toBe(1);
    expect(world.shards[1]?.allowance.slots).toBe(9);
    expect(world.used(world.shards[1] as Shard).slots).toBe(9);
  });

  it('gives what nobody wants as headroom, half by weight and half equally', () => {
    const world = new World(2);
    world.read(0, { lambda: 3, fargate: 0 }, zero(), WANTS[2]);
    world.write(0, 'ok');
    world.read(1, { lambda: 1, fargate: 0 }, zero(), WANTS[2]);
    world.write(1, 'ok');
    world.read(0, { lambda: 3, fargate: 0 }, zero(), WANTS[2]);
    world.write(0, 'ok');
    world.read(1, { lambda: 1, fargate: 0 }, zero(), WANTS[2]);
    world.write(1, 'ok');
    // Each wants 1 slot: 8 left over, split by weight + the mean weight (3+2 : 1+2): 5 and 3.
    expect(world.shards[0]?.allowance.slots).toBe(6);
    expect(world.shards[1]?.allowance.slots).toBe(4);
  });

  it('leaves a shard idle at its report headroom to start the next arrival at once', () => {
    // Shard 1's tenants' work came and went: weight 0 and wanting nothing at its report, while
    // shard 0 has work. Split by weight alone, shard 1 would get nothing until its next report.
    const world = new World(2);
    world.read(0, { lambda: 3, fargate: 0 }, zero(), WANTS[2]);
    world.write(0, 'ok');
    world.read(1, { lambda: 0, fargate: 0 }, zero(), zero());
    world.write(1, 'ok');
    world.read(0, { lambda: 3, fargate: 0 }, zero(), WANTS[2]);
    world.write(0, 'ok');
    world.read(1, { lambda: 0, fargate: 0 }, zero(), zero());
    world.write(1, 'ok');
    // 10 slots, shard 0 wants 1: 9 of headroom split 3+1.5 : 0+1.5, i.e. 6.75 and 2.25.
    expect(world.shards[1]?.allowance.slots).toBeGreaterThanOrEqual(2);
    expect((world.shards[0]?.allowance.slots ?? 0) + (world.shards[1]?.allowance.slots ?? 0)).toBeLessThanOrEqual(10);
  });

  it('refuses a report or a release from an older lease holder of the shard', () => {
    const report = { shard: 0, held: zero(), weight: { lambda: 1, fargate: 1 }, need: zero() };
    const state = nextSlices(undefined, { ...report, token: 5 }, CAPACITY, 1_000, OPTIONS).next;
    expect(() => nextSlices(state, { ...report, token: 4 }, CAPACITY, 2_000, OPTIONS)).toThrow(SliceSupersededError);
    expect(() => releasedSlices(state, 0, zero(), 2_000, OPTIONS, 4)).toThrow(SliceSupersededError);
    expect(nextSlices(state, { ...report, token: 6 }, CAPACITY, 2_000, OPTIONS).next.entries['0']?.token).toBe(6);
    // Another shard's token is not compared.
    expect(nextSlices(state, { ...report, shard: 1, token: 1 }, CAPACITY, 2_000, OPTIONS).next.version).toBe(2);
  });

  it('splits integers by largest remainder, nothing left over', () => {
    expect(splitByWeight(10, [1, 1, 1])).toEqual([4, 3, 3]);
    expect(splitByWeight(10, [3, 1])).toEqual([8, 2]);
    expect(splitByWeight(7, [0, 2, 0])).toEqual([0, 7, 0]);
    expect(splitByWeight(7, [0, 0])).toEqual([0, 0]);
    expect(fillByWeight(10, [1, 1], [3, Number.POSITIVE_INFINITY])).toEqual([3, 7]);
    expect(fillByWeight(10, [1, 1], [3, 4])).toEqual([3, 4]);
    expect(fillByWeight(10, [3, 1], [9, 9])).toEqual([8, 2]);
    expect(fillByWeight(10, [1, 1, 2], [1, 100, 100])).toEqual([1, 3, 6]);
    fc.assert(
      fc.property(
        fc.nat(1000),
        fc.array(fc.record({ weight: fc.nat(5), cap: fc.nat(400) }), { minLength: 1, maxLength: 6 }),
        (total, members) => {
          const parts = fillByWeight(
            total,
            members.map((m) => m.weight),
            members.map((m) => m.cap),
          );
          const room = members.reduce((a, m) => a + (m.weight > 0 ? m.cap : 0), 0);
          expect(parts.reduce((a, p) => a + p, 0)).toBe(Math.min(total, room));
          parts.forEach((part, i) => {
            expect(part).toBeLessThanOrEqual(members[i]?.cap as number);
            if (members[i]?.weight === 0) expect(part).toBe(0);
          });
        },
      ),
    );
    fc.assert(
      fc.property(fc.nat(100_000), fc.array(fc.nat(50), { minLength: 1, maxLength: 8 }), (total, weights) => {
        const parts = splitByWeight(total, weights);
        const sum = parts.reduce((a, p) => a + p, 0);
        expect(sum).toBe(weights.some((w) => w > 0) ? total : 0);
        parts.forEach((part, i) => {
          expect(Number.isInteger(part)).toBe(true);
          if ((weights[i] as number) === 0) expect(part).toBe(0);
        });
      }),
    );
  });
});
