/**
 * The capacity slices item (ControlStore.getCapacitySlices / putCapacitySlices): one conditional
 * PutItem on the version read, on dynalite (the local runtime) and on the simulated DynamoDB
 * (sim/aws) alike; a retried write that was applied reads as written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlStore } from '../../runtime/adapters/control-store.ts';
import { type CapacitySlices, nextSlices } from '../../runtime/core/capacity-slices.ts';
import { CONTROL_TABLE } from '../../runtime/infra/resources.ts';
import { directClients } from '../../sim/aws/direct.ts';
import { InMemoryDynamoDb } from '../../sim/aws/dynamodb.ts';
import { InMemorySqs } from '../../sim/aws/sqs.ts';
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

function simulatedStore(): ControlStore {
  const dynamodb = new InMemoryDynamoDb([{ name: 'control', definition: CONTROL_TABLE }], {
    random: Math.random,
    now: Date.now,
    indexLagMs: 0,
    eventualLagMs: 0,
    unprocessedRate: 0,
  });
  const sqs = new InMemorySqs([], {
    random: Math.random,
    now: Date.now,
    duplicateDeliveryRate: 0,
    earlyRedeliveryRate: 0,
    shortPollMissRate: 0,
    batchEntryFailureRate: 0,
  });
  return new ControlStore(directClients(dynamodb, sqs).documents, 'control');
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
