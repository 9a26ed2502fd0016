import { describe, expect, it } from 'vitest';
import { explainWait, needsRunningTasks } from '../../runtime/app/wait.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { createTask } from '../../runtime/core/lifecycle.ts';
import type { SchedulerSnapshot } from '../../runtime/core/scheduler-snapshot.ts';
import type { NewTaskSpec, PriorityTier } from '../../runtime/core/task.ts';
import { taskSpec } from '../helpers/factories.ts';

const T0 = new Date('2026-01-01T00:00:00Z');
const config = parseConfig({
  agingSeconds: 60,
  pools: { lambda: { concurrency: 4 }, fargate: { vcpu: 2, memoryMiB: 4096 } },
  scheduler: { dispatchLeaseSeconds: 30, runLeaseSeconds: 30, bufferSize: 100 },
});
const tenant = { weight: 1, maxConcurrency: 2 };
const task = (priority: PriorityTier, extra: Partial<NewTaskSpec> = {}) =>
  createTask('t1', taskSpec({ priority, ...extra }), T0);
const leader = (
  overrides: Partial<{ taskId: string; tenantId: string; weightedShare: number; effectiveRank: number }>,
) => ({
  taskId: 'other',
  tenantId: 'acme',
  weightedShare: 0.25,
  effectiveRank: 2,
  ...overrides,
});
const snapshot = (overrides: Partial<SchedulerSnapshot> = {}): SchedulerSnapshot => ({
  at: T0.toISOString(),
  policy: 'fair-share',
  pools: { lambda: { used: 1, capacity: 4 }, fargate: { vcpuUsed: 0, vcpu: 2, memoryMiBUsed: 0, memoryMiB: 4096 } },
  tiers: {
    critical: { waiting: 3, oldestWaitSeconds: 5 },
    high: { waiting: 0, oldestWaitSeconds: 0 },
    normal: { waiting: 2, oldestWaitSeconds: 5 },
    low: { waiting: 9, oldestWaitSeconds: 5 },
  },
  tenants: { acme: { running: 1, queued: 5, weight: 1, maxConcurrency: 2, dominantShare: 0.25, entitlement: 0.5 } },
  dispatchRate: 1,
  queue: { lambda: { leader: leader({}), heldForTaskId: null }, fargate: { leader: null, heldForTaskId: null } },
  ...overrides,
});
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
/** A running Lambda task's shape as the describe reads it (its pool and size count in its tenant's share). */
const LAMBDA_TASK = { runtime: 'lambda' as const, resources: { vcpu: 0.25, memoryMiB: 512 } };

