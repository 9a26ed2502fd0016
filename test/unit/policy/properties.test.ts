/**
 * Property tests: the policy's invariants hold for arbitrary sequences of operations and
 * workloads, under every policy.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PolicyName } from '../../../runtime/core/config.ts';
import { effectiveRank, topTierAtMs } from '../../../runtime/core/policy/aging.ts';
import type { Candidate } from '../../../runtime/core/policy/types.ts';
import { PRIORITY_TIERS, type TenantSettings, tierRank } from '../../../runtime/core/task.ts';
import { drive, makePolicy, type WorkItem } from './helpers.ts';

const POLICY_NAMES: PolicyName[] = ['fifo', 'priority', 'fair-share'];
/** The engine's default hold (maxHoldSeconds) when a task names none: 300 s. */
const HOLD_MS = 300_000;
const TENANTS = ['t0', 't1', 't2', 't3'];
const POOLS = { slots: 3, vcpu: 4, memoryMiB: 8192 };
const SIZES = [
  { vcpu: 0.5, memoryMiB: 1024 },
  { vcpu: 1, memoryMiB: 512 },
  { vcpu: 3, memoryMiB: 2048 },
  { vcpu: 4, memoryMiB: 8192 },
  { vcpu: 8, memoryMiB: 1024 }, // never fits
];

const operation = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      tenant: fc.nat(TENANTS.length - 1),
      tier: fc.nat(3),
      fargate: fc.boolean(),
      size: fc.nat(SIZES.length - 1),
      age: fc.nat(5000),
      delay: fc.oneof(fc.constant(0), fc.nat(3000)),
    }),
    weight: 5,
  },
  { arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('setTenant' as const),
      tenant: fc.nat(TENANTS.length - 1),
      weight: fc.constantFrom(0.5, 1, 2, 4),
      maxConcurrency: fc.integer({ min: 0, max: 4 }),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.nat(2000) }), weight: 2 },
);

