/**
 * Flow control through the real scheduler against the emulators: pauses (tenant and task type),
 * the start-rate bucket and concurrency keys, each decided by its durable record, so a second
 * scheduler with no memory (an overlapping or restarted invocation) cannot go past them.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { start, succeed } from '../../runtime/core/lifecycle.ts';
import { KEY_RECHECK_MS } from '../../runtime/scheduler/dispatch.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let nowMs = Date.parse('2026-12-02T08:00:00.000Z');
const now = () => new Date(nowMs);

beforeEach(async () => {
  nowMs = Date.parse('2026-12-02T08:00:00.000Z');
  services = await startTestServices({
    now,
    config: {
      pools: { lambda: { concurrency: 20 }, fargate: { vcpu: 4, memoryMiB: 8192 } },
      tenantDefaults: { weight: 1, maxConcurrency: 20 },
    },
  });
});
afterEach(async () => {
  await services.stop();
});

const newScheduler = async () => {
  const scheduler = new Scheduler({
    store: services.store,
    control: services.control,
    queues: services.queues,
    config: services.config,
    now,
  });
  await scheduler.resume();
  return scheduler;
};

async function submit(count: number, tenantId: string, extra: Record<string, unknown> = {}) {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { task } = await services.tasks.submit({ tenantId, type: 'demo.echo', payload: { i }, ...extra });
    ids.push(task.taskId);
  }
  return ids;
}

async function settle(scheduler: Scheduler, ticks = 6) {
  let dispatched = 0;
  for (let i = 0; i < ticks; i++) dispatched += (await scheduler.tick()).dispatched;
  return dispatched;
}

/** The tasks' states, in the order of `ids`. */
async function states(ids: readonly string[]) {
  const tasks = await services.store.getMany(ids);
  return ids.map((id) => tasks.get(id)?.state);
}

const count = (items: readonly (string | undefined)[], value: string) => items.filter((item) => item === value).length;