describe('Function: explainWait (API, over the published snapshot)', () => {
  it('says a task scheduled later is delayed', () => {
    const wait = explainWait(task('normal', { runAt: at(600) }), { config, tenant, snapshot: snapshot(), now: at(10) });
    expect(wait).toMatchObject({ reason: 'delayed', effectiveTier: 'normal' });
  });

  it('says a tenant at its quota waits for its own tasks, under every policy', () => {
    const busy = snapshot({
      tenants: { acme: { running: 2, queued: 5, weight: 1, maxConcurrency: 2, dominantShare: 0.5, entitlement: 0.5 } },
    });
    for (const policy of ['fifo', 'priority', 'fair-share'] as const) {
      const wait = explainWait(task('normal'), { config: { ...config, policy }, tenant, snapshot: busy, now: at(10) });
      expect(wait.reason).toBe('tenant_quota');
    }
  });

  it('says a full pool is the reason when the tenant has room', () => {
    const full = snapshot({
      pools: { lambda: { used: 4, capacity: 4 }, fargate: { vcpuUsed: 0, vcpu: 2, memoryMiBUsed: 0, memoryMiB: 4096 } },
    });
    expect(explainWait(task('normal'), { config, tenant, snapshot: full, now: at(10) }).reason).toBe('capacity');
  });

  it("says its shard's allowance is the reason when that is full and the pool is not (sharded)", () => {
    // Prepare: this shard uses 2 of the 2 slots it may fill of the pool's 4
    const sliced = snapshot({
      pools: {
        lambda: { used: 2, capacity: 4, allowance: 2 },
        fargate: { vcpuUsed: 0, vcpu: 2, memoryMiBUsed: 0, memoryMiB: 4096 },
      },
    });
    // Act
    const wait = explainWait(task('normal'), { config, tenant, snapshot: sliced, now: at(10) });
    // Assess
    expect(wait.reason).toBe('capacity');
    expect(wait.message).toBe(
      "Its scheduler shard's allowance of the lambda pool is in use (the other shards hold the rest, by their demand)",
    );
  });

  it('says a Fargate pool held for another task is the reason', () => {
    const held = snapshot({
      queue: { lambda: { leader: null, heldForTaskId: null }, fargate: { leader: null, heldForTaskId: 'big' } },
    });
    const wait = explainWait(task('normal', { runtime: 'fargate', resources: { vcpu: 1, memoryMiB: 512 } }), {
      config,
      tenant,
      snapshot: held,
      now: at(10),
    });
    expect(wait.reason).toBe('capacity');
    expect(wait.message).toMatch(/held for a larger task/);
  });

  it('says fair share when a lighter tenant goes first', () => {
    const greedy = snapshot({
      tenants: { acme: { running: 1, queued: 5, weight: 1, maxConcurrency: 9, dominantShare: 0.75, entitlement: 0.5 } },
      queue: {
        lambda: { leader: leader({ tenantId: 'quiet', weightedShare: 0 }), heldForTaskId: null },
        fargate: { leader: null, heldForTaskId: null },
      },
    });
    const wait = explainWait(task('normal'), {
      config,
      tenant: { weight: 1, maxConcurrency: 9 },
      snapshot: greedy,
      now: at(10),
    });
    expect(wait.reason).toBe('fair_share');
  });

  it('says priority only when work of a higher tier goes first', () => {
    const sameTier = explainWait(task('normal'), { config, tenant, snapshot: snapshot(), now: at(4) });
    const higher = snapshot({
      queue: {
        lambda: { leader: leader({ effectiveRank: 0 }), heldForTaskId: null },
        fargate: { leader: null, heldForTaskId: null },
      },
    });
    const behindHigher = explainWait(task('normal'), { config, tenant, snapshot: higher, now: at(4) });
    expect(sameTier).toMatchObject({ reason: 'queue', message: 'Older work of its tier is ahead of it' });
    expect(behindHigher).toMatchObject({
      reason: 'priority',
      message: 'Work of a higher tier (critical) is ahead of it',
    });
  });

  it('ages one tier per agingSeconds, and gives no bound without the tenant facts the describe reads', () => {
    // A low task (rank 3) that waited 130 s with agingSeconds 60 competes as high and reaches
    // critical at 180 s.
    const wait = explainWait(task('low'), { config, tenant, snapshot: snapshot(), now: at(130) });
    expect(wait).toMatchObject({ effectiveTier: 'high', secondsToTopTier: 50, maxWaitSeconds: null });
    expect(wait.noBound?.code).toBe('ahead_unknown');
  });

  it('says so before any scheduler has published a snapshot', () => {
    const wait = explainWait(task('normal'), { config, tenant, snapshot: undefined, now: at(1) });
    expect(wait).toMatchObject({ reason: 'queue', maxWaitSeconds: null });
    expect(wait.message).toMatch(/not reported what is ahead/);
  });

  describe('the wait bound (fair-share, runtime/core/policy/bound.ts)', () => {
    // τ for a Lambda task not yet dispatched: the cap 900 s + dispatch lease 30 s + run lease 30 s.
    const TAU = 960;
    const rotation = (overrides: Partial<NonNullable<SchedulerSnapshot['rotation']>['lambda']> = {}) => ({
      lambda: {
        waiting: 3,
        joinedLastMinute: 1,
        freeBy: [
          [1, 10],
          [2, 20],
          [4, 30],
        ] as [number, number][],
        reservedFor: null,
        ...overrides,
      },
      fargate: { waiting: 0, joinedLastMinute: 0, freeBy: [[1, 0]] as [number, number][], reservedFor: null },
      busyFor: {},
      complete: true,
    });
    const inRotation = (at6: number) =>
      snapshot({
        at: at(at6).toISOString(),
        tenants: {
          acme: {
            running: 0,
            queued: 1,
            weight: 1,
            maxConcurrency: 2,
            dominantShare: 0,
            entitlement: 0.5,
            waitingTaskId: 't1',
          },
        },
        rotation: rotation(),
      });

    it("gives no number with sharded schedulers, and says why: the shard's allowance follows the others' demand", () => {
      const sharded = { ...config, scheduler: { ...config.scheduler, shards: 2 } };
      const wait = explainWait(task('normal'), {
        config: sharded,
        tenant,
        snapshot: inRotation(6),
        now: at(7),
        facts: { waiting: 1 },
      });
      expect(wait.maxWaitSeconds).toBeNull();
      expect(wait.assumes).toBeUndefined();
      expect(wait.noBound?.code).toBe('sharded');
      // The same task with one scheduler gets its number (the next test says which).
      expect(
        explainWait(task('normal'), { config, tenant, snapshot: inRotation(6), now: at(7), facts: { waiting: 1 } })
          .maxWaitSeconds,
      ).not.toBeNull();
    });

    it("gives a tenant's only waiting task a number from the snapshot it was in: one task per tenant ahead", () => {
      // Prepare: submitted at 0, in the snapshot of 6 s (3 tenants waiting: 2 ahead), described at 7 s.
      // Act
      const wait = explainWait(task('normal'), {
        config,
        tenant,
        snapshot: inRotation(6),
        now: at(7),
        facts: { waiting: 1 },
      });
      // Assess: the 3rd slot frees by 6 + 30 s (2 tenants ahead, 4 slots); + 2 s pace + one 5 s handover
      expect(wait.maxWaitSeconds).toBe(29 + 2 + 5);
      expect(wait.assumes).toMatch(
        /2 other tenants waiting in the lambda pool at the scheduler's snapshot of 00:00:06 UTC/,
      );
      expect(wait.assumes).toMatch(/its tenant submits nothing more/);
    });

    it("takes it to be in the rotation at the snapshot only when the snapshot names it, not from its tenant's count", () => {
      // Prepare: the snapshot lists acme with one waiting task, but that one is another of its tasks
      // (taken in before this one was): this task may not be in the engine yet.
      const other = inRotation(6);
      const acme = other.tenants.acme as NonNullable<(typeof other.tenants)['acme']>;
      const someoneElse = snapshot({ ...other, tenants: { acme: { ...acme, waitingTaskId: 'another' } } });
      // Act
      const named = explainWait(task('normal'), {
        config,
        tenant,
        snapshot: other,
        now: at(7),
        facts: { waiting: 1 },
      });
      const unnamed = explainWait(task('normal'), {
        config,
        tenant,
        snapshot: someoneElse,
        now: at(7),
        facts: { waiting: 1, running: [] },
      });
      // Assess: only the named one is answered from the snapshot's instant; the other as joining later
      expect(needsRunningTasks(task('normal'), other, config)).toBe(false);
      expect(needsRunningTasks(task('normal'), someoneElse, config)).toBe(true);
      // Named, but due less than the intake allowance (5 s) before the snapshot: a task of another
      // tenant due before it (an earlier turn) may not be in the snapshot yet, so not from there
      expect(needsRunningTasks(task('normal'), inRotation(4), config)).toBe(true);
      expect(named.assumes).toMatch(/waiting in the lambda pool at the scheduler's snapshot/);
      expect(unnamed.assumes).toMatch(/the scheduler takes it in within 5 s of its being due/);
      expect(unnamed.assumedJoins).toBeDefined();
      expect(unnamed.maxWaitSeconds as number).toBeGreaterThan(named.maxWaitSeconds as number);
    });

    it("takes it to be in the rotation from its tenant's turn, not its due time: a tenant served since has its turn then", () => {
      // Prepare: due at 0, named in the snapshot of 6 s, but its tenant's other task started at
      // 5.5 s, so its turn is 5.5 s: a task of another tenant due at 3 s and taken in at 6.5 s (the
      // intake lags a second or two) has the earlier turn and goes first, and the snapshot missed it.
      const named = inRotation(6);
      const acme = named.tenants.acme as NonNullable<(typeof named.tenants)['acme']>;
      const servedSince = snapshot({
        ...named,
        tenants: { acme: { ...acme, waitingTurnAt: at(5.5).toISOString() } },
      });
      const turnLongAgo = snapshot({ ...named, tenants: { acme: { ...acme, waitingTurnAt: at(0.5).toISOString() } } });
      // Act
      const wait = explainWait(task('normal'), {
        config,
        tenant,
        snapshot: servedSince,
        now: at(7),
        facts: { waiting: 1, running: [] },
      });
      // Assess: answered as joining later (the tenants that may have joined since counted), not from the snapshot
      expect(needsRunningTasks(task('normal'), servedSince, config)).toBe(true);
      expect(wait.assumes).toMatch(/the scheduler takes it in within 5 s of its being due/);
      expect(wait.assumedJoins).toBeDefined();
      // A turn 5 s or more before the snapshot is as before
      expect(needsRunningTasks(task('normal'), turnLongAgo, config)).toBe(false);
      expect(needsRunningTasks(task('normal'), named, config)).toBe(false);
    });

    it('counts the tenants that may have joined since, and every slot refilled, for a task the snapshot predates', () => {
      // Prepare: submitted at 0, the snapshot of 0 s does not hold it, described at 1 s.
      const stale = snapshot({ rotation: rotation() });
      // Act
      const wait = explainWait(task('normal'), {
        config,
        tenant,
        snapshot: stale,
        now: at(1),
        facts: { waiting: 1, running: [] },
      });
      // Assess: it joins by 5 s; 3 + 1 tenants ahead on 4 slots: every slot frees by 5 s + τ, then
      // once more within τ (2 rounds: 2 × 2 s pace)
      const core = 4 + 2 * TAU;
      expect(wait.maxWaitSeconds).toBe(core + 4 + 5 * Math.ceil((core + 4) / 55));
      expect(wait.assumes).toMatch(/no more tenants start waiting in the lambda pool .* than the 1 that did/);
    });

    it("waits for its tenant's running tasks first: they end at their own timeouts", () => {
      // Prepare: its tenant runs a task dispatched at 0 with a 100 s timeout
      const stale = snapshot({ rotation: rotation({ waiting: 0, joinedLastMinute: 0 }) });
      const running = [
        { ...LAMBDA_TASK, dispatchedAt: at(0).toISOString(), runAt: at(0).toISOString(), timeoutSeconds: 100 },
      ];
      // Act
      const wait = explainWait(task('normal'), {
        config,
        tenant,
        snapshot: stale,
        now: at(1),
        facts: { waiting: 1, running },
      });
      // Assess: its tenant runs nothing by 160 s (100 + leases); every slot frees by then + τ
      const core = 160 + TAU - 1;
      expect(wait.maxWaitSeconds).toBe(core + 2 + 5 * Math.ceil((core + 2) / 55));
    });

    it("rests on the pool's pace when that is sooner, and says what it assumed", () => {
      // Prepare: as above (3 + 1 tenants ahead), the pool freeing at least 2 slots a second
      const paced = snapshot({ rotation: rotation({ freedPerSecond: 2 }) });
      // Act
      const wait = explainWait(task('normal'), {
        config,
        tenant,
        snapshot: paced,
        now: at(1),
        facts: { waiting: 1, running: [] },
      });
      // Assess: it joins by 5 s; 5 slots freed at 2 a second take 2.5 s; one round of pace (2 s) and
      // one handover (5 s): 4 + 2.5 + 2 + 5 from now (1 s), where the timeout bound says 2,108 s
      expect(wait.maxWaitSeconds).toBe(13.5);
      const core = 4 + 2 * TAU;
      expect(wait.worstCaseSeconds).toBe(core + 4 + 5 * Math.ceil((core + 4) / 55));
      expect(wait.assumedFreed).toEqual({ slots: 5, from: at(5).toISOString(), by: at(7.5).toISOString() });
      expect(wait.assumes).toMatch(/the lambda pool keeps freeing slots at least at 2 a second/);
      expect(wait.assumes).not.toMatch(/every task holds its pool at most its timeout/);
    });

    it('counts no handovers under a long-lived scheduler (scheduler.mode "service")', () => {
      // Prepare: as two cases above, the scheduler running as a service
      const service = parseConfig({ ...config, scheduler: { ...config.scheduler, mode: 'service' } });
      // Act
      const wait = explainWait(task('normal'), {
        config: service,
        tenant,
        snapshot: snapshot({ rotation: rotation({ freedPerSecond: 2 }) }),
        now: at(1),
        facts: { waiting: 1, running: [] },
      });
      // Assess: 4 + 2.5 + 2 s of pace, no handover; the timeout bound without its 36 handovers
      expect(wait.maxWaitSeconds).toBe(8.5);
      expect(wait.worstCaseSeconds).toBe(4 + 2 * TAU + 4);
      expect(wait.assumes).toMatch(/its replacement \(a deploy\) is not included/);
    });

    it("counts only the handovers its scheduler planned within the wait (a Lambda's published end)", () => {
      // Prepare: as the pace case above; the scheduler (snapshot at 0) hands over at 30 s, each run 285 s
      const planned = (inSeconds: number, at0 = 0) =>
        snapshot({
          at: at(at0).toISOString(),
          rotation: { ...rotation({ freedPerSecond: 2 }), handover: { inSeconds, everySeconds: 285 } },
        });
      const ask = (snap: SchedulerSnapshot, nowSeconds = 1) =>
        explainWait(task('normal'), {
          config,
          tenant,
          snapshot: snap,
          now: at(nowSeconds),
          facts: { waiting: 1, running: [] },
        });
      // Act
      const beforeIt = ask(planned(30));
      const reachesIt = ask(planned(8));
      const underWay = ask(planned(0, -4), 1);
      const staleSnapshot = ask(planned(30, -20), 1);
      // Assess: by 13.5 s with a handover per started minute (the pace case above); the wait of
      // 8.5 s ends (at 9.5 s) before the handover at 30 s: none counted. At 8 s it reaches it: one (5 s).
      expect(beforeIt.maxWaitSeconds).toBe(8.5);
      expect(beforeIt.assumes).toMatch(/hands over at 00:00:30 UTC and then no more often than every 285 s/);
      expect(reachesIt.maxWaitSeconds).toBe(13.5);
      // A handover planned before now may be under way: counted at once.
      expect(underWay.maxWaitSeconds).toBe(13.5);
      // A snapshot 21 s old may be from a scheduler that stopped: one per started minute again.
      expect(staleSnapshot.assumes).toMatch(/hands over \(every minute on AWS\)/);
      // The timeout bound counts the same way: 4 + 2τ + 4 s of pace = 1,928 s from now (1 s) reaches the
      // handovers at 30, 315, ..., 1,740 s (each lengthening it 5 s): 7, where minutes gave 36.
      expect(beforeIt.worstCaseSeconds).toBe(4 + 2 * TAU + 4 + 7 * 5);
    });

    it("takes its tenant's running task to end as its tasks did lately, on the pace, and says so", () => {
      // Prepare: its tenant's task runs since 0 (timeout 100 s); its tasks ran at most 3 s lately
      const paced = snapshot({
        tenants: {
          acme: {
            running: 1,
            queued: 1,
            weight: 1,
            maxConcurrency: 2,
            dominantShare: 0.25,
            entitlement: 0.5,
            longestRunSeconds: 3,
          },
        },
        rotation: rotation({ waiting: 0, joinedLastMinute: 0, freedPerSecond: 2 }),
      });
      const running = [
        { ...LAMBDA_TASK, dispatchedAt: at(0).toISOString(), runAt: at(0).toISOString(), timeoutSeconds: 100 },
      ];
      const input = { config, tenant, snapshot: paced, now: at(1), facts: { waiting: 1, running } };
      // Act
      const wait = explainWait(task('normal'), input);
      const overran = explainWait(task('normal'), { ...input, now: at(4) });
      // Assess: it joins by 5 s (its task ended by 3 s); 1 slot at 2 a second: by 5.5 s, + 2 s + 5 s
      expect(wait.maxWaitSeconds).toBe(11.5);
      expect(wait.assumedFreed).toEqual({
        slots: 1,
        from: at(5).toISOString(),
        by: at(5.5).toISOString(),
        tenantFreeBy: at(5).toISOString(),
      });
      expect(wait.assumes).toMatch(/its tenant's running tasks have all ended by .*, none running longer than/);
      // Asked at 4 s, its task has run longer than any did lately: its timeout counts (160 s)
      expect(overran.assumedFreed?.tenantFreeBy).toBeUndefined();
      expect(overran.assumedFreed?.from).toBe(at(160).toISOString());
    });

    it("does not wait for its tenant's running tasks on the pace while its tenant stays below its fair share, and says so", () => {
      // Prepare: its tenant runs a task since 0 (timeout 100 s, nothing known of how long its tasks
      // run): 1 of 4 slots, a share of 0.25. At most `peak` weight of tenants had work lately.
      const running = [
        { ...LAMBDA_TASK, dispatchedAt: at(0).toISOString(), runAt: at(0).toISOString(), timeoutSeconds: 100 },
      ];
      const ask = (peak: number | null, quota = 2) =>
        explainWait(task('normal'), {
          config,
          tenant: { ...tenant, maxConcurrency: quota },
          snapshot: snapshot({
            tenants: {},
            rotation: {
              ...rotation({ waiting: 0, joinedLastMinute: 0, freedPerSecond: 2 }),
              busyWeightPeak: peak,
            },
          }),
          now: at(1),
          facts: { waiting: 1, running },
        });
      // Act
      const below = ask(3);
      // Assess: 0.25 under 1/3: from its join at 5 s, 1 slot at 2 a second: by 5.5 s, + 2 s + 5 s
      expect(below.maxWaitSeconds).toBe(11.5);
      expect(below.assumedFreed).toEqual({ slots: 1, from: at(5).toISOString(), by: at(5.5).toISOString() });
      expect(below.assumedBusyWeight).toEqual({ atMost: 3, from: at(5).toISOString(), by: at(5.5).toISOString() });
      expect(below.assumes).toMatch(/its tenant stays below its fair share while it waits/);
      // At its fair share (0.25 of 1/4), with none known lately, or at its quota: its task's timeout counts (160 s)
      for (const other of [ask(4), ask(null), ask(3, 1)]) {
        expect(other.assumedBusyWeight).toBeUndefined();
        expect(other.assumedFreed?.from).toBe(at(160).toISOString());
      }
    });

    it("rests on the pool's headroom at light load: the first round after it joins, whatever its tenant runs", () => {
      // Prepare: 4 slots, at most 1 in use lately; its tenant runs a task (timeout 100 s); 1 other
      // tenant waits at the snapshot of 6 s (which names this task), the pool freed nothing lately.
      const named = inRotation(6);
      const acme = named.tenants.acme as NonNullable<(typeof named.tenants)['acme']>;
      const light = (peakUsed: number | null, waiting = 2) =>
        snapshot({
          ...named,
          tenants: { acme: { ...acme, running: 1 } },
          rotation: {
            ...rotation({ waiting, joinedLastMinute: 0, peakUsed }),
            busyFor: { acme: 154 },
            handover: { inSeconds: 200, everySeconds: 285 },
          },
        });
      const ask = (snap: SchedulerSnapshot, hold?: Parameters<typeof explainWait>[1]['hold']) =>
        explainWait(task('normal'), { config, tenant, snapshot: snap, now: at(7), facts: { waiting: 1 }, hold });
      // Act
      const roomy = ask(light(1));
      const full = ask(light(3));
      const unknown = ask(light(null));
      const rated = ask(light(1), {
        constraint: 'rate',
        rate: { perSecond: 1, burst: 1 },
        nextStartMs: at(8).getTime(),
      });
      // Assess: one round (2 s) from now, no handover reached (the next is at 206 s); without the
      // headroom the bound waits for its tenant's task (160 s) and a slot refilled after it
      expect(roomy.maxWaitSeconds).toBe(2);
      expect(roomy.assumedHeadroom).toEqual({
        slots: 4,
        from: at(6).toISOString(),
        by: at(9).toISOString(),
        peakUsed: 1,
      });
      expect(roomy.worstCaseSeconds).toBe(full.maxWaitSeconds);
      expect(full.maxWaitSeconds as number).toBeGreaterThan(160);
      expect(roomy.assumes).toMatch(/the lambda pool keeps a free slot from .* until it starts: fewer than 4 tasks/);
      expect(roomy.assumes).toMatch(/at most 1 in use in any 10 s of the last minute/);
      // 3 in use lately + 1 tenant ahead + itself is more than 4: not on headroom
      expect(full.assumedHeadroom).toBeUndefined();
      expect(unknown.assumedHeadroom).toBeUndefined();
      // Held by its start rate, it waits for a token the headroom does not give
      expect(rated.assumedHeadroom).toBeUndefined();
      // At its tenant's quota (2) it waits for its tenant's own task, however empty the pool: as the
      // snapshot counts them, or as read with a task the snapshot predates
      const atQuota = light(1, 1);
      const atQuotaNamed = snapshot({ ...atQuota, tenants: { acme: { ...acme, running: 2 } } });
      expect(ask(atQuotaNamed).assumedHeadroom).toBeUndefined();
      const predates = snapshot({ ...atQuota, tenants: {} });
      const running = (n: number) =>
        Array.from({ length: n }, () => ({
          ...LAMBDA_TASK,
          dispatchedAt: at(0).toISOString(),
          runAt: at(0).toISOString(),
          timeoutSeconds: 100,
        }));
      const joining = (n: number) =>
        explainWait(task('normal'), {
          config,
          tenant,
          snapshot: predates,
          now: at(7),
          facts: { waiting: 1, running: running(n) },
        });
      expect(joining(1).assumedHeadroom).toBeDefined();
      expect(joining(2).assumedHeadroom).toBeUndefined();
      // Named by a snapshot taken 4 s after it was due (too soon to count the others from there),
      // it was in the engine then: the headroom answer runs from the snapshot, not from its join at 5 s
      const recent = inRotation(4);
      const early = snapshot({
        ...recent,
        rotation: {
          ...rotation({ waiting: 1, joinedLastMinute: 0, peakUsed: 1 }),
          handover: { inSeconds: 200, everySeconds: 285 },
        },
      });
      const fromSnapshot = explainWait(task('normal'), {
        config,
        tenant,
        snapshot: early,
        now: at(4.5),
        facts: { waiting: 1, running: [] },
      });
      expect(fromSnapshot.maxWaitSeconds).toBe(2);
      expect(fromSnapshot.assumedHeadroom?.from).toBe(at(4).toISOString());
    });

    it('gives none from the snapshot of a scheduler that has just taken over and not yet taken in the waiting work', () => {
      // A task due before this one but taken in after the snapshot has the earlier turn, uncounted.
      const settling = (resumedSecondsBefore: number, unread: number) => {
        const named = inRotation(6);
        return snapshot({
          ...named,
          rotation: {
            ...(named.rotation as NonNullable<SchedulerSnapshot['rotation']>),
            resumedAt: at(6 - resumedSecondsBefore).toISOString(),
            unread,
          },
        });
      };
      const ask = (snap: SchedulerSnapshot) =>
        explainWait(task('normal'), { config, tenant, snapshot: snap, now: at(7), facts: { waiting: 1, running: [] } });
      // Resumed 2 s before the snapshot: its predecessor's announcements may not be in yet
      expect(ask(settling(2, 0))).toMatchObject({ maxWaitSeconds: null, noBound: { code: 'ahead_unknown' } });
      expect(ask(settling(2, 0)).noBound?.message).toMatch(/just taken over/);
      // Resumed 6 s before, but a restored tenant-tier not read yet
      expect(ask(settling(6, 1)).maxWaitSeconds).toBeNull();
      // Resumed 6 s before, everything read: answered as before
      expect(ask(settling(6, 0)).maxWaitSeconds).toBe(ask(inRotation(6)).maxWaitSeconds);
    });

    it('gives none to a task whose tenant has other work waiting, or under priority', () => {
      const backlog = explainWait(task('normal'), {
        config,
        tenant,
        snapshot: inRotation(6),
        now: at(7),
        facts: { waiting: 2 },
      });
      const priority = explainWait(task('normal'), {
        config: { ...config, policy: 'priority' },
        tenant,
        snapshot: inRotation(6),
        now: at(7),
        facts: { waiting: 1 },
      });
      expect(backlog).toMatchObject({ maxWaitSeconds: null, noBound: { code: 'tenant_backlog' } });
      expect(priority).toMatchObject({ maxWaitSeconds: null, noBound: { code: 'ahead_unknown' } });
      expect(backlog.assumes).toBeUndefined();
    });
  });
});
