/**
 * Scheduler shards (`scheduler.shards`, docs/scaling.md) against the emulators: each scheduler
 * serves exactly the tenants that hash to it, from its own queues.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tierMessageOf, toMessageBody, type WorkerMessage } from '../../runtime/adapters/queues.ts';
import { shardOfTenant } from '../../runtime/core/shards.ts';
import { completionsQueue, tierQueue } from '../../runtime/infra/resources.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

const SHARDS = 2;
let services: TestServices;

beforeEach(async () => {
  services = await startTestServices({
    config: {
      pools: { lambda: { concurrency: 20 }, fargate: { vcpu: 1, memoryMiB: 2048 } },
      tenantDefaults: { weight: 1, maxConcurrency: 10 },
      scheduler: { shards: SHARDS },
    },
  });
});
/** The test's schedulers: stopped before the emulators, or a slice report (every 250 ms) lands on a closed database. */
const created: Scheduler[] = [];
afterEach(async () => {
  await Promise.all(created.splice(0).map((scheduler) => scheduler.releaseHeld().catch(() => undefined)));
  await services.stop();
});

/** Tenants `t0`, `t1`, … until `count` of them belong to `shard`. */
function tenantsOf(shard: number, count: number): string[] {
  const tenants: string[] = [];
  for (let i = 0; tenants.length < count; i++) if (shardOfTenant(`t${i}`, SHARDS) === shard) tenants.push(`t${i}`);
  return tenants;
}

const schedulerOf = (shard: number) => {
  const scheduler = new Scheduler({
    store: services.store,
    control: services.control.forShard(shard),
    queues: services.queues,
    config: services.config,
    shard: { shard, shards: SHARDS },
    // Report for the capacity slice every round: the shards hand capacity on within the test.
    sliceEveryMs: 0,
  });
  created.push(scheduler);
  return scheduler;
};

/** Tick the schedulers in turn (each round every one of them), as side-by-side shards would. */
async function settle(schedulers: Scheduler | readonly Scheduler[], rounds = 6) {
  let dispatched = 0;
  for (let i = 0; i < rounds; i++) {
    for (const scheduler of [schedulers].flat()) dispatched += (await scheduler.tick({ waitSeconds: 0 })).dispatched;
  }
  return dispatched;
}

async function drain<T>(queueId: string): Promise<T[]> {
  const bodies: T[] = [];
  for (let round = 0; round < 10; round++) {
    const got = await services.queues.receive<T>(queueId, { waitSeconds: 0 });
    if (got.length === 0) break;
    bodies.push(...got.map((m) => m.body));
    await services.queues.delete(
      queueId,
      got.map((m) => m.receiptHandle),
    );
  }
  return bodies;
}

describe('Scheduler shards (against the emulators)', () => {
  it("announces each task on its tenant's shard's tier queue, and each shard dispatches only its own tenants", async () => {
    // Prepare: two tenants of each shard, three tasks each.
    const [zero, one] = [tenantsOf(0, 2), tenantsOf(1, 2)];
    const ids = new Map<string, string>();
    for (const tenantId of [...zero, ...one]) {
      for (let i = 0; i < 3; i++) {
        const { task } = await services.tasks.submit({ tenantId, type: 'demo.echo', payload: { i } });
        ids.set(task.taskId, tenantId);
      }
    }
    const shard0 = schedulerOf(0);
    await shard0.resume();

    // Act: only shard 0 runs.
    await settle(shard0);

    // Assess: shard 0's tenants are dispatched, shard 1's still wait for their scheduler.
    const after0 = await services.store.getMany([...ids.keys()]);
    for (const [taskId, tenantId] of ids) {
      expect(after0.get(taskId)?.state, tenantId).toBe(zero.includes(tenantId) ? 'DISPATCHED' : 'QUEUED');
    }
    expect(Object.keys(shard0.snapshot().tenants).sort()).toEqual([...zero].sort());

    // Act: shard 1 runs too.
    const shard1 = schedulerOf(1);
    await shard1.resume();
    await settle([shard0, shard1]);

    // Assess: every task dispatched once, each by its own shard's scheduler.
    const after1 = await services.store.getMany([...ids.keys()]);
    expect([...after1.values()].every((task) => task.state === 'DISPATCHED' && task.fence === 1)).toBe(true);
    expect(Object.keys(shard1.snapshot().tenants).sort()).toEqual([...one].sort());
    const messages = await drain<WorkerMessage>('worker-lambda');
    expect(messages.map((m) => m.taskId).sort()).toEqual([...ids.keys()].sort());
  });

  it("routes a worker's completion to its tenant's shard, whose scheduler frees the capacity", async () => {
    const [tenant] = tenantsOf(1, 1);
    await services.queues.reportCompletions([{ taskId: 'x', fence: 1, tenantId: tenant!, state: 'SUCCEEDED' }]);
    expect(await drain(completionsQueue(0).id)).toEqual([]);
    expect(await drain(completionsQueue(1).id)).toEqual([
      { taskId: 'x', fence: 1, tenantId: tenant, state: 'SUCCEEDED' },
    ]);
  });

  it("forwards an announcement found on another shard's queue (sent under another shard count) to its owner", async () => {
    // Prepare: a task of a shard-1 tenant, its announcement on shard 0's tier queue as a
    // submitter with one shard would have sent it.
    const [tenant] = tenantsOf(1, 1);
    const { task } = await services.tasks.submit({ tenantId: tenant!, type: 'demo.echo', payload: {} });
    await drain(tierQueue('normal', 1).id);
    const message = tierMessageOf(task);
    await services.queues.sendBatch(tierQueue('normal', 0).id, [
      { Id: '0', MessageBody: toMessageBody(message), MessageGroupId: task.tenantId },
    ]);

    // Act: shard 0 consumes it; then shard 1 runs.
    const shard0 = schedulerOf(0);
    await shard0.resume();
    expect(await settle(shard0, 3)).toBe(0);
    const shard1 = schedulerOf(1);
    await shard1.resume();
    await settle([shard0, shard1]);

    // Assess: gone from shard 0's queue, dispatched by shard 1.
    expect(await drain(tierQueue('normal', 0).id)).toEqual([]);
    expect((await services.store.get(task.taskId))?.state).toBe('DISPATCHED');
    expect(Object.keys(shard0.snapshot().tenants)).not.toContain(tenant);
  });
});
