/**
 * What reading the tenant and task-type settings costs with many tenant-tiers registered: the
 * control table holds one intake registration per active tenant-tier, and the settings are read
 * by scanning all of it. Fills dynalite's control table with `--tenants` registrations (128-
 * character tenant ids, as the limits helper's 10,000-tenant run), then prints what one settings
 * scan costs (read units as dynalite reports them) and the control-table calls of the scheduler
 * of 10 `GET /v1/status` reads and of the scheduler in a simulated minute (the benchmarks' call
 * counter; the registrations have no tasks, so the scheduler deregisters them meanwhile).
 *
 *   node bench/settings-reads.ts --tenants 10000
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { startEmulators } from '../local/emulators.ts';
import { buildStatus } from '../runtime/api/status.ts';
import { buildServices } from '../runtime/app/wiring.ts';
import { parseConfig } from '../runtime/core/config.ts';
import { CONTROL_TABLE } from '../runtime/infra/resources.ts';
import { Scheduler } from '../runtime/scheduler/scheduler.ts';
import { CallCounter } from './metering/call-counter.ts';

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const tenants = arg('tenants', 10_000);

let nowMs = Date.now();
const config = parseConfig({}, 'bench');
const emulators = await startEmulators({ shards: 1 });
try {
  const services = buildServices({
    config,
    clients: emulators.clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
    now: () => new Date(nowMs),
  });
  const control = emulators.tables[CONTROL_TABLE.id]!;
  const id = (i: number) => `tenant-${i}-`.padEnd(128, 'x');
  for (let i = 0; i < tenants; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, tenants - i) }, (_, j) =>
        services.control.registerIntake(id(i + j), 'normal', new Date(nowMs)),
      ),
    );
  }
  await services.tasks.putTenant(id(0), { weight: 2, maxConcurrency: 4 });

  // One settings scan, as listSettings makes it, with the units dynalite reports.
  let units = 0;
  let scanned = 0;
  let pages = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await services.clients.documents.send(
      new ScanCommand({
        TableName: control,
        FilterExpression: 'kind IN (:kind0, :kind1)',
        ExpressionAttributeValues: { ':kind0': 'tenant', ':kind1': 'task-type' },
        ExclusiveStartKey: startKey,
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    units += page.ConsumedCapacity?.CapacityUnits ?? 0;
    scanned += page.ScannedCount ?? 0;
    pages++;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  console.log(`control table: ${scanned} items; one settings scan: ${pages} pages, ${units} read units (dynalite)`);

  const counted = async (label: string, act: () => Promise<void>) => {
    const counter = new CallCounter().attach(emulators.clients.documents);
    const startedMs = performance.now();
    await act();
    const ms = performance.now() - startedMs;
    counter.detach(emulators.clients.documents);
    const rows = [...counter.dynamoByTable()].filter(([key]) => key.endsWith(` ${control}`));
    const text = rows.map(([key, stat]) => `${key.split(' ')[0]} ${stat.count}`).join(', ');
    console.log(`${label}: ${text || 'none'} (${Math.round(ms)} ms)`);
  };

  await counted('10 GET /v1/status, control-table calls', async () => {
    for (let i = 0; i < 10; i++) await buildStatus(services, { recent: 0, mayActFor: async () => true });
  });
  // The registrations have no tasks: the scheduler probes and deregisters them as it goes.
  const scheduler = new Scheduler({
    store: services.store,
    control: services.control,
    queues: services.queues,
    config,
    now: () => new Date(nowMs),
  });
  await counted('scheduler resume, control-table calls', () => scheduler.resume());
  await counted('scheduler, a steady minute (a tick a second), control-table calls', async () => {
    for (let i = 0; i < 60; i++) {
      nowMs += 1_000;
      await scheduler.tick();
    }
  });
  await scheduler.releaseHeld();
} finally {
  await emulators.stop();
}
