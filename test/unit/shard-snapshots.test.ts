import { describe, expect, it } from 'vitest';
import { mergeSnapshots } from '../../runtime/app/shard-snapshots.ts';
import type { SchedulerSnapshot, TenantShare } from '../../runtime/core/scheduler-snapshot.ts';

const tenant = (weight: number, running: number, queued: number, entitlement: number): TenantShare => ({
  running,
  queued,
  weight,
  maxConcurrency: 10,
  dominantShare: running / 10,
  entitlement,
});

/** One shard's snapshot: its tenants only, the whole pool's capacity. */
const shard = (at: string, tenants: Record<string, TenantShare>, used: number): SchedulerSnapshot => ({
  at,
  policy: 'fair-share',
  pools: { lambda: { used, capacity: 10 }, fargate: { vcpuUsed: 0, vcpu: 4, memoryMiBUsed: 0, memoryMiB: 8192 } },
  tiers: {
    critical: { waiting: 0, oldestWaitSeconds: 0 },
    high: { waiting: 0, oldestWaitSeconds: 0 },
    normal: { waiting: 2, oldestWaitSeconds: 3 },
    low: { waiting: 0, oldestWaitSeconds: 0 },
  },
  tenants,
  dispatchRate: 1,
});

describe('Function: mergeSnapshots (the status of every shard seen as one)', () => {
  it("unions the shards' tenants, adds their counts, and gives each tenant its entitlement among all of them", () => {
    // Prepare: a (weight 1) is shard 0's only busy tenant, b (weight 3) and idle c shard 1's: each
    // shard reports its own tenants entitled to the whole of it.
    const zero = shard('2026-12-03T00:00:01.000Z', { a: tenant(1, 2, 1, 1) }, 2);
    const one = shard('2026-12-03T00:00:02.000Z', { b: tenant(3, 3, 0, 1), c: tenant(2, 0, 0, 0) }, 3);
    // Act
    const merged = mergeSnapshots([zero, one]);
    // Assess
    expect(merged?.at).toBe('2026-12-03T00:00:02.000Z');
    expect(merged?.pools.lambda).toEqual({ used: 5, capacity: 10 });
    expect(merged?.tiers.normal).toEqual({ waiting: 4, oldestWaitSeconds: 3 });
    expect(Object.keys(merged?.tenants ?? {}).sort()).toEqual(['a', 'b', 'c']);
    // Entitled among every tenant with work, across the shards: 1 / (1 + 3) and 3 / (1 + 3)
    expect(merged?.tenants.a?.entitlement).toBe(0.25);
    expect(merged?.tenants.b?.entitlement).toBe(0.75);
    expect(merged?.tenants.c?.entitlement).toBe(0);
    expect(merged?.tenants.a?.running).toBe(2);
  });
});
