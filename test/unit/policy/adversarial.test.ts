/**
 * Named adversarial workloads for fair share's rotation and its wait bound (issue 22, item 5).
 * Each runs through the simulator; for every task the engine's bound (`explain` right after it
 * arrives) and the API's (app/wait.ts at submit, sim/api-bound.ts) are checked whenever the
 * bound's assumption held (its tenant submitted nothing more before it started), and the
 * newcomers' waits are compared with round-robin's on the same trace.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SchedulingPolicy } from '../../../runtime/core/policy/policy.ts';
import { simulate } from '../../../sim/engine.ts';
import { waitStats } from '../../../sim/metrics.ts';
import { Prng } from '../../../sim/prng.ts';
import { type Trace, TraceBuilder } from '../../../sim/trace.ts';

const LAMBDA = { fargate: false, vcpu: 0.25, memoryMiB: 512 };
const CRITICAL = 0;
const NORMAL = 2;
const LOW = 3;

interface Checked {
  /** Bounds checked (engine at arrival, API at submit), and the broken ones. */
  readonly engine: number;
  readonly api: number;
  readonly broken: string[];
  readonly waitMs: Float64Array;
}

/** Runs fair-share over the trace, checking both bounds of every task whose tenant then submitted nothing more. */
function checkBounds(trace: Trace): Checked {
  const nextArrival = new Float64Array(trace.size).fill(Number.POSITIVE_INFINITY);
  const later = new Map<number, number>();
  for (let i = trace.size - 1; i >= 0; i--) {
    const tenant = trace.tenant[i] as number;
    const next = later.get(tenant);
    if (next !== undefined) nextArrival[i] = trace.arriveMs[next] as number;
    later.set(tenant, i);
  }
  const engineBound = new Float64Array(trace.size).fill(Number.NaN);
  let seen = 0;
  const run = simulate(
    trace,
    'fair-share',
    (dispatcher, nowMs, arrived) => {
      const engine = dispatcher as SchedulingPolicy;
      for (; seen < arrived; seen++) {
        const bound = engine.explain(String(seen), nowMs)?.waitBoundSeconds;
        if (bound !== null && bound !== undefined) engineBound[seen] = nowMs + bound * 1000;
      }
    },
    { apiBounds: true },
  );
  const broken: string[] = [];
  let engine = 0;
  let api = 0;
  for (let i = 0; i < trace.size; i++) {
    const arrive = trace.arriveMs[i] as number;
    const start = arrive + (run.waitMs[i] as number);
    if (!((nextArrival[i] as number) >= start)) continue; // its tenant submitted more first (A1)
    if (!Number.isNaN(engineBound[i] as number)) {
      engine++;
      if (!(start <= (engineBound[i] as number)))
        broken.push(`task ${i}: engine bound ${engineBound[i]}, start ${start}`);
    }
    const apiMs = run.boundMs?.[i] as number;
    if (!Number.isNaN(apiMs)) {
      api++;
      if (!(start <= arrive + apiMs)) broken.push(`task ${i}: API bound ${arrive + apiMs}, start ${start}`);
    }
  }
  return { engine, api, broken, waitMs: run.waitMs };
}

/** p99 wait (s) of the tasks `include` selects, under a dispatcher. */
function p99(trace: Trace, name: 'fair-share' | 'round-robin', include: (i: number) => boolean): number {
  return waitStats(simulate(trace, name).waitMs, include).p99;
}

const even = (count: number) => Array.from({ length: count }, () => ({ weight: 1, maxConcurrency: 1_000_000 }));

