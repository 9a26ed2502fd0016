import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  capacity,
  concurrencyKey,
  quota,
  startRate,
  tenantHold,
  tenantPause,
  typePause,
} from '../../../runtime/core/policy/constraints.ts';
import { explainWait } from '../../../runtime/core/policy/explain.ts';
import { emissionIntervalUs, firstNonConforming, grantStarts, nextStartUs } from '../../../runtime/core/policy/rate.ts';
import { candidate, drain, makePolicy } from './helpers.ts';

const RATE = { perSecond: 4, burst: 4 };

describe('Module: rate (GCRA)', () => {
  it('grants a full bucket at once, then one start per interval', () => {
    // Prepare / Act
    const first = grantStarts(RATE, undefined, 0, 10);
    const again = grantStarts(RATE, first.tatUs, 0, 1);
    const later = grantStarts(RATE, first.tatUs, 250_000, 3);
    // Assess
    expect(first.granted).toBe(4);
    expect(again.granted).toBe(0);
    expect(later.granted).toBe(1);
    expect(nextStartUs(RATE, first.tatUs, 0)).toBe(250_000);
    expect(emissionIntervalUs({ perSecond: 3, burst: 1 })).toBe(333_334);
  });

  it('never lets more than burst + floor(W x rate) start in any window of W seconds, whatever the order of the grants', () => {
    fc.assert(
      fc.property(
        fc.record({ perSecond: fc.integer({ min: 1, max: 20 }), burst: fc.integer({ min: 1, max: 10 }) }),
        // Grant requests at arbitrary (not sorted: overlapping schedulers' clocks) instants.
        fc.array(fc.record({ atMs: fc.integer({ min: 0, max: 20_000 }), want: fc.integer({ min: 1, max: 5 }) }), {
          maxLength: 80,
        }),
        fc.integer({ min: 1, max: 5000 }),
        (rate, requests, windowMs) => {
          let tat: number | undefined;
          const starts: number[] = [];
          for (const { atMs, want } of requests) {
            const grant = grantStarts(rate, tat, atMs * 1000, want);
            tat = grant.tatUs;
            for (let i = 0; i < grant.granted; i++) starts.push(atMs);
          }
          starts.sort((a, b) => a - b);
          const most = rate.burst + Math.floor((windowMs / 1000) * rate.perSecond);
          for (let i = 0, j = 0; i < starts.length; i++) {
            while (starts[j]! < starts[i]! - windowMs) j++;
            expect(i - j + 1).toBeLessThanOrEqual(most);
          }
          // In time order the same starts pass GCRA one by one (the checker's test).
          expect(firstNonConforming(rate, starts)).toBeUndefined();
        },
      ),
    );
  });

  it('finds the first start over the limit', () => {
    expect(firstNonConforming(RATE, [0, 0, 0, 0, 0])).toBe(0);
    expect(firstNonConforming(RATE, [0, 0, 0, 0, 250, 500])).toBeUndefined();
    expect(firstNonConforming(RATE, [0, 0, 0, 0, 250, 400])).toBe(400);
  });
});

