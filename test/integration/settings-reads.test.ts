/**
 * Tenant and task-type settings are read by scanning the whole control table, whose intake
 * registrations (one per active tenant-tier) make it large: 674.5 read units a scan at 10,000
 * tenant-tiers (docs/scaling.md). The scheduler's upkeep and every GET /v1/status did it; now they
 * read the settings version (one small item) and scan only when it moved, or after 5 minutes.
 * Counted with the benchmarks' call counter on dynalite.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallCounter } from '../../bench/metering/call-counter.ts';
import { buildStatus } from '../../runtime/api/status.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let nowMs = Date.now();
const everyone = async () => true;

beforeAll(async () => {
  services = await startTestServices({ now: () => new Date(nowMs) });
  await services.tasks.putTenant('acme', { weight: 2, maxConcurrency: 4 });
  // Registrations of tenant-tiers with work, as the scheduler keeps them: the bulk of the table.
  await Promise.all(
    Array.from({ length: 200 }, (_, i) => services.control.registerIntake(`tenant-${i}`, 'normal', new Date(nowMs))),
  );
});
afterAll(async () => {
  await services.stop();
});

/** The control table's calls made by `act` and their read units, by operation. */
async function counting(act: () => Promise<void>): Promise<Map<string, { count: number; readUnits: number }>> {
  const counter = new CallCounter().attach(services.clients.documents);
  try {
    await act();
  } finally {
    counter.detach(services.clients.documents);
  }
  const control = services.emulators.tables.control!;
  const calls = new Map<string, { count: number; readUnits: number }>();
  for (const [key, stat] of counter.dynamoByTable()) {
    const [operation, table] = key.split(' ');
    if (table === control) calls.set(operation!, stat);
  }
  return calls;
}

describe('settings reads', () => {
  it('the scheduler scans no settings in a steady minute: it reads their version every 10 s', async () => {
    // Prepare
    const scheduler = new Scheduler({
      store: services.store,
      control: services.control,
      queues: services.queues,
      config: services.config,
      now: () => new Date(nowMs),
    });
    await scheduler.resume();

    // Act: a minute of ticks, one a second, nothing to do
    const calls = await counting(async () => {
      for (let i = 0; i < 60; i++) {
        nowMs += 1_000;
        await scheduler.tick();
      }
    });

    // Assess: before, two scans every 10 s (12 here, each reading every item of the table)
    expect(calls.get('Scan')?.count ?? 0).toBe(0);
    expect(calls.get('GetItem')?.count).toBeGreaterThanOrEqual(6);
    await scheduler.releaseHeld();
  });

  it('GET /v1/status scans the settings once while their version stands still, and again after a PUT, which it shows', async () => {
    // Act: five status reads
    const calls = await counting(async () => {
      for (let i = 0; i < 5; i++) await buildStatus(services, { recent: 0, mayActFor: everyone });
    });
    // Act: a PUT, then a status read
    await services.tasks.putTenant('acme', { weight: 3, maxConcurrency: 4 });
    let status: Awaited<ReturnType<typeof buildStatus>> | undefined;
    const after = await counting(async () => {
      status = await buildStatus(services, { recent: 0, tenants: ['acme'], mayActFor: everyone });
    });

    // Assess: before, each read scanned the table twice (10 scans)
    expect(calls.get('Scan')?.count ?? 0).toBeLessThanOrEqual(1);
    expect(after.get('Scan')?.count).toBe(1);
    expect(status?.tenants.find((tenant) => tenant.tenantId === 'acme')?.weight).toBe(3);
  });

  it('a change whose version bump was lost is read within 5 minutes', async () => {
    // Prepare: the tenant written as a PUT would, without the bump (the PUT failed after it)
    await buildStatus(services, { recent: 0, mayActFor: everyone });
    await services.clients.documents.send(
      new PutCommand({
        TableName: services.emulators.tables.control!,
        Item: { pk: 'tenant#acme', kind: 'tenant', tenantId: 'acme', weight: 5, maxConcurrency: 4, updatedAt: '' },
      }),
    );
    const weight = async () =>
      (await buildStatus(services, { recent: 0, tenants: ['acme'], mayActFor: everyone })).tenants.find(
        (tenant) => tenant.tenantId === 'acme',
      )?.weight;

    // Act
    const soon = await weight();
    nowMs += 5 * 60_000;
    const later = await weight();

    // Assess
    expect(soon).toBe(3);
    expect(later).toBe(5);
  });
});