describe('Fair share under adversarial workloads (simulator)', () => {
  it('tenant churn: thousands of one-task tenants at 80 % of the pool’s rate beside a backlogged crowd and a tenant with low-tier work', () => {
    // Prepare: 10 slots, tasks of ~2 s (5 per second at most); 6 crowd tenants queue 60 tasks each
    // at 0; one backlog tenant queues 40 normal and 40 low tasks; 2,000 one-task tenants arrive
    // at 4 per second.
    const rng = new Prng(7);
    const crowd = 6;
    const solos = 2_000;
    const builder = new TraceBuilder(crowd * 60 + 80 + solos);
    for (let t = 0; t < crowd; t++) {
      for (let i = 0; i < 60; i++)
        builder.push({
          tenant: t,
          tier: NORMAL,
          ...LAMBDA,
          arriveMs: rng.next() * 100,
          holdMs: 1000 + rng.next() * 2000,
        });
    }
    for (let i = 0; i < 80; i++) {
      builder.push({
        tenant: crowd,
        tier: i % 2 ? LOW : NORMAL,
        ...LAMBDA,
        arriveMs: rng.next() * 100,
        holdMs: 1000 + rng.next() * 2000,
      });
    }
    for (let s = 0; s < solos; s++) {
      builder.push({
        tenant: crowd + 1 + s,
        tier: NORMAL,
        ...LAMBDA,
        arriveMs: 1000 + s * 250,
        holdMs: 1000 + rng.next() * 2000,
      });
    }
    const trace = builder.build({
      scenario: 'churn',
      description: 'churn',
      tenantIds: [
        ...Array.from({ length: crowd }, (_, t) => `crowd-${t}`),
        'backlog',
        ...Array.from({ length: solos }, (_, s) => `solo-${s}`),
      ],
      tenantSettings: even(crowd + 1 + solos),
      pools: { lambda: { concurrency: 10 }, fargate: { vcpu: 4, memoryMiB: 8192 } },
      agingSeconds: 30,
    });
    // Act
    const checked = checkBounds(trace);
    const solo = (i: number) => (trace.tenant[i] as number) > crowd;
    // Assess
    expect(checked.broken).toEqual([]);
    expect(checked.engine).toBeGreaterThan(1_500);
    expect(checked.api).toBeGreaterThan(1_500);
    expect(p99(trace, 'fair-share', solo)).toBeLessThanOrEqual(2 * p99(trace, 'round-robin', solo) + 10);
  });

  it('more backlogged tenants than slots: a quiet tenant still waits about one task per tenant ahead', () => {
    // Prepare: 4 slots, 12 tenants with 30 tasks each at 0, 3 quiet tenants submitting every 7 s
    const rng = new Prng(11);
    const backlogged = 12;
    const builder = new TraceBuilder(backlogged * 30 + 3 * 40);
    for (let t = 0; t < backlogged; t++) {
      for (let i = 0; i < 30; i++)
        builder.push({
          tenant: t,
          tier: NORMAL,
          ...LAMBDA,
          arriveMs: rng.next() * 50,
          holdMs: 500 + rng.next() * 1000,
        });
    }
    for (let q = 0; q < 3; q++) {
      for (let i = 0; i < 40; i++)
        builder.push({
          tenant: backlogged + q,
          tier: NORMAL,
          ...LAMBDA,
          arriveMs: 500 + i * 7000 + q * 2000,
          holdMs: 300,
        });
    }
    const trace = builder.build({
      scenario: 'more-than-slots',
      description: 'more backlogged tenants than slots',
      tenantIds: Array.from({ length: backlogged + 3 }, (_, t) =>
        t < backlogged ? `crowd-${t}` : `quiet-${t - backlogged}`,
      ),
      tenantSettings: even(backlogged + 3),
      pools: { lambda: { concurrency: 4 }, fargate: { vcpu: 4, memoryMiB: 8192 } },
      agingSeconds: 60,
    });
    // Act
    const checked = checkBounds(trace);
    const quiet = (i: number) => (trace.tenant[i] as number) >= backlogged;
    // Assess
    expect(checked.broken).toEqual([]);
    expect(checked.engine).toBeGreaterThan(100);
    expect(p99(trace, 'fair-share', quiet)).toBeLessThanOrEqual(2 * p99(trace, 'round-robin', quiet) + 10);
  });

  it('a crowd flooding critical work while quiet tenants submit low-tier bursts', () => {
    // Prepare: 8 slots; 8 tenants flood critical tasks faster than the pool drains; 4 quiet
    // tenants send bursts of 1-3 low tasks now and then
    const rng = new Prng(13);
    const builder = new TraceBuilder(2_000 + 200);
    for (let i = 0; i < 2_000; i++)
      builder.push({ tenant: i % 8, tier: CRITICAL, ...LAMBDA, arriveMs: i * 90, holdMs: 600 + rng.next() * 600 });
    for (let b = 0; b < 80; b++) {
      const at = 2_000 + rng.next() * 170_000;
      const size = 1 + rng.int(3);
      for (let k = 0; k < size; k++)
        builder.push({ tenant: 8 + (b % 4), tier: LOW, ...LAMBDA, arriveMs: at + k, holdMs: 400 });
    }
    const trace = builder.build({
      scenario: 'critical-flood',
      description: 'critical flood, low bursts',
      tenantIds: Array.from({ length: 12 }, (_, t) => (t < 8 ? `flood-${t}` : `quiet-${t - 8}`)),
      tenantSettings: even(12),
      pools: { lambda: { concurrency: 8 }, fargate: { vcpu: 4, memoryMiB: 8192 } },
      agingSeconds: 30,
    });
    // Act
    const checked = checkBounds(trace);
    const quiet = (i: number) => (trace.tenant[i] as number) >= 8;
    // Assess: tiers do not rank across tenants, so the quiet tenants' low work is not starved
    expect(checked.broken).toEqual([]);
    expect(checked.engine).toBeGreaterThan(30);
    expect(p99(trace, 'fair-share', quiet)).toBeLessThanOrEqual(2 * p99(trace, 'round-robin', quiet) + 10);
  });

  it('one slot with long tasks', () => {
    // Prepare: 1 slot; 3 tenants with 10 tasks of 60-120 s each; newcomers with one 1 s task now and then
    const rng = new Prng(17);
    const builder = new TraceBuilder(30 + 20);
    for (let i = 0; i < 30; i++)
      builder.push({
        tenant: i % 3,
        tier: NORMAL,
        ...LAMBDA,
        arriveMs: rng.next() * 10,
        holdMs: 60_000 + rng.next() * 60_000,
      });
    for (let n = 0; n < 20; n++)
      builder.push({ tenant: 3 + n, tier: NORMAL, ...LAMBDA, arriveMs: 5_000 + n * 100_000, holdMs: 1000 });
    const trace = builder.build({
      scenario: 'one-slot',
      description: 'one slot, long tasks',
      tenantIds: Array.from({ length: 23 }, (_, t) => (t < 3 ? `long-${t}` : `new-${t - 3}`)),
      tenantSettings: even(23),
      pools: { lambda: { concurrency: 1 }, fargate: { vcpu: 4, memoryMiB: 8192 } },
      agingSeconds: 60,
    });
    // Act
    const checked = checkBounds(trace);
    const newcomer = (i: number) => (trace.tenant[i] as number) >= 3;
    // Assess: a newcomer waits for at most one long task per tenant ahead, never the backlog
    expect(checked.broken).toEqual([]);
    expect(checked.engine).toBeGreaterThan(10);
    expect(p99(trace, 'fair-share', newcomer)).toBeLessThanOrEqual(2 * p99(trace, 'round-robin', newcomer) + 10);
  });

  it('random traces: no bound the engine or the API gives is broken while its assumption holds', () => {
    const traces = fc
      .record({
        tenants: fc.integer({ min: 1, max: 8 }),
        quotas: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 8, maxLength: 8 }),
        weights: fc.array(fc.constantFrom(1, 2, 4), { minLength: 8, maxLength: 8 }),
        slots: fc.integer({ min: 1, max: 6 }),
        tasks: fc.array(
          fc.record({
            tenant: fc.nat(7),
            tier: fc.nat(3),
            vcpu: fc.oneof(
              { arbitrary: fc.constant(0), weight: 3 },
              { arbitrary: fc.constantFrom(1, 2, 4), weight: 1 },
            ),
            arriveMs: fc.nat(60_000),
            holdMs: fc.integer({ min: 1, max: 15_000 }),
            slack: fc.nat(10_000),
          }),
          { minLength: 1, maxLength: 40 },
        ),
      })
      .map((r): Trace => {
        const builder = new TraceBuilder(r.tasks.length);
        for (const task of r.tasks) {
          builder.push({
            tenant: task.tenant % r.tenants,
            tier: task.tier,
            fargate: task.vcpu > 0,
            vcpu: task.vcpu > 0 ? task.vcpu : 0.25,
            memoryMiB: task.vcpu > 0 ? task.vcpu * 1024 : 512,
            arriveMs: task.arriveMs,
            holdMs: task.holdMs,
            timeoutMs: task.holdMs + task.slack,
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
          agingSeconds: 20,
        });
      });
    fc.assert(
      fc.property(traces, (trace) => {
        expect(checkBounds(trace).broken).toEqual([]);
      }),
      { numRuns: 2_000 },
    );
  });
});