describe('Flow control (scheduler against the emulators)', () => {
  it('starts nothing of a paused tenant, explains why, and starts it all on resume', async () => {
    // Prepare
    await services.tasks.putTenant('acme', { weight: 1, maxConcurrency: 20, paused: true }, 'ops');
    const paused = await submit(3, 'acme');
    const other = await submit(2, 'globex');
    const scheduler = await newScheduler();
    // Act
    await settle(scheduler);
    const described = await services.tasks.describe(paused[0]!);
    const stored = await services.tasks.getTenant('acme');
    await services.tasks.putTenant('acme', { weight: 1, maxConcurrency: 20 });
    await settle(scheduler);
    // Assess
    expect(await states(other)).toEqual(['DISPATCHED', 'DISPATCHED']);
    expect(described?.wait?.reason).toBe('tenant_paused');
    expect(described?.wait?.maxWaitSeconds).toBeNull();
    expect(stored).toMatchObject({ paused: true, pausedBy: 'ops', pausedAt: now().toISOString() });
    expect(await states(paused)).toEqual(['DISPATCHED', 'DISPATCHED', 'DISPATCHED']);
  });

  it('starts nothing paused once the PUT answered, even when the pause lands between the picks and the writes', async () => {
    // Prepare: the pause is stored (and answered) right after the round read its picks
    const ids = await submit(3, 'acme');
    const scheduler = await newScheduler();
    const getMany = services.store.getMany.bind(services.store);
    let pausedAt: number | undefined;
    services.store.getMany = async (taskIds) => {
      const read = await getMany(taskIds);
      if (pausedAt === undefined) {
        await services.tasks.putTenant('acme', { weight: 1, maxConcurrency: 20, paused: true });
        pausedAt = nowMs;
      }
      return read;
    };
    // Act
    await settle(scheduler);
    // Assess: fails without the version read after the picks (the round dispatched all three)
    expect(pausedAt).toBeDefined();
    expect(await states(ids)).toEqual(['QUEUED', 'QUEUED', 'QUEUED']);
  });

  it('parks only the paused type: the tenant other work starts, and the type starts on resume', async () => {
    // Prepare
    await services.tasks.putTaskType('demo.echo', { paused: true }, 'ops');
    const echoes = await submit(3, 'acme');
    const sleeps = await submit(2, 'acme', { type: 'demo.sleep', payload: { ms: 1 } });
    const scheduler = await newScheduler();
    // Act
    await settle(scheduler);
    const described = await services.tasks.describe(echoes[0]!);
    const types = await services.tasks.listTaskTypes();
    await services.tasks.putTaskType('demo.echo', { paused: false });
    await settle(scheduler);
    // Assess
    expect(await states(sleeps)).toEqual(['DISPATCHED', 'DISPATCHED']);
    expect(described?.wait?.reason).toBe('type_paused');
    expect(types.find((type) => type.type === 'demo.echo')).toMatchObject({ paused: true, pausedBy: 'ops' });
    expect(await states(echoes)).toEqual(['DISPATCHED', 'DISPATCHED', 'DISPATCHED']);
  });

  it('keeps parked tasks out of the window: a paused type ahead of more than a window holds up none of the rest', async () => {
    // Prepare: quota 2 gives the tenant a window of 10; 15 tasks of the paused type come first
    await services.tasks.putTenant('acme', { weight: 1, maxConcurrency: 2 });
    await services.tasks.putTaskType('demo.echo', { paused: true });
    await submit(15, 'acme');
    nowMs += 1000;
    const sleeps = await submit(2, 'acme', { type: 'demo.sleep', payload: { ms: 1 } });
    const scheduler = await newScheduler();
    // Act: time moves so the index is read again past the parked ones
    for (let i = 0; i < 4; i++) {
      nowMs += 3000;
      await settle(scheduler, 3);
    }
    // Assess
    expect(await states(sleeps)).toEqual(['DISPATCHED', 'DISPATCHED']);
  });

  it('paces a tenant by its durable bucket, which a second scheduler with no memory cannot go past', async () => {
    // Prepare: 2 starts a second, burst 2
    await services.tasks.putTenant('acme', { weight: 1, maxConcurrency: 20, maxStartsPerSecond: 2, burst: 2 });
    const ids = await submit(6, 'acme');
    const first = await newScheduler();
    // Act
    await settle(first);
    const atStart = count(await states(ids), 'DISPATCHED');
    const second = await newScheduler(); // overlapping invocation, same instant
    await settle(second);
    const afterSecond = count(await states(ids), 'DISPATCHED');
    const waiting = [...(await services.store.getMany(ids)).values()].find((task) => task.state === 'QUEUED');
    const described = await services.tasks.describe(waiting!.taskId);
    nowMs += 500;
    await settle(second);
    const afterHalfSecond = count(await states(ids), 'DISPATCHED');
    // Assess
    expect(atStart).toBe(2);
    expect(afterSecond).toBe(2);
    expect(described?.wait?.reason).toBe('rate_limit');
    expect(afterHalfSecond).toBe(3);
  });

  it('runs one task of a key at a time across schedulers, the keyless work beside it, and the next after the first ends', async () => {
    // Prepare
    const keyed = await submit(3, 'acme', { concurrencyKey: 'store-1' });
    const free = await submit(1, 'acme');
    const first = await newScheduler();
    // Act
    await settle(first);
    const afterFirst = await states(keyed);
    const second = await newScheduler(); // no memory of the running key task
    await settle(second);
    const afterSecond = await states(keyed);
    const held = keyed[afterSecond.indexOf('QUEUED')]!;
    const described = await services.tasks.describe(held);
    // The running one ends (no completion reaches the second scheduler: its holder goes stale).
    const runningId = keyed[afterSecond.indexOf('DISPATCHED')]!;
    await services.store.transition(runningId, (task) => start(task, task.fence, now(), 60));
    await services.store.transition(runningId, (task) => succeed(task, task.fence, now(), null));
    nowMs += KEY_RECHECK_MS;
    await settle(second);
    const afterEnd = await states(keyed);
    // Assess
    expect(count(afterFirst, 'DISPATCHED')).toBe(1);
    expect(await states(free)).toEqual(['DISPATCHED']);
    expect(count(afterSecond, 'DISPATCHED')).toBe(1);
    expect(described?.wait?.reason).toBe('concurrency_key');
    expect(count(afterEnd, 'DISPATCHED')).toBe(1);
    expect(count(afterEnd, 'SUCCEEDED')).toBe(1);
  });

  it('a round that fails between the pick and the write holds no quota and strands no task (reservations)', async () => {
    // Prepare: `limited` has a start rate (its bucket is written per round), `free` has none.
    // The bucket write fails once, as an unanswered DynamoDB call does after the SDK's retries.
    // Before reservations the round threw with `free`'s picks counted and taken: never dispatched.
    await services.tasks.putTenant('limited', { weight: 1, maxConcurrency: 20, maxStartsPerSecond: 100 });
    const limited = await submit(1, 'limited');
    const free = await submit(2, 'free');
    const scheduler = await newScheduler();
    const flow = services.control.flow;
    const grant = flow.grant.bind(flow);
    let grants = 0;
    flow.grant = async (...args) => {
      if (grants++ === 0) throw new Error('socket hang up');
      return grant(...args);
    };
    // Act: tick until the failing round has run (it throws, as the loop sees it)
    const errors: unknown[] = [];
    for (let i = 0; i < 4 && grants === 0; i++) await scheduler.tick().catch((error) => errors.push(error));
    const heldAfterFailure = scheduler.policy.activeCount;
    const dispatched = await settle(scheduler);
    // Assess: nothing held for the failed round's picks, and every task dispatched after it
    expect(errors.map(String)).toEqual(['Error: socket hang up']);
    expect(heldAfterFailure).toBe(0);
    expect(dispatched).toBe(3);
    expect(await states([...limited, ...free])).toEqual(['DISPATCHED', 'DISPATCHED', 'DISPATCHED']);
    expect([scheduler.policy.activeCount, scheduler.activeCount]).toEqual([3, 3]);
  });
});
