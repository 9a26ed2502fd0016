/**
 * The flood loads its backlog through the production submit path on clients that skip the
 * SDK's middleware (sim/aws/direct.ts). What they leave in the simulated account must be exactly
 * what the same submits through the SDK leave, and refusals must reach the adapters as the
 * SDK's typed exceptions.
 */
import { ConditionalCheckFailedException, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AwsClients } from '../../runtime/adapters/aws-clients.ts';
import { buildServices } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { QUEUES, TABLES } from '../../runtime/infra/resources.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { directClients } from '../../sim/aws/direct.ts';
import { NO_TRANSPORT_FAULTS } from '../../sim/aws/faults.ts';
import { installVirtualClock, type VirtualClock } from '../../sim/aws/virtual-clock.ts';
import { SimulatedAws } from '../../sim/aws/world.ts';

const START_MS = Date.parse('2026-01-05T00:00:00.000Z');
const config = parseConfig({ pools: { lambda: { concurrency: 5 }, fargate: { vcpu: 2, memoryMiB: 4096 } } }, 'test');
const registry = new TaskTypeRegistry([
  defineTaskType({
    type: 'sim.hold',
    description: 'Does nothing.',
    payload: z.strictObject({}),
    handler: async () => ({}),
  }),
]);
const newWorld = (partitionLimits?: { writeUnitsPerSecond: number; readUnitsPerSecond: number }) =>
  new SimulatedAws({
    seed: 9,
    ...(partitionLimits ? { partitionLimits } : {}),
    now: () => Date.now(),
    indexLagMs: 0,
    eventualLagMs: 0,
    unprocessedRate: 0,
    sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
  });

/** Everything the account holds: every table's items and every queue's messages. */
const stateOf = (world: SimulatedAws) => ({
  tables: TABLES.map((table) => world.dynamodb.items(`sim-${table.id}`)),
  queues: QUEUES.map((queue) => world.sqs.pending(queue.id)),
  sends: world.sqs.sends,
});

let clock: VirtualClock | undefined;
afterEach(() => {
  clock?.uninstall();
  clock = undefined;
});

/** Submit through the production TaskService on the given clients, with a fresh seeded clock. */
async function submitAll(clientsFor: (world: SimulatedAws) => AwsClients, tenants: readonly string[]) {
  clock = installVirtualClock({ startMs: START_MS, seed: 4 });
  const world = newWorld();
  const services = buildServices({ config, clients: clientsFor(world), resources: world.resources, registry });
  let done = false;
  const work = (async () => {
    for (const [i, tenantId] of tenants.entries()) {
      // Every fourth is a repeat of one of two idempotent requests (a refused write, then a read).
      await services.tasks.submit(
        i % 4 === 0
          ? { tenantId: 'flood', type: 'sim.hold', payload: {}, idempotencyKey: `key-${i % 8}` }
          : { tenantId, type: 'sim.hold', payload: {}, priority: i % 3 === 0 ? 'high' : 'normal' },
      );
    }
  })().finally(() => {
    done = true;
  });
  // The clock stands still (the backlog is queued at one instant); timers due now still fire.
  while (!done) await clock.runUntil(START_MS, () => done);
  await work;
  const state = stateOf(world);
  clock.uninstall();
  clock = undefined;
  return state;
}

