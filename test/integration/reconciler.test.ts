import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { leasedShardOf } from '../../runtime/adapters/index-keys.ts';
import type { TierMessage } from '../../runtime/adapters/queues.ts';
import { type LeasedTaskRef, TaskStore } from '../../runtime/adapters/task-store.ts';
import { createTask, dispatch, start, succeed } from '../../runtime/core/lifecycle.ts';
import { LEGACY_ACTIVE_SHARDS, TASKS_TABLE } from '../../runtime/infra/resources.ts';
import { LEASE_REREAD_MS, NO_INTAKE, Reconciler } from '../../runtime/scheduler/reconciler.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { dispatchAsScheduler, taskSpec } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
beforeEach(async () => {
  services = await startTestServices({ config: { retry: { baseDelaySeconds: 0, maxDelaySeconds: 0 } } });
});
afterEach(async () => {
  await services.stop();
});

const DAY = 86_400_000;
const spec = taskSpec;
const reconcilerAt = (now: Date) =>
  new Reconciler({
    store: services.store,
    control: services.control,
    queues: services.queues,
    config: services.config,
    now: () => now,
  });

/** A task of tenant `acme` submitted (its announcement consumed), dispatched and started at `atMs`. */
/**
 * A running task, dispatched and started at its own runAt: the submit takes the wall clock, so a
 * time taken before it could come before runAt on a slow machine and the dispatch be refused.
 */
async function runningTask(runLeaseSeconds: number) {
  const { task } = await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo' });
  await services.queues.receive('tier-normal', { waitSeconds: 0 });
  const atMs = Date.parse(task.runAt);
  const dispatched = await dispatchAsScheduler(services.store, task, new Date(atMs), 60);
  await services.store.apply(start(dispatched, dispatched.fence, new Date(atMs), runLeaseSeconds));
  return { task, dispatched, atMs };
}

async function announced(tier = 'tier-normal') {
  const messages = await services.queues.receive<TierMessage>(tier, { waitSeconds: 0 });
  return messages.map((m) => m.body.taskId);
}

