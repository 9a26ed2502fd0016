/**
 * Scale to zero (runtime/scheduler/activation.ts): the loop stops after an idle spell unless work
 * is due soon, announcing a task wakes a stopped scheduler, and a live lease suppresses the wake.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { QueueClient } from '../../runtime/adapters/queues.ts';
import { buildServices } from '../../runtime/app/wiring.ts';
import { schedulerLeaseName, shardOfTenant } from '../../runtime/core/shards.ts';
import { hasSchedulerWork, SchedulerWaker } from '../../runtime/scheduler/activation.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { runSchedulerLoop, SCHEDULER_LEASE } from '../../runtime/scheduler/scheduler-loop.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
beforeEach(async () => {
  services = await startTestServices();
});
afterEach(async () => {
  await services.stop();
});

const newScheduler = (queues = services.queues) =>
  new Scheduler({ store: services.store, control: services.control, queues, config: services.config });

const idleStop = (afterMs: number) => ({
  afterMs,
  graceMs: 1_000,
  hasWork: () => hasSchedulerWork(services, new Date()),
});

describe('Function: runSchedulerLoop with idleStop', () => {
  it('stops after an idle spell, shortening its lease to the grace period before handing it back', async () => {
    const expiries: { readAtMs: number; expiresAt: number }[] = [];
    const end = await runSchedulerLoop({
      control: services.control,
      signal: new AbortController().signal,
      ownerId: 'idle',
      waitSeconds: 1,
      idleStop: idleStop(500),
      createScheduler: () => newScheduler(),
      onTick: () => {
        const readAtMs = Date.now();
        void services.control
          .getLease(SCHEDULER_LEASE)
          .then((lease) => expiries.push({ readAtMs, expiresAt: lease?.expiresAt ?? 0 }));
      },
    });
    expect(end).toBe('idle');
    // The stop was published: ticks first saw the 30 s lease, then one expiring within the grace.
    expect(expiries.some(({ readAtMs, expiresAt }) => expiresAt - readAtMs > 20_000)).toBe(true);
    expect(expiries.some(({ readAtMs, expiresAt }) => expiresAt > 0 && expiresAt - readAtMs <= 1_100)).toBe(true);
    const lease = await services.control.getLease(SCHEDULER_LEASE);
    expect(lease?.expiresAt).toBe(0);
    expect(lease?.releasedAtMs).toBeGreaterThan(0);
  }, 20_000);

  it('keeps running while a task is due within the horizon (a delayed task, a retry backoff)', async () => {
    await services.tasks.submit({ tenantId: 't', type: 'demo.echo', payload: {}, delaySeconds: 30 });
    const stop = new AbortController();
    let ticks = 0;
    const end = await runSchedulerLoop({
      control: services.control,
      signal: stop.signal,
      ownerId: 'due',
      waitSeconds: 1,
      idleStop: idleStop(200),
      createScheduler: () => newScheduler(),
      onTick: () => {
        if (++ticks >= 4) stop.abort();
      },
    });
    expect(end).toBe('stopped');
  }, 20_000);

  it('returns at once when another scheduler holds the lease and waitForLease is false', async () => {
    await services.control.acquireLease(SCHEDULER_LEASE, 'other', Date.now(), 30_000);
    let created = 0;
    const end = await runSchedulerLoop({
      control: services.control,
      signal: new AbortController().signal,
      ownerId: 'second',
      waitForLease: false,
      createScheduler: () => {
        created++;
        return newScheduler();
      },
    });
    expect(end).toBe('lease-held');
    expect(created).toBe(0);
  });

  it('reports every failed tick to onTickError', async () => {
    const broken = new QueueClient(services.emulators.clients.sqs, {});
    const stop = new AbortController();
    const errors: unknown[] = [];
    await runSchedulerLoop({
      control: services.control,
      signal: stop.signal,
      ownerId: 'broken',
      waitSeconds: 0,
      createScheduler: () => newScheduler(broken),
      onTickError: (error) => {
        errors.push(error);
        if (errors.length >= 2) stop.abort();
      },
    });
    expect(errors).toHaveLength(2);
    expect(String(errors[0])).toMatch(/No URL configured/);
  });
});

describe('Function: hasSchedulerWork', () => {
  it('sees queued tasks due within the horizon and leased tasks, not tasks due later', async () => {
    const now = new Date();
    expect(await hasSchedulerWork(services, now)).toBe(false);
    await services.tasks.submit({ tenantId: 't', type: 'demo.echo', payload: {}, delaySeconds: 3600 });
    expect(await hasSchedulerWork(services, now)).toBe(false);
    await services.tasks.submit({ tenantId: 't', type: 'demo.echo', payload: {}, delaySeconds: 60 });
    expect(await hasSchedulerWork(services, now)).toBe(true);
  });

  it('reads the registry for registered tenant-tiers: work due within the horizon, not later', async () => {
    // Prepare: a registered tenant-tier whose only task is an hour ahead.
    const now = new Date();
    await services.tasks.submit({ tenantId: 'r', type: 'demo.echo', payload: {}, delaySeconds: 3600 });
    await services.control.registerIntake('r', 'normal', now);
    // Act, Assess
    expect(await hasSchedulerWork(services, now)).toBe(false);
    expect(await hasSchedulerWork(services, new Date(now.getTime() + 3_550_000))).toBe(true);
  });

  it('finds an unregistered task due now behind a registered tenant-tier delayed work (lost announcement)', async () => {
    // Prepare: registered delayed work first in scan order, then a task written without its
    // announcement (a submit that crashed before its send), of an unregistered tenant-tier.
    const now = new Date();
    for (const tenantId of ['a', 'b', 'c']) {
      await services.tasks.submit({ tenantId, type: 'demo.echo', payload: {}, delaySeconds: 3600 });
      await services.control.registerIntake(tenantId, 'normal', now);
    }
    const { task } = await services.tasks.submit({ tenantId: 'x', type: 'demo.echo', payload: {}, delaySeconds: 3600 });
    await services.store.create({
      ...task,
      taskId: 'orphan',
      tenantId: 'orphan-tenant',
      runAt: now.toISOString(),
      agingFrom: now.toISOString(),
    });
    await services.control.registerIntake('x', 'normal', now);
    // Act, Assess: the answer does not depend on where the orphan falls in the scan.
    expect(await hasSchedulerWork(services, now)).toBe(true);
  });
});

describe('Class: SchedulerWaker', () => {
  it('wakes once when no scheduler holds the lease, trusting that for the cache period', async () => {
    let wakes = 0;
    let clock = 1_000_000;
    const waker = new SchedulerWaker({ control: services.control, wake: async () => void wakes++, now: () => clock });
    const due = [{ tenantId: 'a', runAt: new Date().toISOString() }];
    await waker.afterAnnounce(due, new Date());
    await waker.afterAnnounce(due, new Date());
    expect(wakes).toBe(1);
    clock += 5_000;
    await waker.afterAnnounce(due, new Date());
    expect(wakes).toBe(2);
  });

  it('does not wake while the lease is live, nor for a task due beyond the horizon', async () => {
    let wakes = 0;
    const waker = new SchedulerWaker({ control: services.control, wake: async () => void wakes++ });
    await waker.afterAnnounce([{ tenantId: 'a', runAt: new Date(Date.now() + 3_600_000).toISOString() }], new Date());
    expect(wakes).toBe(0);
    await services.control.acquireLease(SCHEDULER_LEASE, 'running', Date.now(), 30_000);
    await waker.afterAnnounce([{ tenantId: 'a', runAt: new Date().toISOString() }], new Date());
    expect(wakes).toBe(0);
  });

  it('trusts a live lease no longer than its expiry: a stopping scheduler is seen as gone once it is', async () => {
    let wakes = 0;
    let clock = Date.now();
    const waker = new SchedulerWaker({
      control: services.control,
      wake: async () => void wakes++,
      now: () => clock,
      cacheMs: 60_000,
    });
    // A scheduler that published its stop: lease expiring 500 ms ahead.
    await services.control.acquireLease(SCHEDULER_LEASE, 'stopping', clock, 500);
    await waker.afterAnnounce([{ tenantId: 'a', runAt: new Date().toISOString() }], new Date());
    expect(wakes).toBe(0);
    clock += 600;
    await waker.afterAnnounce([{ tenantId: 'a', runAt: new Date().toISOString() }], new Date());
    expect(wakes).toBe(1);
  });

  it("wakes the scheduler of each task's shard, and only those whose lease is not live", async () => {
    const woken: number[] = [];
    const waker = new SchedulerWaker({
      control: services.control,
      wake: async (shard) => void woken.push(shard),
      shards: 4,
    });
    const tenants = ['t1', 't2', 't3', 't4', 't5', 't6', 't7', 't8'];
    const shardsOf = new Set(tenants.map((tenantId) => shardOfTenant(tenantId, 4)));
    const live = shardOfTenant('t1', 4);
    await services.control.acquireLease(schedulerLeaseName(live), 'running', Date.now(), 30_000);
    const now = new Date();
    await waker.afterAnnounce(
      tenants.map((tenantId) => ({ tenantId, runAt: now.toISOString() })),
      now,
    );
    expect(woken.sort()).toEqual([...shardsOf].filter((shard) => shard !== live).sort());
    expect(shardsOf.size).toBeGreaterThan(1);
  });

  it('is called by every announce through the queue client: a submit wakes the scheduler', async () => {
    let wakes = 0;
    const woken = buildServices({
      config: services.config,
      clients: services.emulators.clients,
      resources: { tables: services.emulators.tables, queueUrls: services.emulators.queueUrls },
      wakeScheduler: async () => void wakes++,
    });
    await woken.tasks.submit({ tenantId: 't', type: 'demo.echo', payload: {} });
    expect(wakes).toBe(1);
  });

  it('a failed wake does not fail the submit (the tick is the safety net)', async () => {
    const woken = buildServices({
      config: services.config,
      clients: services.emulators.clients,
      resources: { tables: services.emulators.tables, queueUrls: services.emulators.queueUrls },
      wakeScheduler: async () => {
        throw new Error('throttled');
      },
    });
    const { task } = await woken.tasks.submit({ tenantId: 't', type: 'demo.echo', payload: {} });
    expect((await services.store.get(task.taskId))?.state).toBe('QUEUED');
  });
});
