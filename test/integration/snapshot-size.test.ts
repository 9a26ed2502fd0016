/**
 * The scheduler's snapshot (runtime/scheduler/snapshot.ts) is one control item, written every few
 * seconds; a write over DynamoDB's 400 KB item fails the scheduler's upkeep every time. Its tenants
 * are capped by count (500 listed), but their ids may be 128 characters each, and each listed
 * tenant appears in `tenants`, `rotation.busyFor` and `rotation.busyForLately`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntakeWindows } from '../../runtime/core/intake/index.ts';
import type { SchedulingPolicy, TenantSnapshot } from '../../runtime/core/policy/index.ts';
import type { SchedulerSnapshot } from '../../runtime/core/scheduler-snapshot.ts';
import { buildSnapshot, SNAPSHOT_MAX_BYTES } from '../../runtime/scheduler/snapshot.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

const NOW = Date.parse('2026-12-03T12:00:00.000Z');
/** A 128-character tenant id, the longest the API accepts. */
const longId = (i: number) => `tenant-${String(i).padStart(5, '0')}-`.padEnd(128, 'x');

function tenant(i: number): TenantSnapshot {
  return {
    tenantId: longId(i),
    weight: 1.5,
    maxConcurrency: 1000,
    hold: { constraint: 'quota' } as TenantSnapshot['hold'],
    parked: 10_000,
    active: 1000,
    queued: 10_000 - i,
    usage: { lambdaSlots: 1, vcpu: 0, memoryMiB: 0 },
    weightedDominantShare: 0.123,
    entitlement: 0.00123,
    busyUntilMs: NOW + 86_400_000,
    longestRunMs: 86_399_900,
    busyUntilLatelyMs: NOW + 86_000_000,
    waitingTaskId: `tsk_${i.toString(16).padStart(32, '0')}`,
    waitingTurnMs: NOW - 1,
  };
}

/** Sources of a scheduler with `count` tenants running and waiting, and a full backlog and recent list. */
function sources(count: number) {
  const tenants = Array.from({ length: count }, (_, i) => tenant(i));
  const policy = {
    snapshot: () => ({ nowMs: NOW, policy: 'fair-share', waiting: 0, active: 0, unschedulable: 0, pools: [], tenants }),
  } as unknown as SchedulingPolicy;
  const windows = {
    refs: () => [],
    oldestAgingFromMs: () => new Map(),
    unreadSinceRestore: () => 0,
  } as unknown as IntakeWindows;
  const at = new Date(NOW).toISOString();
  const backlog: NonNullable<SchedulerSnapshot['backlog']> = Object.fromEntries(
    Array.from({ length: 200 }, (_, i) => [
      longId(10_000 + i),
      { normal: { queued: 10_000, capped: true, oldestWaitSeconds: 86_400.1, countedAt: at } },
    ]),
  );
  const recentlyFinished = {
    windowSeconds: 900,
    tenants: Object.fromEntries(
      Array.from({ length: 100 }, (_, i) => [
        longId(20_000 + i),
        { succeeded: 100_000, failed: 100_000, cancelled: 100_000, lastFinishedAt: at },
      ]),
    ),
  };
  return {
    policy,
    windows,
    pools: { lambda: { concurrency: 1000 }, fargate: { vcpu: 1000, memoryMiB: 2_048_000 } },
    dispatchesLastMinute: 60_000,
    // A maintenance pause of 40 task types with long names, each holding parked tasks.
    parkedByType: new Map(Array.from({ length: 40 }, (_, i) => [`type${i}.`.padEnd(128, 'x'), 10_000])),
    backlog,
    recentlyFinished,
  } as unknown as Parameters<typeof buildSnapshot>[0];
}

let services: TestServices;
beforeAll(async () => {
  services = await startTestServices();
});
afterAll(async () => {
  await services.stop();
});

describe('The scheduler snapshot at its largest', () => {
  it('stays within its byte budget with 500 listed tenants of 128-character ids, and is written', async () => {
    const snapshot = buildSnapshot(sources(500), NOW);
    const bytes = Buffer.byteLength(JSON.stringify(snapshot));
    expect(bytes).toBeLessThanOrEqual(SNAPSHOT_MAX_BYTES);
    // Fewer tenants listed than have work (500, the count cap): the snapshot says it is not complete.
    expect(snapshot.rotation?.complete).toBe(false);
    // The busiest are the ones kept, with their rotation entries.
    const listed = Object.keys(snapshot.tenants);
    expect(listed.length).toBeLessThan(500);
    expect(listed).toContain(longId(0));
    for (const id of listed) expect(snapshot.rotation?.busyFor[id]).toBeDefined();
    expect(Object.keys(snapshot.rotation?.busyFor ?? {}).every((id) => listed.includes(id))).toBe(true);
    // Before: 411,861 bytes of JSON, and dynalite (as DynamoDB) refused the item.
    await expect(services.control.putSnapshot(snapshot)).resolves.toBeUndefined();
    const read = await services.control.getSnapshot<SchedulerSnapshot>();
    expect(Object.keys(read?.tenants ?? {})).toHaveLength(listed.length);
  });

  it('lists every tenant, complete, while they fit', () => {
    const snapshot = buildSnapshot(sources(40), NOW);
    expect(Object.keys(snapshot.tenants)).toHaveLength(40);
    expect(snapshot.rotation?.complete).toBe(true);
  });
});