describe('Direct clients (the flood backlog loader)', () => {
  it('leave exactly the state the SDK path leaves for the same production submits', async () => {
    // Prepare: repeats of idempotency keys take the refused-write path (a typed exception, a read).
    const tenants = Array.from({ length: 40 }, (_, i) => (i % 5 === 0 ? `quiet-${i}` : 'flood'));

    // Act
    const viaSdk = await submitAll((world) => world.component('api', NO_TRANSPORT_FAULTS).clients, tenants);
    const direct = await submitAll((world) => directClients(world.dynamodb, world.sqs), tenants);

    // Assess
    expect(viaSdk.tables[0]!.length).toBe(32);
    expect(direct).toEqual(viaSdk);
  });

  it('marshall and unmarshall every kind of value as the SDK does, and answer with copies', async () => {
    // Prepare: one item with every value kind the Document client converts (some through the
    // direct clients' own conversion, some through the SDK's), written on each path.
    const item = {
      taskId: 't-kinds',
      text: 'héllo',
      empty: '',
      int: 42,
      negative: -7.25,
      zero: -0,
      big: BigInt('90071992547409930'),
      yes: true,
      nothing: null,
      left: undefined,
      nested: { list: [1, 'two', { three: [false] }, undefined], skipped: undefined },
      strings: new Set(['a', 'b']),
      numbers: new Set([1, 2.5]),
      bytes: new Uint8Array([1, 2, 3]),
      // A Buffer (what gzipSync returns: the lease ledger's pages, the snapshot) was sent as its
      // toJSON form, `{ type, data }`, instead of base64: every page read back broken.
      buffer: Buffer.from([4, 5, 6]),
    };
    const write = async (clients: AwsClients) => {
      await clients.documents.send(new PutCommand({ TableName: 'sim-tasks', Item: item }));
      return clients.documents.send(new GetCommand({ TableName: 'sim-tasks', Key: { taskId: 't-kinds' } }));
    };
    const sdkWorld = newWorld();
    const directWorld = newWorld();

    // Act
    const viaSdk = await write(sdkWorld.component('api', NO_TRANSPORT_FAULTS).clients);
    const direct = await write(directClients(directWorld.dynamodb, directWorld.sqs));
    (direct.Item!.nested as { list: unknown[] }).list.push('changed');

    // Assess
    expect(directWorld.dynamodb.items('sim-tasks')).toEqual(sdkWorld.dynamodb.items('sim-tasks'));
    const read = await directClients(directWorld.dynamodb, directWorld.sqs).documents.send(
      new GetCommand({ TableName: 'sim-tasks', Key: { taskId: 't-kinds' } }),
    );
    expect(read.Item).toEqual(viaSdk.Item);
    expect(read.Item!.big).toBe(BigInt('90071992547409930'));
    expect(read.Item!.zero).toBe(0);
  });

  it('raise the SDK typed exception for a refused condition, with the item when asked', async () => {
    // Prepare
    const world = newWorld();
    const { documents } = directClients(world.dynamodb, world.sqs);
    const put = () =>
      documents.send(
        new PutCommand({
          TableName: 'sim-tasks',
          Item: { taskId: 't-1', tenantId: 'a' },
          ConditionExpression: 'attribute_not_exists(taskId)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    await put();

    // Act
    const refused = await put().catch((error: unknown) => error);

    // Assess
    expect(refused).toBeInstanceOf(ConditionalCheckFailedException);
    expect((refused as ConditionalCheckFailedException).Item).toEqual({ taskId: { S: 't-1' }, tenantId: { S: 'a' } });
  });

  it('retry a throttled request as the SDK does: DynamoDB 4 attempts with backoff, then the typed exception', async () => {
    // Prepare: a partition that never has a whole write unit (1 unit per 1,000 s, a bucket of a
    // thousandth), so every attempt is throttled; on each path, under virtual time.
    const attempts = async (clientsFor: (world: SimulatedAws) => AwsClients) => {
      clock = installVirtualClock({ startMs: START_MS, seed: 5 });
      const world = newWorld({ writeUnitsPerSecond: 0.001, readUnitsPerSecond: 3000 });
      let outcome: unknown;
      const call = clientsFor(world)
        .documents.send(new PutCommand({ TableName: 'sim-tasks', Item: { taskId: 't-hot' } }))
        .then(
          () => 'written',
          (error: unknown) => error,
        )
        .then((value) => {
          outcome = value;
        });
      await clock.runUntil(START_MS + 60_000, () => outcome !== undefined);
      await call;
      const waitedMs = clock.nowMs() - START_MS;
      clock.uninstall();
      clock = undefined;
      return { outcome, throttles: world.dynamodb.throughput.throttles(), waitedMs };
    };

    // Act
    const viaSdk = await attempts((world) => world.component('api', NO_TRANSPORT_FAULTS).clients);
    const direct = await attempts((world) => directClients(world.dynamodb, world.sqs));

    // Assess: the same four attempts on the table's partition `t-hot`, backed off (throttling
    // backoff: up to 1 s, 2 s, 4 s with full jitter), then the SDK's typed exception.
    for (const run of [viaSdk, direct]) {
      expect(run.outcome).toBeInstanceOf(ProvisionedThroughputExceededException);
      expect(run.throttles).toEqual([{ table: 'sim-tasks', kind: 'write', key: 't-hot', requests: 4 }]);
      expect(run.waitedMs).toBeGreaterThan(0);
      expect(run.waitedMs).toBeLessThan(7000);
    }
  });
});
