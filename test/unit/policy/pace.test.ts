/**
 * The wait bound on the pool's pace (bound.ts `paceBound`, pace.ts): the count it rests on, and
 * the claim itself over random traces and the named scenarios: a task given a bound on the pace
 * never starts after it while the pool freed what the bound assumed (its `assumedFreed`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { paceBound } from '../../../runtime/core/policy/bound.ts';
import { FreedSlots, PACE_BUCKET_MS, RecentRuns, UsedSlots } from '../../../runtime/core/policy/pace.ts';
import { simulate } from '../../../sim/engine.ts';
import { assumptionsHeld, boundStats } from '../../../sim/metrics.ts';
import { buildScenario } from '../../../sim/scenarios.ts';
import { type Trace, TraceBuilder } from '../../../sim/trace.ts';
import { candidate, makePolicy } from './helpers.ts';

const T0 = 1_700_000_000_000 - (1_700_000_000_000 % PACE_BUCKET_MS);

describe('Class: FreedSlots', () => {
  it('gives no pace before it has watched a whole minute', () => {
    // Prepare
    const freed = new FreedSlots();
    freed.observe(T0);
    for (let s = 0; s < 59; s++) freed.record(T0 + s * 1000);
    // Act / Assess
    expect(freed.perSecond(T0 + 59_000)).toBeNull();
    // Ten in each 10 s, nine in the last (59 slots)
    expect(freed.perSecond(T0 + 60_000)).toBe(0.9);
  });

  it('reports the fewest freed in any whole 10 s of the last minute, per second', () => {
    // Prepare: 30 slots in each 10 s but one, which has 5
    const freed = new FreedSlots();
    freed.observe(T0);
    for (let bucket = 0; bucket < 6; bucket++) {
      const count = bucket === 3 ? 5 : 30;
      for (let i = 0; i < count; i++) freed.record(T0 + bucket * 10_000 + i * 100);
    }
    // Act / Assess
    expect(freed.perSecond(T0 + 60_000)).toBe(0.5);
    // The slow 10 s leaves the window after a minute; the current, partial 10 s never counts.
    expect(freed.perSecond(T0 + 69_999)).toBe(0.5);
    for (let bucket = 6; bucket < 10; bucket++) {
      for (let i = 0; i < 30; i++) freed.record(T0 + bucket * 10_000 + i * 100);
    }
    expect(freed.perSecond(T0 + 90_000)).toBe(0.5);
    expect(freed.perSecond(T0 + 100_000)).toBe(3);
  });

  it('counts an idle stretch as nothing freed', () => {
    // Prepare
    const freed = new FreedSlots();
    freed.observe(T0);
    for (let i = 0; i < 600; i++) freed.record(T0 + i * 100);
    // Act / Assess: a quiet minute later, nothing was freed in the last minute
    expect(freed.perSecond(T0 + 60_000)).toBe(10);
    expect(freed.perSecond(T0 + 200_000)).toBe(0);
  });

  it("takes a predecessor's count over and adds its own", () => {
    // Prepare: the predecessor watched from T0 and saved at T0 + 55 s
    const before = new FreedSlots();
    before.observe(T0);
    for (let i = 0; i < 550; i++) before.record(T0 + i * 100);
    const saved = JSON.parse(JSON.stringify(before.state(T0 + 55_000)));
    // Act: a successor starting at T0 + 56 s sees the slots freed from then on
    const after = new FreedSlots();
    after.observe(T0 + 56_000);
    after.restore(saved);
    for (let i = 0; i < 40; i++) after.record(T0 + 56_000 + i * 100);
    // Assess: known at once; the hand-over's 10 s has the 50 before and the 40 after
    expect(after.perSecond(T0 + 60_000)).toBe(9);
    expect(after.state(T0 + 60_000).sinceMs).toBe(T0);
    // A count restored twice (a retried resume) is not added twice: the larger is kept
    after.restore(saved);
    expect(after.perSecond(T0 + 60_000)).toBe(9);
  });
});

describe('Class: UsedSlots', () => {
  it('gives the most slots in use in any 10 s of the last minute, a level holding until it changes', () => {
    // Prepare: 3 in use from 0 s, 7 for a moment at 25 s, 1 from 30 s; watched since 0
    const used = new UsedSlots();
    used.observe(T0);
    used.record(T0, 3);
    used.record(T0 + 25_000, 7);
    used.record(T0 + 25_500, 1);
    used.record(T0 + 30_000, 1);
    // Act / Assess: none before a minute; then the 7; a minute after the 7, the 1 held since
    expect(used.peak(T0 + 59_000)).toBeNull();
    expect(used.peak(T0 + 60_000)).toBe(7);
    expect(used.peak(T0 + 95_000)).toBe(1);
  });

  it('counts a level set before the window for the buckets in which nothing changed', () => {
    // Prepare: 5 in use from 0 s, nothing changing for two minutes
    const used = new UsedSlots();
    used.observe(T0);
    used.record(T0, 5);
    // Act / Assess
    expect(used.peak(T0 + 120_000)).toBe(5);
  });

  it("takes a predecessor's record over, fuller where the two differ", () => {
    // Prepare
    const before = new UsedSlots();
    before.observe(T0);
    before.record(T0 + 5_000, 6);
    before.record(T0 + 6_000, 2);
    const saved = JSON.parse(JSON.stringify(before.state(T0 + 61_000)));
    // Act: a successor that has seen 2 in use since it started
    const after = new UsedSlots();
    after.observe(T0 + 61_000);
    after.record(T0 + 61_000, 2);
    after.restore(saved);
    // Assess: the predecessor's 6 (at 5 s) counts until it leaves the window
    expect(after.peak(T0 + 62_000)).toBe(6);
    expect(after.peak(T0 + 75_000)).toBe(2);
  });
});

describe('Class: RecentRuns', () => {
  it("gives a tenant's longest run of the last minute once three ended in it", () => {
    // Prepare
    const runs = new RecentRuns();
    runs.record('a', T0 + 1_000, 800);
    runs.record('a', T0 + 2_000, 3_000);
    // Act / Assess
    expect(runs.longestMs('a', T0 + 3_000)).toBeNull();
    runs.record('a', T0 + 4_000, 1_200);
    expect(runs.longestMs('a', T0 + 5_000)).toBe(3_000);
    expect(runs.longestMs('b', T0 + 5_000)).toBeNull();
    // A minute on, those runs are forgotten
    runs.forget(T0 + 80_000);
    expect(runs.longestMs('a', T0 + 80_000)).toBeNull();
  });
});

describe('Class: SchedulingPolicy (the pace it publishes)', () => {
  it("publishes when a tenant's running tasks end if they run as its tasks did lately", () => {
    // Prepare: tenant a ran three tasks of up to 2 s; a fourth started at +10 s
    const engine = makePolicy({ pools: { slots: 4 } });
    for (const [i, run] of [1_000, 2_000, 1_500].entries()) {
      engine.add(candidate({ taskId: `r${i}`, tenantId: 'a', agingFromMs: T0 + i * 3_000, runAtMs: T0 + i * 3_000 }));
      engine.next(T0 + i * 3_000);
      engine.release(`r${i}`, T0 + i * 3_000 + run);
    }
    engine.add(candidate({ taskId: 'now', tenantId: 'a', agingFromMs: T0 + 10_000, runAtMs: T0 + 10_000 }));
    engine.next(T0 + 10_000);
    // Act
    const a = engine.snapshot(T0 + 10_500).tenants.find((tenant) => tenant.tenantId === 'a');
    const late = engine.snapshot(T0 + 12_500).tenants.find((tenant) => tenant.tenantId === 'a');
    // Assess: by 12 s (started at 10 s, 2 s at most), where its hold says much later
    expect(a?.longestRunMs).toBe(2_000);
    expect(a?.busyUntilLatelyMs).toBe(T0 + 12_000);
    expect(a?.busyUntilMs).toBeGreaterThan(T0 + 12_000);
    // Once it has run longer than any did lately, nothing is said of when it ends
    expect(late?.longestRunMs).toBe(2_000);
    expect(late?.busyUntilLatelyMs).toBeUndefined();
  });

  it('counts the Lambda slots it frees, and a scheduler starting afresh knows the pace at once from the saved memory', () => {
    // Prepare: 2 slots freed every second for 70 s
    const engine = makePolicy({ pools: { slots: 4 } });
    let n = 0;
    for (let ms = T0; ms < T0 + 70_000; ms += 500) {
      engine.add(candidate({ taskId: `t${++n}`, agingFromMs: ms, runAtMs: ms }));
      engine.next(ms);
      engine.release(`t${n}`, ms + 400);
    }
    const lambda = () => engine.snapshot(T0 + 70_000).pools.find((pool) => pool.runtime === 'lambda');
    // Act
    const saved = JSON.parse(JSON.stringify(engine.rotationState(T0 + 70_000)));
    const successor = makePolicy({ pools: { slots: 4 } });
    successor.restoreRotation(saved);
    // Assess
    expect(lambda()?.freedPerSecond).toBe(2);
    expect(successor.snapshot(T0 + 70_000).pools.find((pool) => pool.runtime === 'lambda')?.freedPerSecond).toBe(2);
    expect(makePolicy({}).snapshot(T0 + 70_000).pools[0]?.freedPerSecond).toBeNull();
    // ...and how full the pool was: one task at a time (released 400 ms after each dispatch)
    expect(lambda()?.peakUsed).toBe(1);
    expect(successor.snapshot(T0 + 70_000).pools.find((pool) => pool.runtime === 'lambda')?.peakUsed).toBe(1);
    // ...and the most weight of tenants with work (one tenant, t1, weight 1), which a fresh engine does not know
    expect(engine.snapshot(T0 + 70_000).busyWeightPeak).toBe(1);
    expect(successor.snapshot(T0 + 70_000).busyWeightPeak).toBe(1);
    expect(makePolicy({}).snapshot(T0 + 70_000).busyWeightPeak).toBeNull();
  });

  it('keeps the most summed weight of tenants with work in any 10 s of the last minute, a tenant counting while it has work', () => {
    // Prepare: tenant a (weight 1) has work from 0; b (weight 3) from 20 s to 30 s
    const engine = makePolicy({ pools: { slots: 4 }, tenants: { b: { weight: 3, maxConcurrency: 10 } } });
    engine.add(candidate({ taskId: 'a1', tenantId: 'a', agingFromMs: T0, runAtMs: T0 }));
    engine.next(T0);
    engine.add(candidate({ taskId: 'b1', tenantId: 'b', agingFromMs: T0 + 20_000, runAtMs: T0 + 20_000 }));
    engine.next(T0 + 20_000);
    engine.release('b1', T0 + 30_000);
    // Act / Assess: 4 while b had work, and a minute after that 1 again (a alone)
    expect(engine.busyWeight).toBe(1);
    expect(engine.snapshot(T0 + 60_000).busyWeightPeak).toBe(4);
    expect(engine.snapshot(T0 + 100_000).busyWeightPeak).toBe(1);
    expect(engine.snapshot(T0 + 100_000).busyWeight).toBe(1);
  });
});

describe('Method: SchedulingPolicy.unpick', () => {
  it('frees the capacity of a pick that never became a dispatch without counting a slot freed', () => {
    // Prepare: a minute of one slot freed a second; then, in the next 10 s, 30 picks let go
    const run = (letGo: (engine: ReturnType<typeof makePolicy>, taskId: string) => void) => {
      const engine = makePolicy({ pools: { slots: 1 } });
      let n = 0;
      for (let ms = T0; ms < T0 + 60_000; ms += 1000) {
        engine.add(candidate({ taskId: `t${++n}`, agingFromMs: ms, runAtMs: ms }));
        engine.next(ms);
        engine.release(`t${n}`, ms + 500);
      }
      for (let i = 0; i < 30; i++) {
        engine.add(candidate({ taskId: `u${i}`, agingFromMs: T0 + 60_000, runAtMs: T0 + 60_000 }));
        expect(engine.next(T0 + 60_000 + i)?.taskId).toBe(`u${i}`);
        letGo(engine, `u${i}`);
      }
      return engine.snapshot(T0 + 70_000).pools.find((pool) => pool.runtime === 'lambda');
    };
    // Act
    const unpicked = run((engine, taskId) => engine.unpick(taskId));
    const released = run((engine, taskId) => engine.release(taskId));
    // Assess: capacity free again either way; only released tasks freed slots in the last 10 s
    expect(unpicked?.used.slots).toBe(0);
    expect(unpicked?.freedPerSecond).toBe(0);
    expect(released?.freedPerSecond).toBe(1);
  });
});

describe('Function: paceBound', () => {
  it('counts k + 1 slots from the later of t₀ and its tenant freeing', () => {
    // Act
    const bound = paceBound({ nowMs: T0, ahead: 11, fromMs: T0 + 5_000, tenantFreeAtMs: T0, freedPerSecond: 4 });
    const busy = paceBound({ nowMs: T0, ahead: 11, fromMs: T0, tenantFreeAtMs: T0 + 20_000, freedPerSecond: 4 });
    // Assess
    expect(bound).toEqual({ seconds: 8, freed: { slots: 12, fromMs: T0 + 5_000, byMs: T0 + 8_000 } });
    expect(busy?.seconds).toBe(23);
    expect(paceBound({ nowMs: T0, ahead: 1, fromMs: T0, tenantFreeAtMs: T0, freedPerSecond: 0 })).toBeNull();
  });
});

describe('The bound on the pace, in the simulator (the API over snapshots)', () => {
  for (const scenario of ['crowd', 'noisy-neighbour']) {
    it(`${scenario}: never broken while the pool frees what it assumed`, () => {
      // Prepare
      const trace = buildScenario(scenario, { tasks: 4000, seed: 5 });
      // Act
      const run = simulate(trace, 'fair-share', undefined, { apiBounds: true });
      const stats = boundStats(trace, run);
      // Assess
      expect(stats.onPace).toBeGreaterThan(100);
      expect(stats.broken).toBe(0);
    });
  }

  it('can fail: the same answers a fifth as long are broken while the pace held', () => {
    // Prepare
    const trace = buildScenario('crowd', { tasks: 4000, seed: 5 });
    const run = simulate(trace, 'fair-share', undefined, { apiBounds: true });
    const boundMs = run.boundMs as Float64Array;
    // Act
    let broken = 0;
    for (let i = 0; i < trace.size; i++) {
      if ((run.assumedFreed?.slots[i] ?? 0) === 0 || !assumptionsHeld(run, i)) continue;
      if ((run.waitMs[i] as number) > (boundMs[i] as number) / 5) broken++;
    }
    // Assess
    expect(broken).toBeGreaterThan(0);
  });

  const randomTrace = fc
    .record({
      tenants: fc.integer({ min: 2, max: 12 }),
      slots: fc.integer({ min: 1, max: 6 }),
      // Weights and quotas vary, and a tenth of the tasks run on Fargate: a tenant's share (the
      // fair share's test) is its dominant one over both pools, divided by its weight.
      weights: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 12, maxLength: 12 }),
      quotas: fc.array(fc.constantFrom(1, 2, 100), { minLength: 12, maxLength: 12 }),
      tasks: fc.array(
        fc.record({
          tenant: fc.nat(11),
          tier: fc.nat(3),
          fargate: fc.nat(9).map((n) => n === 0),
          arriveMs: fc.nat(240_000),
          holdMs: fc.integer({ min: 50, max: 20_000 }),
        }),
        { minLength: 20, maxLength: 300 },
      ),
    })
    .map((r): Trace => {
      const builder = new TraceBuilder(r.tasks.length);
      for (const task of [...r.tasks].sort((a, b) => a.arriveMs - b.arriveMs)) {
        builder.push({
          tenant: task.tenant % r.tenants,
          tier: task.tier,
          fargate: task.fargate,
          vcpu: task.fargate ? 1 : 0.25,
          memoryMiB: task.fargate ? 1024 : 512,
          arriveMs: task.arriveMs,
          holdMs: task.holdMs,
        });
      }
      return builder.build({
        scenario: 'random',
        description: 'random',
        tenantIds: Array.from({ length: r.tenants }, (_, i) => `t${i}`),
        tenantSettings: Array.from({ length: r.tenants }, (_, i) => ({
          weight: r.weights[i] as number,
          maxConcurrency: r.quotas[i] as number,
        })),
        pools: { lambda: { concurrency: r.slots }, fargate: { vcpu: 4, memoryMiB: 4096 } },
        agingSeconds: 300,
      });
    });

  it('does not judge a bound whose count of tenants joining after the snapshot was exceeded (found by the random traces)', () => {
    // Prepare: tenant 0 queues 17 tasks at once on 2 slots; 4 tenants one task each 1-2 ms later,
    // after the snapshot of 0 ms that saw one tenant join in its minute
    const holds = [16431, 5615, 5606, ...Array(14).fill(50), 17135, 17966, 17253, 50];
    const tenants = [...Array(17).fill(0), 4, 2, 3, 1];
    const arrivals = [0, 0, ...Array(15).fill(1), 2, 2, 2, 2];
    const builder = new TraceBuilder(holds.length);
    holds.forEach((holdMs, i) => {
      builder.push({
        tenant: tenants[i],
        tier: 0,
        fargate: false,
        vcpu: 0.25,
        memoryMiB: 512,
        arriveMs: arrivals[i],
        holdMs,
      });
    });
    const trace = builder.build({
      scenario: 'random',
      description: 'random',
      tenantIds: ['t0', 't1', 't2', 't3', 't4'],
      tenantSettings: Array.from({ length: 5 }, () => ({ weight: 1, maxConcurrency: 100 })),
      pools: { lambda: { concurrency: 2 }, fargate: { vcpu: 4, memoryMiB: 4096 } },
      agingSeconds: 300,
    });
    // Act
    const run = simulate(trace, 'fair-share', undefined, { apiBounds: true });
    // Assess: the last task (tenant t1) waited 40.001 s past its bound of 40 s, which counted 1
    // tenant joining where 3 others did: its assumption broke, so it is not judged
    expect(run.waitMs[20]).toBeGreaterThan(run.boundMs?.[20] as number);
    expect(run.assumedJoins?.atMost[20]).toBe(1);
    expect(assumptionsHeld(run, 20)).toBe(false);
    expect(boundStats(trace, run).broken).toBe(0);
  });

  it('random traces: never broken while the pool frees what it assumed', () => {
    let onPace = 0;
    let belowFairShare = 0;
    fc.assert(
      fc.property(randomTrace, (trace) => {
        // Act
        const run = simulate(trace, 'fair-share', undefined, { apiBounds: true });
        const stats = boundStats(trace, run);
        onPace += stats.onPace;
        for (const atMost of run.assumedBusyWeight?.atMost ?? []) if (!Number.isNaN(atMost)) belowFairShare++;
        // Assess
        expect(stats.broken).toBe(0);
      }),
      { numRuns: Number(process.env.PACE_PROPERTY_RUNS ?? 200) },
    );
    // Assess: the traces gave bounds on the pace to check, some of them with a tenant running tasks
    // below its fair share (not waiting for them)
    expect(onPace).toBeGreaterThan(100);
    expect(belowFairShare).toBeGreaterThan(10);
  });
});