describe('Module: constraints (one unit each)', () => {
  const settings = { weight: 1, maxConcurrency: 2 };

  it('quota holds a tenant at its maxConcurrency', () => {
    expect(quota.hold({ settings, active: 1 })).toBeUndefined();
    expect(quota.hold({ settings, active: 2 })).toEqual({ constraint: 'quota', active: 2, limit: 2 });
  });

  it('tenant pause holds a paused tenant, and is reported before its quota', () => {
    expect(tenantPause.hold({ settings, active: 0 })).toBeUndefined();
    expect(tenantHold({ settings: { ...settings, paused: true }, active: 2 }, 0)).toEqual({
      constraint: 'tenant_paused',
    });
  });

  it('start rate holds a tenant whose bucket is empty until its next start', () => {
    const tenant = { settings, active: 0, rate: RATE, tatUs: 1_000_000 };
    expect(startRate.hold(tenant, 0)).toEqual({ constraint: 'rate', nextStartMs: 250, rate: RATE });
    expect(startRate.hold(tenant, 250)).toBeUndefined();
    expect(startRate.hold({ settings, active: 0 }, 0)).toBeUndefined();
  });

  it('type pause holds only tasks of a paused type, and a task whose type is not known', () => {
    expect(typePause.hold({ type: 'a' }, new Set(['a']))).toEqual({ constraint: 'type_paused', type: 'a' });
    expect(typePause.hold({ type: 'b' }, new Set(['a']))).toBeUndefined();
    expect(typePause.hold({}, new Set(['a']))).toBeUndefined();
  });

  it('concurrency key holds at its limit (default 1)', () => {
    expect(concurrencyKey.hold({ concurrencyKey: 'k' }, 1)).toEqual({
      constraint: 'key',
      key: 'k',
      active: 1,
      limit: 1,
    });
    expect(concurrencyKey.hold({ concurrencyKey: 'k', concurrencyLimit: 2 }, 1)).toBeUndefined();
    expect(concurrencyKey.hold({}, 5)).toBeUndefined();
  });

  it('capacity holds a task its pool has no room for now, and says never for one bigger than the pool', () => {
    const pool = { slots: 0, milliVcpu: 4000, memoryMiB: 8192 };
    const task = { slots: 0, milliVcpu: 2000, memoryMiB: 4096 };
    expect(capacity.hold(task, { slots: 0, milliVcpu: 2000, memoryMiB: 0 }, pool, 'fargate')).toBeUndefined();
    const now = capacity.hold(task, { slots: 0, milliVcpu: 2500, memoryMiB: 0 }, pool, 'fargate');
    expect(now).toEqual({ constraint: 'capacity', runtime: 'fargate', never: false });
    expect(capacity.describe(now!)).toBe('The fargate pool has no room for it now');
    const never = capacity.hold(
      { ...task, memoryMiB: 9000 },
      { slots: 0, milliVcpu: 0, memoryMiB: 0 },
      pool,
      'fargate',
    );
    expect(never).toEqual({ constraint: 'capacity', runtime: 'fargate', never: true });
    expect(capacity.describe(never!)).toBe('It is bigger than the whole fargate pool');
  });

  it("capacity says when only a scheduler shard's allowance holds it, and the engine explains it so", () => {
    // Prepare: 2 of the pool's 4 slots allowed to this shard, both in use
    const pool = { slots: 4, milliVcpu: 0, memoryMiB: 0 };
    const one = { slots: 1, milliVcpu: 0, memoryMiB: 0 };
    const used = { slots: 2, milliVcpu: 0, memoryMiB: 0 };
    // Act
    const sliced = capacity.hold(one, used, pool, 'lambda', { slots: 2, milliVcpu: 0, memoryMiB: 0 });
    const engine = makePolicy({ pools: { slots: 4 } });
    engine.setAllowance({ slots: 2, milliVcpu: 16_000, memoryMiB: 32_768 });
    for (const taskId of ['a', 'b', 'c']) engine.add(candidate({ taskId }));
    drain(engine, 0);
    // Assess
    expect(sliced).toEqual({ constraint: 'capacity', runtime: 'lambda', never: false, byAllowance: true });
    expect(capacity.hold(one, { ...used, slots: 4 }, pool, 'lambda', { ...used })).toEqual({
      constraint: 'capacity',
      runtime: 'lambda',
      never: false,
    });
    expect(engine.explain('c', 0)?.message).toBe(
      "Its scheduler shard's allowance of the lambda pool is in use (the other shards hold the rest, by their demand)",
    );
    expect(engine.snapshot(0).pools.find((p) => p.runtime === 'lambda')?.allowance).toEqual({ slots: 2 });
  });
});

