/**
 * Two sharded schedulers (issue 24 item 6) over in-memory ports: each shard its own tasks and
 * queues (a tenant lives in one shard), one control table between them. Together they never have
 * more tasks dispatched or running than the pool, and the pool follows their backlogs.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../runtime/core/config.ts';
import { createTask, start, succeed } from '../../runtime/core/lifecycle.ts';
import { shardOfTenant } from '../../runtime/core/shards.ts';
import { completionsQueue } from '../../runtime/infra/resources.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { taskSpec } from '../helpers/factories.ts';
import { InMemoryControl, InMemoryQueues, InMemoryTasks } from '../helpers/in-memory-ports.ts';

const START_MS = Date.parse('2026-12-02T08:00:00.000Z');
const POOL = 4;
/** A tenant each shard of two owns (tenants live in the shard their id hashes to). */
const TENANT_OF_SHARD = [0, 1].map((shard) => {
  for (let i = 0; ; i++) if (shardOfTenant(`tenant-${i}`, 2) === shard) return `tenant-${i}`;
}) as [string, string];

function setUp() {
  let clockMs = START_MS;
  const now = () => new Date(clockMs);
  const control = new InMemoryControl();
  const config = parseConfig({
    pools: { lambda: { concurrency: POOL }, fargate: { vcpu: 1, memoryMiB: 2048 } },
    tenantDefaults: { weight: 1, maxConcurrency: 100 },
  });
  let seq = 0;
  const shard = (index: number) => {
    const tasks = new InMemoryTasks();
    const queues = new InMemoryQueues({ shards: 2 });
    const scheduler = new Scheduler({ store: tasks, control, queues, config, now, shard: { shard: index, shards: 2 } });
    const submit = async (count: number, tenantId: string) => {
      const created = Array.from({ length: count }, () =>
        createTask(`${tenantId}-${++seq}`, taskSpec({ tenantId }), new Date(clockMs - 1000)),
      );
      tasks.put(...created);
      await queues.announce(created);
    };
    const active = () =>
      [...tasks.items.values()].filter((task) => task.state === 'DISPATCHED' || task.state === 'RUNNING');
    /** Workers run every dispatched task and report it. */
    const completeAll = async () => {
      for (const task of active()) {
        await tasks.transition(task.taskId, (current) => start(current, task.fence, now(), 60));
        const done = await tasks.transition(task.taskId, (current) => succeed(current, task.fence, now(), 1));
        queues.send(completionsQueue(index).id, {
          taskId: done.taskId,
          fence: done.fence,
          tenantId: done.tenantId,
          state: done.state,
        });
      }
    };
    return { scheduler, submit, active, completeAll };
  };
  const shards = [shard(0), shard(1)];
  const totalActive = () => shards.reduce((sum, s) => sum + s.active().length, 0);
  /** One second: each shard ticks once; the pool is never over-committed. */
  const second = async () => {
    for (const s of shards) {
      await s.scheduler.tick();
      expect(totalActive()).toBeLessThanOrEqual(POOL);
    }
    clockMs += 1000;
  };
  return { control, shards, second };
}

describe('Sharded schedulers sharing a pool (in-memory ports)', () => {
  it('give the whole pool to the one shard with work, then halves once both have work, never more than the pool', async () => {
    // Prepare
    const { control, shards, second } = setUp();
    const [a, b] = shards as [ReturnType<typeof setUp>['shards'][0], ReturnType<typeof setUp>['shards'][0]];
    await a.scheduler.resume();
    await b.scheduler.resume();
    await a.submit(40, TENANT_OF_SHARD[0]);

    // Act: shard 0 alone with work for 10 s (its tasks never end)
    for (let i = 0; i < 10; i++) await second();

    // Assess
    expect(a.active()).toHaveLength(POOL);
    expect(control.slices?.entries['0']?.allowed.slots).toBe(POOL);

    // Act: shard 1 gets work; every second the workers finish what is running
    await b.submit(40, TENANT_OF_SHARD[1]);
    for (let i = 0; i < 12; i++) {
      await a.completeAll();
      await b.completeAll();
      await second();
    }

    // Assess: halves
    expect([a.active().length, b.active().length]).toEqual([2, 2]);
    expect(control.slices?.entries['0']?.allowed.slots).toBe(2);
    expect(control.slices?.entries['1']?.allowed.slots).toBe(2);
  });

  it('with one shard: the whole pool, and no slices written', async () => {
    const control = new InMemoryControl();
    const config = parseConfig({ pools: { lambda: { concurrency: POOL }, fargate: { vcpu: 1, memoryMiB: 2048 } } });
    const tasks = new InMemoryTasks();
    const queues = new InMemoryQueues();
    const single = new Scheduler({ store: tasks, control, queues, config, shard: { shard: 0, shards: 1 } });
    const created = createTask('t-1', taskSpec({ tenantId: 'solo' }), new Date(Date.now() - 1000));
    tasks.put(created);
    await queues.announce([created]);
    await single.resume();
    expect((await single.tick()).dispatched).toBe(1);
    expect(control.slices).toBeUndefined();
    expect(single.policy.sliceReport(Date.now()).held.slots).toBe(1);
  });
});

describe('A sharded scheduler whose lease ran out', () => {
  it('makes no more slice reports once its lease has run out (its timer calls nothing)', async () => {
    // Prepare: a shard's scheduler reporting every 250 ms by its own timer
    let clockMs = START_MS;
    const control = new InMemoryControl();
    let reads = 0;
    const get = control.getCapacitySlices.bind(control);
    const put = control.putCapacitySlices.bind(control);
    control.getCapacitySlices = () => {
      reads++;
      return get();
    };
    control.putCapacitySlices = (state, expected) => {
      reads++;
      return put(state, expected);
    };
    const config = parseConfig({ pools: { lambda: { concurrency: POOL }, fargate: { vcpu: 1, memoryMiB: 2048 } } });
    const scheduler = new Scheduler({
      store: new InMemoryTasks(),
      control,
      queues: new InMemoryQueues({ shards: 2 }),
      config,
      now: () => new Date(clockMs),
      shard: { shard: 0, shards: 2 },
      sliceEveryMs: 250,
    });
    scheduler.holdLease({ token: 1, expiresAtMs: START_MS + 30_000, marginMs: 10_000 });
    await scheduler.resume();
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(reads).toBeGreaterThan(1);

    // Act: its lease lapses (renewal failed: the loop starts over without releaseHeld)
    clockMs = START_MS + 31_000;
    await new Promise((resolve) => setTimeout(resolve, 600));
    const afterLapse = reads;
    await new Promise((resolve) => setTimeout(resolve, 800));

    // Assess: no report since the first tick that saw the lapse
    expect(reads).toBe(afterLapse);
  });
});
