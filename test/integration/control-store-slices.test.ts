/**
 * The capacity slices item (ControlStore.getCapacitySlices / putCapacitySlices): one conditional
 * PutItem on the version read, on dynalite (the local runtime) and on the simulated DynamoDB
 * (sim/aws) alike; a retried write that was applied reads as written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlStore } from '../../runtime/adapters/control-store.ts';
import { type CapacitySlices, nextSlices } from '../../runtime/core/capacity-slices.ts';
import { SimulatedAws } from '../../sim/aws/world.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

const CAPACITY = { slots: 10, milliVcpu: 4000, memoryMiB: 8192 };
const OPTIONS = { shards: 2, staleAfterMs: 30_000, heldAtMostMs: 60_000 };
const zero = { slots: 0, milliVcpu: 0, memoryMiB: 0 };
const report = (shard: number) => ({ shard, held: zero, weight: { lambda: 1, fargate: 1 }, need: zero });

let services: TestServices;
beforeAll(async () => {
  services = await startTestServices();
});
afterAll(async () => {
  await services.stop();
});

/** The simulated account (sim/aws) through the full SDK stack, with transport faults when asked. */
function simulatedStore(lostResponseRate = 0, seed = 1): ControlStore {
  const aws = new SimulatedAws({
    seed,
    now: Date.now,
    indexLagMs: 0,
    eventualLagMs: 0,
    unprocessedRate: 0,
    sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
  });
  const { documents } = aws.component('scheduler', { lostResponseRate, throttleRate: 0 }).clients;
  return new ControlStore(documents, aws.resources.tables.control as string);
}

let poolSets = 0;
const stores: [string, () => { store: ControlStore; poolSet: string }][] = [
  [
    'dynalite',
    () => ({
      store: new ControlStore(services.clients.documents, services.emulators.tables.control as string),
      poolSet: `pools-${Date.now()}-${poolSets++}`,
    }),
  ],
  ['the simulated DynamoDB', () => ({ store: simulatedStore(), poolSet: 'pools' })],
];

describe.each(stores)('Class: ControlStore, capacity slices (%s)', (_name, open) => {
  it('writes the first record only where there is none, then only on the version read', async () => {
    const { store, poolSet } = open();
    expect(await store.getCapacitySlices(poolSet)).toBeUndefined();
    const first = nextSlices(undefined, report(0), CAPACITY, 1_000, OPTIONS).next;
    expect(await store.putCapacitySlices(first, 0, poolSet)).toEqual({ written: true });
    expect(await store.getCapacitySlices(poolSet)).toEqual(first);

    // Shard 1 read version 1 and writes version 2; shard 0, also from version 1, is refused and
    // is handed the record to compute from again.
    const second = nextSlices(first, report(1), CAPACITY, 2_000, OPTIONS).next;
    const late = nextSlices(first, report(0), CAPACITY, 2_100, OPTIONS).next;
    expect(await store.putCapacitySlices(second, 1, poolSet)).toEqual({ written: true });
    expect(await store.putCapacitySlices(late, 1, poolSet)).toEqual({ written: false, current: second });
    // A second "first" write is refused too.
    expect((await store.putCapacitySlices(first, 0, poolSet)).written).toBe(false);
    expect(await store.getCapacitySlices(poolSet)).toEqual(second);
  });

  it('answers written to a repeat of a write that was applied (an SDK retry after a lost answer)', async () => {
    const { store, poolSet } = open();
    const first: CapacitySlices = nextSlices(undefined, report(0), CAPACITY, 1_000, OPTIONS).next;
    await store.putCapacitySlices(first, 0, poolSet);
    const next = nextSlices(first, report(0), CAPACITY, 3_000, OPTIONS).next;
    expect(await store.putCapacitySlices(next, 1, poolSet)).toEqual({ written: true });
    expect(await store.putCapacitySlices(next, 1, poolSet)).toEqual({ written: true });
    expect((await store.getCapacitySlices(poolSet))?.version).toBe(2);
  });
});

describe('Class: ControlStore, capacity slices under lost responses (the simulated DynamoDB)', () => {
  it('answers written exactly when the item is the record written, whichever attempt applied it', async () => {
    // Prepare: a third of the calls are applied and their answers lost; the SDK retries them.
    const store = simulatedStore(0.3, 7);
    let written = 0;

    // Act: 40 reports in a row, each computed from the record read
    for (let i = 0; i < 40; i++) {
      const read = await store.getCapacitySlices().catch(() => null);
      if (read === null) continue;
      const next = nextSlices(read, report(i % 2), CAPACITY, 1_000 + i * 1_000, OPTIONS).next;
      const write = await store.putCapacitySlices(next, read?.version ?? 0).catch(() => null);
      if (write === null) continue;

      // Assess: written means the item is this record; refused means it is another one
      const stored = await store.getCapacitySlices().catch(() => null);
      if (write.written) {
        written++;
        if (stored !== null) expect(stored).toEqual(next);
      } else {
        expect(write.current).not.toEqual(next);
      }
    }
    expect(written).toBeGreaterThan(20);
  });
});