describe('Class: SchedulingPolicy', () => {
  describe('Method: next (flow control)', () => {
    it('starts nothing of a paused tenant, serves the others, and serves it at once on resume', () => {
      // Prepare
      const policy = makePolicy({ tenants: { a: { weight: 1, maxConcurrency: 10, paused: true } } });
      for (let i = 0; i < 3; i++) policy.add(candidate({ taskId: `a${i}`, tenantId: 'a' }));
      for (let i = 0; i < 3; i++) policy.add(candidate({ taskId: `b${i}`, tenantId: 'b' }));
      // Act
      const whilePaused = drain(policy, 0).map((c) => c.taskId);
      const explained = policy.explain('a0', 0);
      policy.setTenant('a', { weight: 1, maxConcurrency: 10 });
      const resumed = drain(policy, 1).map((c) => c.taskId);
      // Assess
      expect(whilePaused).toEqual(['b0', 'b1', 'b2']);
      expect(explained?.reason).toBe('tenant_paused');
      expect(explained?.waitBoundSeconds).toBeNull();
      expect(explained?.noBound?.code).toBe('paused');
      expect(resumed).toEqual(['a0', 'a1', 'a2']);
    });

    it('parks the tasks of a paused type and starts the tenant work behind them (no head-of-line blocking)', () => {
      // Prepare: the tenant's oldest tasks are of the paused type
      const policy = makePolicy({});
      policy.setPausedTypes(['report']);
      for (let i = 0; i < 3; i++) policy.add(candidate({ taskId: `r${i}`, type: 'report', agingFromMs: i }));
      policy.add(candidate({ taskId: 'x0', type: 'resize', agingFromMs: 10 }));
      // Act
      const whilePaused = drain(policy, 100).map((c) => c.taskId);
      const snapshot = policy.snapshot(100).tenants[0];
      const explained = policy.explain('r0', 100);
      policy.setPausedTypes([]);
      const resumed = drain(policy, 200).map((c) => c.taskId);
      // Assess
      expect(whilePaused).toEqual(['x0']);
      expect(snapshot?.parked).toBe(3);
      expect(explained?.reason).toBe('type_paused');
      expect(resumed).toEqual(['r0', 'r1', 'r2']);
    });

    it('parks a task already ready when its type is paused', () => {
      const policy = makePolicy({});
      policy.add(candidate({ taskId: 'r0', type: 'report' }));
      policy.setPausedTypes(['report']);
      expect(drain(policy, 0)).toEqual([]);
      expect(policy.waitingCount).toBe(1);
    });

    it('runs one task of a key at a time, and the tenant other work beside it', () => {
      // Prepare
      const policy = makePolicy({});
      for (let i = 0; i < 3; i++) policy.add(candidate({ taskId: `k${i}`, concurrencyKey: 'store-1', agingFromMs: i }));
      policy.add(candidate({ taskId: 'j0', concurrencyKey: 'store-2', agingFromMs: 5 }));
      policy.add(candidate({ taskId: 'n0', agingFromMs: 6 }));
      // Act
      const first = drain(policy, 10).map((c) => c.taskId);
      const held = policy.explain('k1', 10);
      policy.release('k0');
      const second = drain(policy, 20).map((c) => c.taskId);
      // Assess
      expect(first).toEqual(['k0', 'j0', 'n0']);
      expect(held?.reason).toBe('concurrency_key');
      expect(second).toEqual(['k1']);
    });

    it('honours a key limit above one', () => {
      const policy = makePolicy({});
      for (let i = 0; i < 5; i++) policy.add(candidate({ taskId: `k${i}`, concurrencyKey: 'k', concurrencyLimit: 2 }));
      expect(drain(policy, 0).map((c) => c.taskId)).toEqual(['k0', 'k1']);
      policy.release('k0');
      expect(drain(policy, 1).map((c) => c.taskId)).toEqual(['k2']);
    });

    it('waits for a key its durable record says is full, and tries again when the block lapses', () => {
      const policy = makePolicy({});
      policy.add(candidate({ taskId: 'k0', concurrencyKey: 'k' }));
      policy.add(candidate({ taskId: 'n0' }));
      policy.keyBlocked('t1', 'k', 5_000);
      expect(drain(policy, 0).map((c) => c.taskId)).toEqual(['n0']);
      expect(drain(policy, 4_999)).toEqual([]);
      expect(drain(policy, 5_000).map((c) => c.taskId)).toEqual(['k0']);
    });

    it('paces a rate-limited tenant and gives its slots to the others meanwhile (work conserving)', () => {
      // Prepare: 2 starts/s, burst 2
      const policy = makePolicy({
        tenants: { a: { weight: 1, maxConcurrency: 100, maxStartsPerSecond: 2, burst: 2 } },
      });
      for (let i = 0; i < 5; i++) policy.add(candidate({ taskId: `a${i}`, tenantId: 'a' }));
      for (let i = 0; i < 2; i++) policy.add(candidate({ taskId: `b${i}`, tenantId: 'b' }));
      // Act
      const at0 = drain(policy, 0).map((c) => c.taskId);
      const explained = policy.explain('a2', 100);
      const at499 = drain(policy, 499);
      const at500 = drain(policy, 500).map((c) => c.taskId);
      // Assess
      expect(at0.filter((id) => id.startsWith('a'))).toHaveLength(2);
      expect(at0.filter((id) => id.startsWith('b'))).toHaveLength(2);
      expect(explained?.reason).toBe('rate_limit');
      expect(at499).toEqual([]);
      expect(at500).toEqual(['a2']);
    });

    it('follows the durable bucket (syncRate)', () => {
      const policy = makePolicy({
        tenants: { a: { weight: 1, maxConcurrency: 100, maxStartsPerSecond: 1, burst: 1 } },
      });
      policy.add(candidate({ taskId: 'a0', tenantId: 'a' }));
      policy.syncRate('a', 3_000_000);
      expect(drain(policy, 2_999)).toEqual([]);
      expect(drain(policy, 3_000).map((c) => c.taskId)).toEqual(['a0']);
    });

    it('keeps every unit under arbitrary operations: no paused start, no key over its limit, starts within the rate', () => {
      const op = fc.oneof(
        fc.record({
          kind: fc.constant('add' as const),
          tenant: fc.integer({ min: 0, max: 2 }),
          type: fc.constantFrom('a', 'b'),
          key: fc.option(fc.constantFrom('k1', 'k2'), { nil: undefined }),
          limit: fc.integer({ min: 1, max: 2 }),
        }),
        fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
        fc.record({ kind: fc.constant('pauseType' as const), types: fc.subarray(['a', 'b']) }),
        fc.record({
          kind: fc.constant('pauseTenant' as const),
          tenant: fc.integer({ min: 0, max: 2 }),
          paused: fc.boolean(),
        }),
        fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 700 }) }),
      );
      fc.assert(
        fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
          const rate = { perSecond: 3, burst: 2 };
          const settingsOf = (paused: boolean) => ({
            weight: 1,
            maxConcurrency: 4,
            maxStartsPerSecond: 3,
            burst: 2,
            paused,
          });
          const policy = makePolicy({ pools: { slots: 6 }, tenantDefaults: settingsOf(false) });
          const tasks = new Map<string, { tenantId: string; type: string; key?: string | undefined; limit: number }>();
          const active: string[] = [];
          const pausedTenants = new Set<string>();
          let pausedTypes = new Set<string>();
          const starts = new Map<string, number[]>();
          let now = 0;
          let n = 0;
          const dispatch = () => {
            for (let next = policy.next(now); next; next = policy.next(now)) {
              const task = tasks.get(next.taskId)!;
              expect(pausedTenants.has(task.tenantId)).toBe(false);
              expect(pausedTypes.has(task.type)).toBe(false);
              if (task.key) {
                const sameKey = active.filter(
                  (id) => tasks.get(id)!.tenantId === task.tenantId && tasks.get(id)!.key === task.key,
                );
                expect(sameKey.length).toBeLessThan(task.limit);
              }
              active.push(next.taskId);
              starts.set(task.tenantId, [...(starts.get(task.tenantId) ?? []), now]);
            }
          };
          for (const o of ops) {
            if (o.kind === 'add') {
              const taskId = `x${n++}`;
              const tenantId = `t${o.tenant}`;
              tasks.set(taskId, { tenantId, type: o.type, key: o.key, limit: o.limit });
              policy.add(
                candidate({
                  taskId,
                  tenantId,
                  type: o.type,
                  concurrencyKey: o.key,
                  concurrencyLimit: o.limit,
                  agingFromMs: now,
                  runAtMs: now,
                }),
              );
            } else if (o.kind === 'release' && active.length > 0) {
              const [taskId] = active.splice(o.pick % active.length, 1);
              policy.release(taskId!);
            } else if (o.kind === 'pauseType') {
              pausedTypes = new Set(o.types);
              policy.setPausedTypes(pausedTypes);
            } else if (o.kind === 'pauseTenant') {
              const tenantId = `t${o.tenant}`;
              if (o.paused) pausedTenants.add(tenantId);
              else pausedTenants.delete(tenantId);
              policy.setTenant(tenantId, settingsOf(o.paused));
            } else if (o.kind === 'tick') {
              now += o.ms;
            }
            dispatch();
          }
          for (const times of starts.values()) expect(firstNonConforming(rate, times)).toBeUndefined();
          // Work conserving: every task still waiting is held by a unit (pause, key, rate) or by the quota/pool.
          for (const [taskId] of tasks) {
            const why = policy.explain(taskId, now);
            if (why)
              expect([
                'tenant_paused',
                'type_paused',
                'concurrency_key',
                'rate_limit',
                'tenant_quota',
                'capacity',
              ]).toContain(why.reason);
          }
        }),
      );
    });
  });

  describe('Function: explainWait (constraint holds)', () => {
    it('adds the wait for the next token to the bound and says what it assumes', () => {
      const nowMs = 1_000_000;
      const view = {
        policy: 'fair-share' as const,
        agingSeconds: 300,
        nowMs,
        task: {
          taskId: 'x',
          tenantId: 'a',
          priority: 'normal' as const,
          runtime: 'lambda' as const,
          agingFromMs: nowMs,
          runAtMs: nowMs,
          fitsPool: true,
          fitsFree: true,
        },
        tenant: { active: 0, maxConcurrency: 5, weightedShare: 0 },
        pool: { heldForOther: false, leader: null },
        aheadCount: null,
        rotation: {
          ahead: 0,
          waiting: 1,
          tenantWaiting: 1,
          tenantFreeAtMs: nowMs,
          freeBy: [[1, nowMs]] as [number, number][],
        },
        limits: { lambdaConcurrency: 1, holdSeconds: { lambda: 100, fargate: 100 }, reservations: true },
      };
      const free = explainWait(view);
      const limited = explainWait({ ...view, hold: { constraint: 'rate', nextStartMs: nowMs + 3000, rate: RATE } });
      expect(limited.reason).toBe('rate_limit');
      expect(limited.waitBoundSeconds).toBe((free.waitBoundSeconds ?? 0) + 3);
      expect(limited.assumes).toContain('start rate (4/s, burst 4)');
    });
  });
});
