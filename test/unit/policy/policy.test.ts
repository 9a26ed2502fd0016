import { describe, expect, it } from 'vitest';
import { candidate, countBy, drain, makePolicy, SMALL } from './helpers.ts';

const GB = 1024;

describe('Class: SchedulingPolicy', () => {
  describe('Method: next (DRF)', () => {
    it('reproduces the Ghodsi et al. example: A <1 CPU, 4 GB> gets 3 tasks, B <3 CPU, 1 GB> gets 2', () => {
      // Prepare
      const policy = makePolicy({ pools: { vcpu: 9, memoryMiB: 18 * GB } });
      for (let i = 0; i < 10; i++) {
        policy.add(
          candidate({ taskId: `a${i}`, tenantId: 'A', runtime: 'fargate', resources: { vcpu: 1, memoryMiB: 4 * GB } }),
        );
        policy.add(
          candidate({ taskId: `b${i}`, tenantId: 'B', runtime: 'fargate', resources: { vcpu: 3, memoryMiB: 1 * GB } }),
        );
      }
      // Act
      const started = drain(policy, 0);
      // Assess
      expect(countBy(started, (c) => c.tenantId)).toEqual({ A: 3, B: 2 });
      const shares = Object.fromEntries(policy.snapshot(0).tenants.map((t) => [t.tenantId, t.weightedDominantShare]));
      expect(shares.A).toBeCloseTo(2 / 3);
      expect(shares.B).toBeCloseTo(2 / 3);
    });

    it('gives a tenant of many small tasks and a tenant of few large ones the same dominant share', () => {
      // Prepare: 16 vCPU / 32 GiB; small = 1/64 of the pool, large = 1/4 of it
      const policy = makePolicy({ pools: { vcpu: 16, memoryMiB: 32 * GB } });
      for (let i = 0; i < 100; i++) {
        policy.add(
          candidate({
            taskId: `s${i}`,
            tenantId: 'small',
            runtime: 'fargate',
            resources: { vcpu: 0.25, memoryMiB: 512 },
          }),
        );
      }
      for (let i = 0; i < 10; i++) {
        policy.add(
          candidate({
            taskId: `l${i}`,
            tenantId: 'large',
            runtime: 'fargate',
            resources: { vcpu: 4, memoryMiB: 8 * GB },
          }),
        );
      }
      // Act
      const started = drain(policy, 0);
      // Assess: each holds half the pool
      expect(countBy(started, (c) => c.tenantId)).toEqual({ small: 32, large: 2 });
    });

    it('splits a pool 1:2:4 among tenants of weight 1, 2 and 4', () => {
      // Prepare
      const policy = makePolicy({
        pools: { slots: 70 },
        tenants: {
          w1: { weight: 1, maxConcurrency: 100 },
          w2: { weight: 2, maxConcurrency: 100 },
          w4: { weight: 4, maxConcurrency: 100 },
        },
      });
      for (const tenantId of ['w1', 'w2', 'w4']) {
        for (let i = 0; i < 100; i++) policy.add(candidate({ taskId: `${tenantId}-${i}`, tenantId }));
      }
      // Act
      const started = drain(policy, 0);
      // Assess
      expect(countBy(started, (c) => c.tenantId)).toEqual({ w1: 10, w2: 20, w4: 40 });
    });

    it('lets a tenant below its share go before an older backlog of a tenant above it', () => {
      // Prepare
      const policy = makePolicy({ pools: { slots: 4 } });
      for (let i = 0; i < 6; i++) policy.add(candidate({ taskId: `flood${i}`, tenantId: 'flood', agingFromMs: 0 }));
      drain(policy, 0);
      policy.add(candidate({ taskId: 'quiet', tenantId: 'quiet', agingFromMs: 1000 }));
      // Act
      policy.release('flood0');
      const next = policy.next(1000);
      // Assess
      expect(next?.taskId).toBe('quiet');
    });
  });

  describe('Method: next (fair-share ties)', () => {
    it('breaks equal shares by age, whatever the tenant ids', () => {
      // Prepare
      const policy = makePolicy({ pools: { slots: 1 } });
      policy.add(candidate({ taskId: 'young', tenantId: 'a', agingFromMs: 20 }));
      policy.add(candidate({ taskId: 'old', tenantId: 'z', agingFromMs: 10 }));
      // Act
      const next = policy.next(20);
      // Assess
      expect(next?.taskId).toBe('old');
    });
  });

  describe('Method: next (tiers and aging)', () => {
    it('serves higher tiers first and FIFO within a tier under priority', () => {
      // Prepare
      const policy = makePolicy({ policy: 'priority', pools: { slots: 100 } });
      policy.add(candidate({ taskId: 'low', priority: 'low', agingFromMs: 0 }));
      policy.add(candidate({ taskId: 'normal-late', priority: 'normal', agingFromMs: 20 }));
      policy.add(candidate({ taskId: 'normal-early', priority: 'normal', agingFromMs: 10 }));
      policy.add(candidate({ taskId: 'critical', priority: 'critical', agingFromMs: 30 }));
      // Act
      const order = drain(policy, 30).map((c) => c.taskId);
      // Assess
      expect(order).toEqual(['critical', 'normal-early', 'normal-late', 'low']);
    });

    it('promotes a waiting low task above fresh critical work after 3 × agingSeconds', () => {
      // Prepare
      const policy = makePolicy({ policy: 'priority', agingSeconds: 10, pools: { slots: 1 } });
      policy.add(candidate({ taskId: 'low', priority: 'low', agingFromMs: 0 }));
      policy.add(candidate({ taskId: 'critical-early', priority: 'critical', agingFromMs: 0 }));
      policy.add(candidate({ taskId: 'critical-late', priority: 'critical', agingFromMs: 29_000 }));
      // Act
      const first = policy.next(29_999);
      policy.release(first?.taskId ?? '');
      const second = policy.next(30_000);
      // Assess
      expect(first?.taskId).toBe('critical-early');
      expect(second?.taskId).toBe('low');
      expect(policy.explain('critical-late', 30_000)?.effectiveTier).toBe('critical');
    });

    it('ignores tiers under fifo', () => {
      // Prepare
      const policy = makePolicy({ policy: 'fifo' });
      policy.add(candidate({ taskId: 'old-low', priority: 'low', agingFromMs: 0 }));
      policy.add(candidate({ taskId: 'new-critical', priority: 'critical', agingFromMs: 5 }));
      // Act
      const order = drain(policy, 5).map((c) => c.taskId);
      // Assess
      expect(order).toEqual(['old-low', 'new-critical']);
    });

    it('keeps a retried task its age: it goes before younger work of its tier', () => {
      // Prepare
      const policy = makePolicy({ policy: 'priority', pools: { slots: 1 } });
      policy.add(candidate({ taskId: 'young', agingFromMs: 500, runAtMs: 500 }));
      policy.add(candidate({ taskId: 'retry', agingFromMs: 100, runAtMs: 900 }));
      // Act
      const early = policy.next(800);
      policy.release('young');
      const none = policy.next(899);
      const late = policy.next(900);
      // Assess
      expect(early?.taskId).toBe('young');
      expect(none).toBeUndefined();
      expect(late?.taskId).toBe('retry');
    });
  });

  describe('Method: next (quotas, pools, reservations)', () => {
    it('does not let a tenant at quota block other tenants', () => {
      // Prepare
      const policy = makePolicy({ tenantDefaults: { weight: 1, maxConcurrency: 2 }, pools: { slots: 10 } });
      for (let i = 0; i < 5; i++) policy.add(candidate({ taskId: `a${i}`, tenantId: 'a', priority: 'critical' }));
      policy.add(candidate({ taskId: 'b0', tenantId: 'b', priority: 'low', agingFromMs: 99 }));
      // Act
      const started = drain(policy, 100);
      // Assess
      expect(started.map((c) => c.taskId).sort()).toEqual(['a0', 'a1', 'b0']);
      expect(policy.explain('a2', 100)?.reason).toBe('tenant_quota');
    });

    it('does not let a Fargate task that does not fit block the Lambda pool, or smaller tasks that end before it could start', () => {
      // Prepare: 2 of 4 vCPU run until 300 s; big (4 vCPU) goes first and reserves the pool
      const policy = makePolicy({ pools: { slots: 1, vcpu: 4, memoryMiB: 8 * GB } });
      policy.markActive({
        taskId: 'running',
        tenantId: 'x',
        runtime: 'fargate',
        resources: { vcpu: 2, memoryMiB: 1024 },
        sinceMs: 0,
        holdSeconds: 300,
      });
      policy.add(
        candidate({ taskId: 'big', tenantId: 'big', runtime: 'fargate', resources: { vcpu: 4, memoryMiB: 1024 } }),
      );
      const small = (taskId: string, holdSeconds: number) =>
        candidate({
          taskId,
          tenantId: taskId,
          runtime: 'fargate',
          resources: { vcpu: 1, memoryMiB: 1024 },
          agingFromMs: 5,
          holdSeconds,
        });
      policy.add(small('short', 60));
      policy.add(small('long', 600));
      policy.add(candidate({ taskId: 'fn', tenantId: 'fn', agingFromMs: 9 }));
      // Act
      const started = drain(policy, 10).map((c) => c.taskId);
      // Assess: the short one ends (by 70 s) before big could start (300 s); the long one would delay it
      expect(started.sort()).toEqual(['fn', 'short']);
      expect(policy.explain('big', 10)?.reason).toBe('capacity');
      expect(policy.snapshot(10).pools[1]?.reservedForTaskId).toBe('big');
    });

    it('does not let a large task of a tenant block its smaller tasks behind it', () => {
      // Prepare
      const policy = makePolicy({ pools: { vcpu: 4, memoryMiB: 8 * GB }, reservations: false });
      policy.markActive({
        taskId: 'running',
        tenantId: 'other',
        runtime: 'fargate',
        resources: { vcpu: 3, memoryMiB: 2048 },
      });
      policy.add(
        candidate({ taskId: 'big', tenantId: 'a', runtime: 'fargate', resources: { vcpu: 3, memoryMiB: 2048 } }),
      );
      policy.add(
        candidate({ taskId: 'small', tenantId: 'a', runtime: 'fargate', resources: { vcpu: 0.5, memoryMiB: 1024 } }),
      );
      // Act
      const started = drain(policy, 0).map((c) => c.taskId);
      // Assess
      expect(started).toEqual(['small']);
    });

    it('reserves the pool for a large task at once: it starts when the tasks running then have ended', () => {
      // Prepare: a stream of small 3 s tasks from another tenant keeps the pool partly busy
      const policy = makePolicy({ pools: { vcpu: 4, memoryMiB: 8 * GB } });
      const small = (i: number) =>
        candidate({
          taskId: `s${i}`,
          tenantId: 'small',
          runtime: 'fargate',
          resources: { vcpu: 1, memoryMiB: 512 },
          agingFromMs: Math.max(0, i - 2) * 1000,
          runAtMs: Math.max(0, i - 2) * 1000,
          holdSeconds: 3,
        });
      const ends = new Map<string, number>();
      const log: string[] = [];
      const step = (nowMs: number) => {
        for (const [taskId, at] of ends) {
          if (at > nowMs) continue;
          policy.release(taskId);
          ends.delete(taskId);
        }
        for (const c of drain(policy, nowMs)) {
          log.push(c.taskId);
          ends.set(c.taskId, nowMs + 3000);
        }
      };
      for (let i = 0; i < 3; i++) policy.add(small(i));
      step(0);
      policy.add(
        candidate({ taskId: 'big', tenantId: 'big', runtime: 'fargate', resources: { vcpu: 4, memoryMiB: 1024 } }),
      );
      // Act: a new small task every second
      for (let t = 1; t <= 10 && !log.includes('big'); t++) {
        policy.add(small(t + 2));
        step(t * 1000);
      }
      // Assess: nothing passed it; it started when the three running at its arrival had ended
      expect(log.slice(0, 4)).toEqual(['s0', 's1', 's2', 'big']);
    });
  });

  describe('Method: setTenant', () => {
    it('applies a raised quota to work already queued', () => {
      // Prepare
      const policy = makePolicy({ tenantDefaults: { weight: 1, maxConcurrency: 1 } });
      for (let i = 0; i < 5; i++) policy.add(candidate({ taskId: `a${i}`, tenantId: 'a' }));
      expect(drain(policy, 0)).toHaveLength(1);
      // Act
      policy.setTenant('a', { weight: 1, maxConcurrency: 3 });
      const started = drain(policy, 1);
      // Assess
      expect(started).toHaveLength(2);
    });

    it('applies a changed weight to work already queued', () => {
      // Prepare
      const policy = makePolicy({ pools: { slots: 30 } });
      for (const tenantId of ['a', 'b']) {
        for (let i = 0; i < 40; i++) policy.add(candidate({ taskId: `${tenantId}${i}`, tenantId }));
      }
      // Act
      policy.setTenant('b', { weight: 2, maxConcurrency: 1000 });
      const started = drain(policy, 0);
      // Assess
      expect(countBy(started, (c) => c.tenantId)).toEqual({ a: 10, b: 20 });
    });
  });

  describe('Method: add / remove / markActive / release', () => {
    it('is idempotent on taskId and counts waiting and active tasks', () => {
      // Prepare
      const policy = makePolicy({});
      // Act
      const first = policy.add(candidate({ taskId: 'x' }));
      const again = policy.add(candidate({ taskId: 'x' }));
      policy.markActive({ taskId: 'x', tenantId: 't1', runtime: 'lambda', resources: { vcpu: 1, memoryMiB: 1 } });
      const addWhileActive = policy.add(candidate({ taskId: 'x' }));
      // Assess
      expect([first, again, addWhileActive]).toEqual([true, false, false]);
      expect([policy.waitingCount, policy.activeCount]).toEqual([0, 1]);
      expect(policy.release('x')).toBe(true);
      expect(policy.release('x')).toBe(false);
      expect(policy.activeCount).toBe(0);
    });

    it('forgets a removed task and never dispatches it', () => {
      // Prepare
      const policy = makePolicy({});
      policy.add(candidate({ taskId: 'gone' }));
      policy.add(candidate({ taskId: 'later', runAtMs: 50 }));
      // Act
      const removed = [policy.remove('gone'), policy.remove('later'), policy.remove('never')];
      // Assess
      expect(removed).toEqual([true, true, false]);
      expect(drain(policy, 100)).toEqual([]);
      expect(policy.explain('gone', 100)).toBeUndefined();
    });

    it('keeps a task bigger than its whole pool aside, explained, without blocking its tenant', () => {
      // Prepare
      const policy = makePolicy({ pools: { vcpu: 2, memoryMiB: 4096 } });
      policy.add(candidate({ taskId: 'huge', runtime: 'fargate', resources: { vcpu: 8, memoryMiB: 1024 } }));
      policy.add(
        candidate({ taskId: 'ok', runtime: 'fargate', resources: { vcpu: 1, memoryMiB: 1024 }, agingFromMs: 1 }),
      );
      // Act
      const started = drain(policy, 1);
      // Assess
      expect(started.map((c) => c.taskId)).toEqual(['ok']);
      expect(policy.explain('huge', 1)).toMatchObject({ reason: 'capacity', waitBoundSeconds: null });
      expect(policy.snapshot(1).unschedulable).toBe(1);
    });
  });

  describe('Method: explain', () => {
    it('names each reason a task waits', () => {
      // Prepare
      const policy = makePolicy({
        policy: 'fair-share',
        pools: { slots: 2 },
        tenantDefaults: { weight: 1, maxConcurrency: 5 },
      });
      policy.add(candidate({ taskId: 'delayed', runAtMs: 10_000 }));
      policy.add(candidate({ taskId: 'queued', tenantId: 'a', priority: 'low' }));
      // Act
      const beforeRun = policy.explain('queued', 0);
      policy.add(candidate({ taskId: 'hi', tenantId: 'a', priority: 'high' }));
      const behindHigher = policy.explain('queued', 0); // its own tenant's higher tier goes first
      policy.remove('hi');
      policy.add(candidate({ taskId: 'b-first', tenantId: 'b', priority: 'low', agingFromMs: 0 }));
      policy.add(candidate({ taskId: 'c-later', tenantId: 'c', priority: 'critical', agingFromMs: 1 }));
      const inRotation = policy.explain('c-later', 1); // a and b joined the rotation before c, whatever the tier
      policy.remove('c-later');
      policy.markActive({ taskId: 'r1', tenantId: 'a', runtime: 'lambda', resources: { vcpu: 1, memoryMiB: 1 } });
      const behindLighter = policy.explain('queued', 1);
      policy.markActive({ taskId: 'r2', tenantId: 'c', runtime: 'lambda', resources: { vcpu: 1, memoryMiB: 1 } });
      const full = policy.explain('queued', 1);
      // Assess
      expect(policy.explain('delayed', 0)?.reason).toBe('delayed');
      expect(beforeRun?.reason).toBe('queue'); // nothing ranks ahead of it: not "priority"
      expect(behindHigher?.reason).toBe('priority');
      expect(inRotation).toMatchObject({
        reason: 'fair_share',
        message: "2 tenants ahead of c in the lambda pool's rotation go first, one task each",
      });
      expect(behindLighter?.reason).toBe('fair_share');
      expect(full).toMatchObject({ reason: 'capacity', baseTier: 'low', effectiveTier: 'low' });
      expect(full?.waitBoundSeconds).toBeGreaterThan(0);
    });
  });

  describe('Method: explain (only what is true)', () => {
    it('says priority only when work of a higher effective tier is ahead, and older work of its tier otherwise', () => {
      // Prepare
      const policy = makePolicy({ policy: 'priority', pools: { slots: 1 }, agingSeconds: 60 });
      policy.markActive({ taskId: 'running', tenantId: 'x', runtime: 'lambda', resources: SMALL });
      policy.add(candidate({ taskId: 'older', tenantId: 'a', priority: 'normal', agingFromMs: 0 }));
      policy.add(candidate({ taskId: 'fresh', tenantId: 'b', priority: 'normal', agingFromMs: 1000 }));
      policy.release('running');
      // Act: the pool has room for one; "older" goes first, same tier
      const sameTier = policy.explain('fresh', 1000);
      policy.add(candidate({ taskId: 'urgent', tenantId: 'c', priority: 'critical', agingFromMs: 2000 }));
      const higherTier = policy.explain('fresh', 2000);
      // Assess
      expect(sameTier).toMatchObject({ reason: 'queue', message: 'Older work of its tier is ahead of it' });
      expect(higherTier).toMatchObject({
        reason: 'priority',
        message: 'Work of a higher tier (critical) is ahead of it',
      });
    });

    it('says tenant_quota under every policy, with a bound', () => {
      for (const name of ['fifo', 'priority', 'fair-share'] as const) {
        // Prepare
        const policy = makePolicy({ policy: name, tenantDefaults: { weight: 1, maxConcurrency: 1 } });
        policy.add(candidate({ taskId: 'first', tenantId: 'a' }));
        policy.add(candidate({ taskId: 'second', tenantId: 'a' }));
        drain(policy, 0);
        // Act
        const wait = policy.explain('second', 0);
        // Assess
        expect(wait?.reason).toBe('tenant_quota');
        expect(wait?.waitBoundSeconds).toBeGreaterThan(0);
      }
    });
  });

  describe('Method: snapshot', () => {
    it('reports usage, weighted dominant share and entitlement per tenant', () => {
      // Prepare
      const policy = makePolicy({
        pools: { slots: 10, vcpu: 8, memoryMiB: 8192 },
        tenants: { heavy: { weight: 3, maxConcurrency: 10 } },
      });
      policy.markActive({
        taskId: 'f',
        tenantId: 'heavy',
        runtime: 'fargate',
        resources: { vcpu: 4, memoryMiB: 1024 },
      });
      policy.markActive({ taskId: 'l', tenantId: 'light', runtime: 'lambda', resources: { vcpu: 1, memoryMiB: 1 } });
      policy.add(candidate({ taskId: 'q', tenantId: 'light', runAtMs: 99 }));
      // Act
      const snapshot = policy.snapshot(0);
      // Assess
      const heavy = snapshot.tenants.find((t) => t.tenantId === 'heavy');
      const light = snapshot.tenants.find((t) => t.tenantId === 'light');
      expect(heavy).toMatchObject({
        active: 1,
        queued: 0,
        usage: { lambdaSlots: 0, vcpu: 4, memoryMiB: 1024 },
        entitlement: 0.75,
      });
      expect(heavy?.weightedDominantShare).toBeCloseTo(0.5 / 3);
      expect(light).toMatchObject({ active: 1, queued: 1, weightedDominantShare: 0.1, entitlement: 0.25 });
      expect(snapshot.pools[1]).toMatchObject({ used: { vcpu: 4, memoryMiB: 1024 }, reservedForTaskId: null });
    });

    it("names a tenant's one waiting task only when it has one and that one is in its pool's rotation", () => {
      // Prepare: `one` has a task due; `two` has two; `later` has one not due until 50 s
      const policy = makePolicy({});
      policy.add(candidate({ taskId: 'a', tenantId: 'one' }));
      policy.add(candidate({ taskId: 'b', tenantId: 'two' }));
      policy.add(candidate({ taskId: 'c', tenantId: 'two' }));
      policy.add(candidate({ taskId: 'd', tenantId: 'later', runAtMs: 50_000 }));
      // Act
      const byTenant = new Map(policy.snapshot(0).tenants.map((t) => [t.tenantId, t]));
      // Assess: a count of one alone would not say which task is waiting (the API's bound needs to know)
      expect(byTenant.get('one')?.waitingTaskId).toBe('a');
      expect(byTenant.get('two')?.waitingTaskId).toBeUndefined();
      expect(byTenant.get('later')).toMatchObject({ queued: 1 });
      expect(byTenant.get('later')?.waitingTaskId).toBeUndefined();
      // Once due, it is in the rotation
      expect(new Map(policy.snapshot(60_000).tenants.map((t) => [t.tenantId, t])).get('later')?.waitingTaskId).toBe(
        'd',
      );
    });

    it("publishes the one waiting task's turn: its due time, or when its tenant was last served there if later", () => {
      // Prepare: 1 slot; `x` has two tasks due at 1 s, `y` one due at 0; y's goes first, then one of x's at 2 s
      const policy = makePolicy({ pools: { slots: 1 } });
      policy.add(candidate({ taskId: 'y1', tenantId: 'y' }));
      policy.add(candidate({ taskId: 'x1', tenantId: 'x', agingFromMs: 1000, runAtMs: 1000 }));
      policy.add(candidate({ taskId: 'x2', tenantId: 'x', agingFromMs: 1000, runAtMs: 1000 }));
      expect(drain(policy, 1000).map((c) => c.taskId)).toEqual(['y1']);
      policy.release('y1', 2000);
      expect(drain(policy, 2000).map((c) => c.taskId)).toEqual(['x1']);
      // Act
      const x = policy.snapshot(2500).tenants.find((t) => t.tenantId === 'x');
      // Assess: x2 was due at 1 s, but x's turn is 2 s (served then)
      expect(x).toMatchObject({ waitingTaskId: 'x2', waitingTurnMs: 2000 });
    });
  });
});