describe('Class: Reconciler (against the emulators)', () => {
  it('announces a delayed task of an unregistered tenant-tier once it is overdue, not before', async () => {
    // Prepare: written without a tier message (its submit crashed before the send), due in 20 days.
    const submitted = new Date();
    const task = createTask('far-future', spec({ runAt: new Date(submitted.getTime() + 20 * DAY) }), submitted);
    await services.store.create(task);

    // Act: a week before it is due, and two minutes after.
    const early = await reconcilerAt(new Date(submitted.getTime() + 13 * DAY)).run(NO_INTAKE, new Map());
    const overdue = await reconcilerAt(new Date(Date.parse(task.runAt) + 120_000)).run(NO_INTAKE, new Map());

    // Assess
    expect(early).toMatchObject({ reannounced: 0, unregisteredQueued: 0 });
    expect(overdue).toMatchObject({ reannounced: 1, unregisteredQueued: 1 });
    expect(await announced()).toEqual(['far-future']);
  });

  it('leaves alone the tasks of registered tenant-tiers and those the intake holds', async () => {
    await services.store.create(createTask('registered', spec({ tenantId: 'reg' }), new Date()));
    await services.store.create(createTask('held', spec({ tenantId: 'held' }), new Date()));
    const intake = {
      reads: (ref: { tenantId: string }) => ref.tenantId === 'reg',
      holds: (ref: { taskId: string }) => ref.taskId === 'held',
    };
    const result = await reconcilerAt(new Date(Date.now() + 120_000)).run(intake, new Map());
    expect(result).toMatchObject({ reannounced: 0, unregisteredQueued: 0 });
    expect(await announced()).toEqual([]);
  });

  it('puts a task whose worker died back in the queue, counting the attempt, keeping tier and age', async () => {
    const { task } = await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo', priority: 'high' });
    await services.queues.receive('tier-high', { waitSeconds: 0 }); // the submit's own message
    const dispatched = await dispatchAsScheduler(services.store, task, new Date(), 60);
    await services.store.apply(start(dispatched, dispatched.fence, new Date(), 60));

    const result = await reconcilerAt(new Date(Date.now() + 61_000)).run(NO_INTAKE, new Map());

    const recovered = await services.store.get(task.taskId);
    expect(result.expired).toBe(1);
    expect(recovered).toMatchObject({
      state: 'QUEUED',
      attempts: 1,
      priority: 'high',
      agingFrom: task.agingFrom,
      error: { name: 'LeaseExpired' },
    });
    expect(await announced('tier-high')).toEqual([task.taskId]);
  });

  it('reads a leased item again only once its known lease has passed, or LEASE_REREAD_MS after the last read', async () => {
    // Prepare: a running task with a 10-minute run lease, counted by the scheduler.
    const { task, dispatched, atMs: t0 } = await runningTask(600);
    let nowMs = t0 + 1_000;
    const reconciler = new Reconciler({
      store: services.store,
      control: services.control,
      queues: services.queues,
      config: services.config,
      now: () => new Date(nowMs),
    });
    const getMany = vi.spyOn(services.store, 'getMany');
    const active = new Map([[task.taskId, { fence: dispatched.fence, sinceMs: t0 }]]);
    const readsThisPass = async () => {
      getMany.mockClear();
      const result = await reconciler.run(NO_INTAKE, active);
      return { read: getMany.mock.calls.some(([ids]) => [...ids].includes(task.taskId)), expired: result.expired };
    };

    // Act: the first pass, 5 s later, LEASE_REREAD_MS after the read, and past the lease.
    const first = await readsThisPass();
    nowMs += 5_000;
    const soon = await readsThisPass();
    nowMs += LEASE_REREAD_MS;
    const later = await readsThisPass();
    nowMs = t0 + 601_000;
    const expiredPass = await readsThisPass();

    // Assess
    expect([first, soon, later]).toEqual([
      { read: true, expired: 0 },
      { read: false, expired: 0 },
      { read: true, expired: 0 },
    ]);
    expect(expiredPass).toEqual({ read: true, expired: 1 });
    expect(await services.store.get(task.taskId)).toMatchObject({ state: 'QUEUED', attempts: 1 });
  });

  it.each([
    ['byLeased', 'the version before the lease ledger'],
    ['byActive', 'the version before byLeased'],
  ])(
    "lists an older version's leased task (in %s, on no ledger page), counts it and expires its lease",
    async (index) => {
      // Prepare: a running task dispatched without a ledger page, stored as that version stored it.
      const { task } = await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo' });
      await services.queues.receive('tier-normal', { waitSeconds: 0 });
      const t0 = Date.parse(task.runAt);
      const dispatched = await services.store.apply(dispatch(task, new Date(t0), 60));
      await services.store.apply(start(dispatched, dispatched.fence, new Date(t0), 60));
      const TableName = services.emulators.tables[TASKS_TABLE.id]!;
      const { Item } = await services.clients.documents.send(
        new GetCommand({ TableName, Key: { taskId: task.taskId } }),
      );
      const leasedAt = dispatched.dispatchedAt;
      const shard = leasedShardOf(task.taskId);
      await services.clients.documents.send(
        new PutCommand({
          TableName,
          Item: {
            ...Item,
            // byActive's version had 4 shards: the hash mod 4, which is the mod-32 shard mod 4.
            ...(index === 'byLeased'
              ? { leasedShard: `LEASED#${shard}`, leasedAt }
              : { activeShard: `LEASED#${shard % LEGACY_ACTIVE_SHARDS}`, dueAt: leasedAt }),
          },
        }),
      );
      const listLeased = async () => {
        const refs = [];
        for await (const ref of services.store.listLeased()) refs.push(ref);
        return refs;
      };

      // Act
      const listed = await listLeased();
      const counted = await services.store.countLeasedByTenant();
      const any = await services.store.anyLeased();
      const result = await reconcilerAt(new Date(t0 + 61_000)).run(NO_INTAKE, new Map());

      // Assess: listed like any leased task, then recovered, and out of byActive once rewritten.
      expect(listed).toEqual([
        { ...listed[0], taskId: task.taskId, tenantId: 'acme', fence: dispatched.fence, leasedAt },
      ]);
      expect(listed[0]).not.toHaveProperty('state');
      expect([...counted]).toEqual([['acme', 1]]);
      expect(any).toBe(true);
      expect(result.expired).toBe(1);
      expect(await services.store.get(task.taskId)).toMatchObject({ state: 'QUEUED', attempts: 1 });
      expect(await listLeased()).toEqual([]);
    },
  );

  it('announces a QUEUED task that never got its message once the tier has drained', async () => {
    const orphan = createTask('orphan', spec(), new Date());
    await services.store.create(orphan);
    const result = await reconcilerAt(new Date(Date.now() + 120_000)).run(NO_INTAKE, new Map());
    expect(result).toMatchObject({ reannounced: 1, unregisteredQueued: 1 });
    expect(await announced()).toEqual(['orphan']);
  });

  it('waits while its tier holds announcements, unless the task is due for 15 minutes', async () => {
    // Prepare: a busy tier (a visible message that is not the lost tasks'), a task due 2 minutes
    // ago and one due 20 minutes ago, both without a message.
    const busy = createTask('busy', spec(), new Date());
    await services.queues.announce([busy], new Date());
    await services.store.create(createTask('recent', spec(), new Date(Date.now() - 2 * 60_000)));
    await services.store.create(createTask('lost', spec(), new Date(Date.now() - 20 * 60_000)));
    const reconciler = reconcilerAt(new Date());

    // Act: two passes of one scheduler.
    const first = await reconciler.run(NO_INTAKE, new Map());
    const again = await reconciler.run(NO_INTAKE, new Map());

    // Assess: the old one at once, and not again right after (its message is on the way).
    expect(first).toMatchObject({ reannounced: 1, unregisteredQueued: 1 });
    expect(again).toMatchObject({ reannounced: 0, unregisteredQueued: 0 });
    const messages = [...(await announced()), ...(await announced())];
    expect(messages.sort()).toEqual(['busy', 'lost']);
  });

  it('a fresh reconciler, as the scheduler Lambda builds every minute, goes on with the pass where the last one stopped', async () => {
    // Prepare: three orphans of three tenants, read one entry a pass.
    for (const tenantId of ['a', 'b', 'c']) {
      await services.store.create(createTask(`orphan-${tenantId}`, spec({ tenantId }), new Date()));
    }
    const fresh = (minute: number) =>
      new Reconciler({
        store: services.store,
        control: services.control,
        queues: services.queues,
        config: services.config,
        now: () => new Date(Date.now() + (2 + minute) * 60_000),
        backstopPage: 1,
      });

    // Act: a new reconciler each minute, each running once.
    const found: string[] = [];
    for (const minute of [0, 1, 2]) {
      await fresh(minute).run(NO_INTAKE, new Map());
      found.push(...(await announced()));
    }

    // Assess: each one read the next entry, not the first again.
    expect(found.sort()).toEqual(['orphan-a', 'orphan-b', 'orphan-c']);
  });

  it('finds nothing, and writes no cursor, when every queued task is read by the intake', async () => {
    await services.store.create(createTask('registered', spec(), new Date()));
    const everyone = { reads: () => true, holds: () => false };
    const result = await reconcilerAt(new Date(Date.now() + 120_000)).run(everyone, new Map());
    expect(result).toMatchObject({ reannounced: 0, unregisteredQueued: 0 });
    expect(await services.control.getSweepMarks()).toEqual({});
  });

  it('frees capacity the scheduler still counts for a task that is no longer active', async () => {
    const result = await reconcilerAt(new Date()).run(
      NO_INTAKE,
      new Map([
        ['finished-long-ago', { fence: 1, sinceMs: Date.now() - 60_000 }],
        ['dispatched-just-now', { fence: 1, sinceMs: Date.now() }],
      ]),
    );
    // The index may lag a fresh dispatch: only the old entry is released.
    expect(result.released).toEqual(['finished-long-ago']);
  });

  describe('capacity and a lagging index (issue 10, item 4)', () => {
    /** A store whose `byLeased` reads miss some tasks, as a lagging GSI does. */
    class LaggingStore extends TaskStore {
      readonly hidden = new Set<string>();
      override async *listLeased(options: { tenantId?: string } = {}): AsyncGenerator<LeasedTaskRef> {
        for await (const ref of super.listLeased(options)) if (!this.hidden.has(ref.taskId)) yield ref;
      }
    }
    const lagging = () =>
      new LaggingStore(services.clients.documents, services.emulators.tables[TASKS_TABLE.id]!, {
        leases: services.store.leasePages,
      });

    it('keeps counting an active task the index misses; frees it only once a consistent read shows it ended', async () => {
      const { task } = await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo' });
      const dispatched = await dispatchAsScheduler(services.store, task.taskId, new Date(), 120);
      const store = lagging();
      store.hidden.add(task.taskId);
      const reconciler = new Reconciler({
        store,
        control: services.control,
        queues: services.queues,
        config: services.config,
        now: () => new Date(),
      });
      const counted = new Map([[task.taskId, { fence: dispatched.fence, sinceMs: Date.now() - 60_000 }]]);

      const lagged = await reconciler.run(NO_INTAKE, counted);
      expect(lagged.released).toEqual([]);

      const started = await services.store.transition(task.taskId, (t) => start(t, dispatched.fence, new Date(), 60));
      const running = await reconciler.run(NO_INTAKE, counted);
      expect(running.released).toEqual([]);

      await services.store.apply(succeed(started, started.fence, new Date(), {}));
      const ended = await reconciler.run(NO_INTAKE, counted);
      expect(ended.released).toEqual([task.taskId]);
    });

    it('counts an active task the scheduler does not know of once the index shows it', async () => {
      const { task } = await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo' });
      const dispatched = await dispatchAsScheduler(services.store, task.taskId, new Date(), 120);
      const result = await reconcilerAt(new Date()).run(NO_INTAKE, new Map());
      expect(result.adopted).toEqual([expect.objectContaining({ taskId: task.taskId, fence: dispatched.fence })]);
    });
  });
});

describe('Class: Scheduler, the registry backstop end to end', () => {
  it('a task written without its announcement: found, announced, its tenant-tier registered, dispatched; counted once', async () => {
    // Prepare: a submit that crashed between its write and its send, a minute and more ago.
    const orphan = createTask('orphan', spec({ tenantId: 'lost' }), new Date());
    await services.store.create(orphan);
    const found: number[] = [];
    const scheduler = new Scheduler({
      store: services.store,
      control: services.control,
      queues: services.queues,
      config: services.config,
      now: () => new Date(Date.now() + 120_000),
      onUnregisteredQueued: (count) => found.push(count),
    });
    await scheduler.resume();

    // Act: the first tick's reconcile pass finds it; the next ticks take in its announcement.
    for (let tick = 0; tick < 5 && (await services.store.get('orphan'))?.state === 'QUEUED'; tick++) {
      await scheduler.tick();
    }

    // Assess
    expect(found).toEqual([1]);
    expect((await services.store.get('orphan'))?.state).toBe('DISPATCHED');
    expect((await services.control.listIntake()).map(({ tenantId, tier }) => `${tenantId}#${tier}`)).toEqual([
      'lost#normal',
    ]);
  });
});
