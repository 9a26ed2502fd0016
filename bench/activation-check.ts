/**
 * `hasSchedulerWork` (the minute tick's check, and a scheduler's before it stops idle) with many
 * registered tenant-tiers whose one task is due in an hour and nothing leased: it reads the index
 * whole while that costs no more than every registration's first entry (9 Queries each) would.
 * Prints its answer, time and calls (the benchmarks' call counter) on dynalite, twice.
 *
 *   node bench/activation-check.ts --tenants 10000
 */
import { startEmulators } from '../local/emulators.ts';
import { buildServices } from '../runtime/app/wiring.ts';
import { parseConfig } from '../runtime/core/config.ts';
import { hasSchedulerWork } from '../runtime/scheduler/activation.ts';
import { CallCounter } from './metering/call-counter.ts';

const at = process.argv.indexOf('--tenants');
const n = at > 0 ? Number(process.argv[at + 1]) : 10_000;
const config = parseConfig({});
const emulators = await startEmulators({ shards: 1 });
const services = buildServices({
  config,
  clients: emulators.clients,
  resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
});
const id = (i: number) => `tenant-${i}-`.padEnd(128, 'x');
for (let i = 0; i < n; i += 200) {
  await Promise.all(
    Array.from({ length: Math.min(200, n - i) }, async (_, j) => {
      await services.tasks.submit({ tenantId: id(i + j), type: 'demo.sleep', payload: { ms: 1 }, delaySeconds: 3600 });
      await services.control.registerIntake(id(i + j), 'normal', new Date());
    }),
  );
}
for (let k = 0; k < 2; k++) {
  const counter = new CallCounter().attach(emulators.clients.documents);
  const started = performance.now();
  const has = await hasSchedulerWork(services, new Date());
  const ms = performance.now() - started;
  counter.detach(emulators.clients.documents);
  const stats = counter.snapshot();
  console.log(
    `hasSchedulerWork with ${n} registered tenant-tiers, nothing due for an hour: ${has} in ${(ms / 1000).toFixed(1)} s;`,
    [...stats].map(([key, s]) => `${key} ${s.count} (${s.readUnits} read units)`).join(', '),
  );
}
await emulators.stop();
