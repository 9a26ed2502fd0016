import { describe, expect, it } from 'vitest';
import { explainWait, type SchedulerSnapshot } from '../../lambda/app/wait.ts';
import { parseConfig } from '../../lambda/core/config.ts';
import { createTask } from '../../lambda/core/lifecycle.ts';
import type { NewTaskSpec, PriorityTier } from '../../lambda/core/task.ts';
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
  ...overrides,
});
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

describe('Function: explainWait', () => {
  it('says a task scheduled later is delayed', () => {
    const wait = explainWait(task('normal', { runAt: at(600) }), { config, tenant, snapshot: snapshot(), now: at(10) });
    expect(wait).toMatchObject({ reason: 'delayed', effectiveTier: 'normal' });
  });

  it('says a tenant at its quota waits for its own tasks', () => {
    const busy = snapshot({
      tenants: { acme: { running: 2, queued: 5, weight: 1, maxConcurrency: 2, dominantShare: 0.5, entitlement: 0.5 } },
    });
    const wait = explainWait(task('normal'), { config, tenant, snapshot: busy, now: at(10) });
    expect(wait).toMatchObject({ reason: 'tenant_quota', maxWaitSeconds: null });
  });

  it('says a full pool is the reason when the tenant has room', () => {
    const full = snapshot({
      pools: { lambda: { used: 4, capacity: 4 }, fargate: { vcpuUsed: 0, vcpu: 2, memoryMiBUsed: 0, memoryMiB: 4096 } },
    });
    expect(explainWait(task('normal'), { config, tenant, snapshot: full, now: at(10) }).reason).toBe('capacity');
  });

  it('says fair share when the tenant holds more than its entitlement', () => {
    const greedy = snapshot({
      tenants: { acme: { running: 1, queued: 5, weight: 1, maxConcurrency: 9, dominantShare: 0.75, entitlement: 0.5 } },
    });
    const wait = explainWait(task('normal'), {
      config,
      tenant: { weight: 1, maxConcurrency: 9 },
      snapshot: greedy,
      now: at(10),
    });
    expect(wait.reason).toBe('fair_share');
  });

  it('ages one tier per agingSeconds and bounds the wait by the proved formula', () => {
    // A low task (rank 3) that waited 130 s with agingSeconds 60 competes as high (rank 1) and
    // reaches critical at 180 s. Held ahead of it: critical 3 + high 0 + normal 2 + low 9 = 14;
    // fair-share serves one per window of 2τ, τ = 60 s timeout + 30 s dispatch lease.
    const wait = explainWait(task('low'), { config, tenant, snapshot: snapshot(), now: at(130) });
    expect(wait).toMatchObject({ reason: 'priority', effectiveTier: 'high', secondsToTopTier: 50 });
    expect(wait.maxWaitSeconds).toBe(50 + Math.ceil((14 + 1) / 1) * 2 * 90);
  });

  it('gives no bound before any scheduler has published a snapshot', () => {
    expect(explainWait(task('normal'), { config, tenant, snapshot: undefined, now: at(1) }).maxWaitSeconds).toBeNull();
  });
});
