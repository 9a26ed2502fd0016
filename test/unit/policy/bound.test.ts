/**
 * The wait bound holds in the simulator: across its scenarios and random traces, under each of
 * our policies, no task starts after any bound `explain()` gave it while it waited. The bound's
 * one assumption about the workload (aging.ts) is that the task's tenant submits nothing new
 * meanwhile, so a bound given while the tenant still had arrivals to come is not checked.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PolicyName } from '../../../runtime/core/config.ts';
import type { SchedulingPolicy } from '../../../runtime/core/policy/policy.ts';
import { simulate } from '../../../sim/engine.ts';
import { buildScenario, SCENARIO_NAMES } from '../../../sim/scenarios.ts';
import { type Trace, TraceBuilder } from '../../../sim/trace.ts';

const POLICY_NAMES: PolicyName[] = ['fifo', 'priority', 'fair-share'];

/** Runs the trace; returns the tasks that started after a bound they were given, and how many bounds were checked. */
function brokenBounds(trace: Trace, policy: PolicyName): { broken: string[]; checked: number } {
  const lastArrival = new Float64Array(trace.tenantIds.length).fill(Number.NEGATIVE_INFINITY);
  for (let i = 0; i < trace.size; i++) {
    const tenant = trace.tenant[i] as number;
    lastArrival[tenant] = Math.max(lastArrival[tenant] as number, trace.arriveMs[i] as number);
  }
  const deadline = new Float64Array(trace.size).fill(Number.POSITIVE_INFINITY);
  const waiting = new Set<number>();
  let seen = 0;
  let checked = 0;
  const result = simulate(trace, policy, (dispatcher, nowMs, arrived) => {
    const engine = dispatcher as SchedulingPolicy;
    for (; seen < arrived; seen++) waiting.add(seen);
    for (const task of waiting) {
      const wait = engine.explain(String(task), nowMs);
      if (!wait) {
        waiting.delete(task);
        continue;
      }
      if (wait.waitBoundSeconds === null || (lastArrival[trace.tenant[task] as number] as number) > nowMs) continue;
      checked++;
      deadline[task] = Math.min(deadline[task] as number, nowMs + wait.waitBoundSeconds * 1000);
    }
  });
  const broken: string[] = [];
  for (let i = 0; i < trace.size; i++) {
    const startedAt = (trace.arriveMs[i] as number) + (result.waitMs[i] as number);
    if (!(startedAt <= (deadline[i] as number))) broken.push(`task ${i} started at ${startedAt}, bound ${deadline[i]}`);
  }
  return { broken, checked };
}

describe('Function: SchedulingPolicy.explain (bound, in the simulator)', () => {
  for (const scenario of SCENARIO_NAMES) {
    for (const policy of POLICY_NAMES) {
      it(`${scenario} / ${policy}: no task starts after a bound it was given`, () => {
        // Prepare
        const trace = buildScenario(scenario, { tasks: 240, seed: 3 });
        // Act
        const { broken, checked } = brokenBounds(trace, policy);
        // Assess
        expect(checked).toBeGreaterThan(0);
        expect(broken).toEqual([]);
      });
    }
  }

  const randomTrace = fc
    .record({
      tenants: fc.integer({ min: 1, max: 4 }),
      quotas: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 4, maxLength: 4 }),
      weights: fc.array(fc.constantFrom(1, 2, 4), { minLength: 4, maxLength: 4 }),
      slots: fc.integer({ min: 1, max: 4 }),
      agingSeconds: fc.integer({ min: 1, max: 30 }),
      tasks: fc.array(
        fc.record({
          tenant: fc.nat(3),
          tier: fc.nat(3),
          // Fargate pool of 4 vCPU: sizes from a quarter of it to all of it.
          vcpu: fc.oneof(
            { arbitrary: fc.constant(0), weight: 2 },
            { arbitrary: fc.constantFrom(1, 2, 3, 4), weight: 1 },
          ),
          arriveMs: fc.nat(60_000),
          holdMs: fc.integer({ min: 1, max: 10_000 }),
        }),
        { minLength: 1, maxLength: 60 },
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
        agingSeconds: r.agingSeconds,
      });
    });

  for (const policy of POLICY_NAMES) {
    it(`random traces / ${policy}: no task starts after a bound it was given`, () => {
      fc.assert(
        fc.property(randomTrace, (trace) => {
          // Act
          const { broken } = brokenBounds(trace, policy);
          // Assess
          expect(broken).toEqual([]);
        }),
        { numRuns: 300 },
      );
    });
  }
});