describe('Class: SchedulingPolicy', () => {
  describe('Method: next (invariants under arbitrary operations)', () => {
    for (const policyName of POLICY_NAMES) {
      it(`${policyName}: never exceeds a quota or a pool, never starts a task early, and is work conserving`, () => {
        fc.assert(
          fc.property(fc.array(operation, { maxLength: 120, size: 'max' }), fc.boolean(), (ops, reservations) => {
            // Prepare
            const policy = makePolicy({
              policy: policyName,
              agingSeconds: 1,
              pools: POOLS,
              tenantDefaults: { weight: 1, maxConcurrency: 2 },
              reservations,
            });
            const settings = new Map<string, TenantSettings>();
            const settingsOf = (tenantId: string) => settings.get(tenantId) ?? { weight: 1, maxConcurrency: 2 };
            const waiting = new Map<string, Candidate>();
            const active = new Map<string, Candidate>();
            const dispatchedAt = new Map<string, number>();
            let now = 10_000;
            let seq = 0;
            const activeOf = (tenantId: string) => [...active.values()].filter((c) => c.tenantId === tenantId).length;
            const used = () => {
              let slots = 0;
              let vcpu = 0;
              let memoryMiB = 0;
              for (const c of active.values()) {
                if (c.runtime === 'lambda') slots++;
                else {
                  vcpu += c.resources.vcpu;
                  memoryMiB += c.resources.memoryMiB;
                }
              }
              return { slots, vcpu, memoryMiB };
            };
            const fitsFree = (c: Candidate) => {
              const u = used();
              return c.runtime === 'lambda'
                ? u.slots + 1 <= POOLS.slots
                : u.vcpu + c.resources.vcpu <= POOLS.vcpu && u.memoryMiB + c.resources.memoryMiB <= POOLS.memoryMiB;
            };
            /** When `task` fits if the running Fargate tasks end at their holds, one by one. */
            const shadowOf = (task: Candidate) => {
              const running = [...active.values()]
                .filter((c) => c.runtime === 'fargate')
                .map((c) => ({ c, untilMs: (dispatchedAt.get(c.taskId) as number) + HOLD_MS }))
                .sort((a, b) => a.untilMs - b.untilMs);
              let { vcpu, memoryMiB } = used();
              for (const { c, untilMs } of running) {
                vcpu -= c.resources.vcpu;
                memoryMiB -= c.resources.memoryMiB;
                if (vcpu + task.resources.vcpu <= POOLS.vcpu && memoryMiB + task.resources.memoryMiB <= POOLS.memoryMiB)
                  return untilMs;
              }
              return Number.POSITIVE_INFINITY;
            };
            // Act & Assess, step by step
            for (const op of ops) {
              if (op.kind === 'add') {
                const c: Candidate = {
                  taskId: `task-${seq}`,
                  tenantId: TENANTS[op.tenant] as string,
                  priority: PRIORITY_TIERS[op.tier] ?? 'normal',
                  runtime: op.fargate ? 'fargate' : 'lambda',
                  resources: SIZES[op.size] ?? { vcpu: 1, memoryMiB: 512 },
                  agingFromMs: now - op.age,
                  runAtMs: now + op.delay,
                  seq: seq++,
                };
                expect(policy.add(c)).toBe(true);
                waiting.set(c.taskId, c);
              } else if (op.kind === 'release' && active.size > 0) {
                const taskId = [...active.keys()][op.pick % active.size] as string;
                expect(policy.release(taskId)).toBe(true);
                active.delete(taskId);
              } else if (op.kind === 'remove' && waiting.size > 0) {
                const taskId = [...waiting.keys()][op.pick % waiting.size] as string;
                expect(policy.remove(taskId)).toBe(true);
                waiting.delete(taskId);
              } else if (op.kind === 'setTenant') {
                const tenantId = TENANTS[op.tenant] as string;
                settings.set(tenantId, { weight: op.weight, maxConcurrency: op.maxConcurrency });
                policy.setTenant(tenantId, settings.get(tenantId));
              } else if (op.kind === 'tick') {
                now += op.ms;
              }
              for (let next = policy.next(now); next; next = policy.next(now)) {
                expect(waiting.has(next.taskId)).toBe(true);
                expect(next.runAtMs).toBeLessThanOrEqual(now);
                expect(fitsFree(next)).toBe(true);
                waiting.delete(next.taskId);
                active.set(next.taskId, next);
                dispatchedAt.set(next.taskId, now);
                expect(activeOf(next.tenantId)).toBeLessThanOrEqual(settingsOf(next.tenantId).maxConcurrency);
              }
              // Work conservation: whatever still waits is delayed, over quota, does not fit, or
              // yields to the Fargate pool's reservation for a larger task: only tasks that end
              // before it would fit anyway (every hold is the default 300 s here) start beside it.
              const reservedId = policy.snapshot(now).pools[1]?.reservedForTaskId;
              const reserved = reservedId ? waiting.get(reservedId) : undefined;
              if (reservedId) expect(reserved && !fitsFree(reserved)).toBe(true);
              const shadowMs = reserved ? shadowOf(reserved) : Number.POSITIVE_INFINITY;
              for (const c of waiting.values()) {
                const blocked =
                  c.runAtMs > now ||
                  activeOf(c.tenantId) >= settingsOf(c.tenantId).maxConcurrency ||
                  !fitsFree(c) ||
                  (c.runtime === 'fargate' && reserved !== undefined && now + HOLD_MS > shadowMs);
                expect(blocked, `${c.taskId} was eligible but not dispatched`).toBe(true);
              }
              expect([policy.waitingCount, policy.activeCount]).toEqual([waiting.size, active.size]);
            }
          }),
          { numRuns: 150 },
        );
      });
    }
  });

  describe('Method: next (aging bound)', () => {
    const workload = fc.array(
      fc.record({
        tenantId: fc.constantFrom('a', 'b', 'c'),
        priority: fc.constantFrom(...PRIORITY_TIERS),
        arriveMs: fc.nat(120_000),
        delayMs: fc.oneof({ arbitrary: fc.constant(0), weight: 4 }, { arbitrary: fc.nat(20_000), weight: 1 }),
        holdMs: fc.integer({ min: 1, max: 10_000 }),
        // Fargate pool of 4 vCPU: sizes from a quarter of it to all of it.
        fargateVcpu: fc.oneof(
          { arbitrary: fc.constant(undefined), weight: 2 },
          { arbitrary: fc.constantFrom(1, 2, 3, 4), weight: 1 },
        ),
      }),
      { minLength: 1, maxLength: 50, size: 'max' },
    );
    const setup = fc.record({
      slots: fc.integer({ min: 1, max: 4 }),
      agingSeconds: fc.integer({ min: 1, max: 30 }),
      quotaA: fc.integer({ min: 1, max: 4 }),
      weightB: fc.constantFrom(1, 2, 4),
    });
    const settingsFor = (s: { slots: number; agingSeconds: number; quotaA: number; weightB: number }) => ({
      slots: s.slots,
      agingSeconds: s.agingSeconds,
      maxHoldSeconds: 10,
      tenants: {
        a: { weight: 1, maxConcurrency: s.quotaA },
        b: { weight: s.weightB, maxConcurrency: 3 },
        c: { weight: 1, maxConcurrency: 100 },
      },
    });

    for (const policyName of POLICY_NAMES) {
      it(`${policyName}: every task starts within the wait bound explain() reported at any moment`, () => {
        fc.assert(
          fc.property(workload, setup, (work: WorkItem[], s) => {
            // Prepare
            const promised = new Map<string, number[]>();
            // The bound assumes its tenant submits nothing new while it waits (aging.ts).
            const lastArrival = new Map<string, number>();
            for (const item of work) {
              lastArrival.set(item.tenantId, Math.max(lastArrival.get(item.tenantId) ?? 0, item.arriveMs));
            }
            const tenantStillArriving = (c: Candidate, nowMs: number) => (lastArrival.get(c.tenantId) ?? -1) > nowMs;
            // Act
            const result = drive(policyName, work, settingsFor(s), {
              beforeDispatch(policy, nowMs, waiting) {
                for (const [taskId, c] of waiting) {
                  if (tenantStillArriving(c, nowMs)) continue;
                  const bound = policy.explain(taskId, nowMs)?.waitBoundSeconds;
                  if (bound === null || bound === undefined) continue;
                  promised.set(taskId, [...(promised.get(taskId) ?? []), nowMs + bound * 1000]);
                }
              },
            });
            // Assess
            expect(result.dispatchedAtMs.size).toBe(work.length);
            for (const [taskId, deadlines] of promised) {
              const startedAt = result.dispatchedAtMs.get(taskId) as number;
              for (const deadline of deadlines) expect(startedAt).toBeLessThanOrEqual(deadline);
            }
          }),
          { numRuns: 500 },
        );
      });
    }

    // Under fair-share tenants are ordered by share and rotation instead (rotation.test.ts).
    for (const policyName of ['priority'] as const) {
      it(`${policyName}: once a task reaches the top tier, only older tasks pass it`, () => {
        fc.assert(
          fc.property(workload, setup, (work: WorkItem[], s) => {
            // Prepare
            const settings = settingsFor(s);
            const agingMs = s.agingSeconds * 1000;
            const older = (x: Candidate, y: Candidate) =>
              x.agingFromMs !== y.agingFromMs ? x.agingFromMs < y.agingFromMs : x.seq < y.seq;
            const violations: string[] = [];
            // Act
            drive(policyName, work, settings, {
              onDispatch(started, nowMs, waiting, active) {
                const activeOf = (tenantId: string) =>
                  [...active.values()].filter((c) => c.tenantId === tenantId).length;
                for (const passed of waiting.values()) {
                  // Lambda tasks are all the same size; in the Fargate pool, passing for fit is allowed.
                  if (started.runtime !== 'lambda' || passed.runtime !== 'lambda') continue;
                  const eligible =
                    passed.runAtMs <= nowMs &&
                    activeOf(passed.tenantId) < (settings.tenants[passed.tenantId as 'a']?.maxConcurrency ?? 0);
                  const topTier = nowMs >= topTierAtMs(tierRank(passed.priority), passed.agingFromMs, agingMs);
                  if (!eligible || !topTier || older(started, passed)) continue;
                  violations.push(`${started.taskId} passed ${passed.taskId} at ${nowMs}`);
                }
              },
            });
            // Assess
            expect(violations).toEqual([]);
          }),
          { numRuns: 500 },
        );
      });
    }

    // Under fair-share the same holds within one tenant: DRF only orders tenants.
    for (const policyName of ['priority', 'fair-share'] as const) {
      it(`${policyName}: a task is only ever passed by higher effective tiers or older tasks of its tier`, () => {
        fc.assert(
          fc.property(workload, setup, (anyTenants: WorkItem[], s) => {
            // Prepare
            const work =
              policyName === 'priority' ? anyTenants : anyTenants.map((item) => ({ ...item, tenantId: 'a' }));
            const settings = { ...settingsFor(s), tenants: {} };
            const agingMs = s.agingSeconds * 1000;
            const key = (c: Candidate, now: number) => [
              effectiveRank(tierRank(c.priority), c.agingFromMs, now, agingMs),
              c.agingFromMs,
              c.seq,
            ];
            const before = (x: number[], y: number[]) => {
              for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return (x[i] as number) < (y[i] as number);
              return false;
            };
            const violations: string[] = [];
            // Act
            drive(policyName, work, settings, {
              onDispatch(started, nowMs, waiting) {
                for (const other of waiting.values()) {
                  if (started.runtime !== 'lambda' || other.runtime !== 'lambda') continue;
                  if (other.runAtMs <= nowMs && before(key(other, nowMs), key(started, nowMs))) {
                    violations.push(`${started.taskId} started before ${other.taskId} at ${nowMs}`);
                  }
                }
              },
            });
            // Assess
            expect(violations).toEqual([]);
          }),
          { numRuns: 500 },
        );
      });
    }
  });
});
