/**
 * The scheduler against in-memory ports (test/helpers/in-memory-ports.ts): its logic, with no
 * emulator and no AWS faked at the wire (issue 24 item 8).
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../runtime/core/config.ts';
import { createTask, start, succeed } from '../../runtime/core/lifecycle.ts';
import type { Task } from '../../runtime/core/task.ts';
import { COMPLETIONS_QUEUE, tierQueue } from '../../runtime/infra/resources.ts';
import { hasSchedulerWork } from '../../runtime/scheduler/activation.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { runSchedulerLoop, SCHEDULER_LEASE } from '../../runtime/scheduler/scheduler-loop.ts';
import { taskSpec } from '../helpers/factories.ts';
import { InMemoryControl, InMemoryQueues, InMemoryTasks } from '../helpers/in-memory-ports.ts';

const NOW = new Date('2026-12-02T08:00:00.000Z');

function setUp() {
  const tasks = new InMemoryTasks();
  const control = new InMemoryControl();
  const queues = new InMemoryQueues();
  const config = parseConfig({
    pools: { lambda: { concurrency: 3 }, fargate: { vcpu: 1, memoryMiB: 2048 } },
    tenantDefaults: { weight: 1, maxConcurrency: 10 },
    tenants: { capped: { weight: 1, maxConcurrency: 2 } },
  });
  const scheduler = new Scheduler({ store: tasks, control, queues, config, now: () => NOW });
  let seq = 0;
  /** Tasks as a submit writes and announces them. */
  const submit = async (count: number, tenantId: string): Promise<Task[]> => {
    const created = Array.from({ length: count }, () =>
      createTask(`${tenantId}-${++seq}`, taskSpec({ tenantId }), new Date(NOW.getTime() - 1000)),
    );
    tasks.put(...created);
    await queues.announce(created);
    return created;
  };
  const ticks = async (count: number) => {
    let dispatched = 0;
    for (let i = 0; i < count; i++) dispatched += (await scheduler.tick()).dispatched;
    return dispatched;
  };
  return { tasks, control, queues, scheduler, submit, ticks };
}

/**
 * In-memory ports, a clock the test moves (`clock.nowMs`), and a scheduler on them built when the
 * test has set the ports up (`newScheduler`); `submit` writes and announces a task due a second ago.
 */
function withMovingClock(lambdaConcurrency: number) {
  const clock = { nowMs: NOW.getTime() };
  const tasks = new InMemoryTasks();
  const control = new InMemoryControl();
  const queues = new InMemoryQueues();
  const config = parseConfig({
    pools: { lambda: { concurrency: lambdaConcurrency }, fargate: { vcpu: 1, memoryMiB: 2048 } },
  });
  const newScheduler = () => new Scheduler({ store: tasks, control, queues, config, now: () => new Date(clock.nowMs) });
  const submit = async (taskId: string, tenantId = 'a') => {
    const task = createTask(taskId, taskSpec({ tenantId }), new Date(clock.nowMs - 1000));
    tasks.put(task);
    await queues.announce([task]);
    return task;
  };
  return { clock, tasks, control, queues, newScheduler, submit };
}

/**
 * `byTenantQueue` as a Scan meets a large index: every page full of tasks due tomorrow, and
 * another after it (the activation check's whole-index read runs out of its budget and falls back
 * to the registrations' first entries). Returns the pages read.
 */
function behindLargeIndex(tasks: InMemoryTasks): { pages: number } {
  const read = { pages: 0 };
  const tomorrow = new Date(NOW.getTime() + 86_400_000).toISOString();
  tasks.scanQueued = async (limit: number) => {
    read.pages++;
    const refs = Array.from({ length: limit }, (_, i) => ({
      taskId: `far-${read.pages}-${i}`,
      tenantId: `far-${i % 7}`,
      priority: 'normal' as const,
      runtime: 'lambda' as const,
      resources: { vcpu: 0.25, memoryMiB: 512 },
      agingFrom: tomorrow,
      runAt: tomorrow,
      fence: 0,
    }));
    return { refs, next: { page: read.pages } as never };
  };
  return read;
}

describe('Class: Scheduler (in-memory ports)', () => {
  it('dispatches within the pool and the quota, one fenced worker message each, and frees capacity on completion', async () => {
    // Prepare
    const { tasks, control, queues, scheduler, submit, ticks } = setUp();
    await scheduler.resume();
    await submit(4, 'capped');
    await submit(1, 'other');

    // Act
    const dispatched = await ticks(3);

    // Assess: 3 slots, `capped` held to 2; the announcements consumed, both tenant-tiers registered
    expect(dispatched).toBe(3);
    const sent = queues.sentToWorkers.map(({ message }) => message);
    expect(sent.map((message) => message.tenantId).sort()).toEqual(['capped', 'capped', 'other']);
    expect(sent.every((message) => message.fence === 1)).toBe(true);
    expect(sent.map((message) => tasks.items.get(message.taskId)?.state)).toEqual(Array(3).fill('DISPATCHED'));
    expect(queues.depth(tierQueue('normal').id)).toBe(0);
    expect([...control.registry.keys()].sort()).toEqual(['normal#capped', 'normal#other']);
    expect([scheduler.activeCount, scheduler.policy.activeCount]).toEqual([3, 3]);

    // Act: a worker runs the first `capped` task and reports it
    const first = sent.find((message) => message.tenantId === 'capped')!;
    await tasks.transition(first.taskId, (task) => start(task, first.fence, NOW, 60));
    const done = await tasks.transition(first.taskId, (task) => succeed(task, first.fence, NOW, 1));
    queues.send(COMPLETIONS_QUEUE.id, {
      taskId: done.taskId,
      fence: done.fence,
      tenantId: 'capped',
      state: done.state,
    });
    const more = await ticks(2);

    // Assess: its slot and quota went to the next `capped` task
    expect(more).toBe(1);
    expect(queues.sentToWorkers.at(-1)?.message.tenantId).toBe('capped');
    expect([scheduler.activeCount, scheduler.policy.activeCount]).toEqual([3, 3]);
  });

  it('a deregistration whose answer was lost is not taken for a registration: the next task registers its tenant-tier again', async () => {
    // Prepare: a clock that moves; tenant a's one task dispatched and ended, so its tenant-tier empties
    const { clock, tasks, control, queues, newScheduler, submit } = withMovingClock(3);
    const scheduler = newScheduler();
    await scheduler.resume();
    await submit('a-1');
    await scheduler.tick();
    const sent = queues.sentToWorkers[0]!.message;
    await tasks.transition(sent.taskId, (task) => start(task, sent.fence, new Date(clock.nowMs), 60));
    const done = await tasks.transition(sent.taskId, (task) => succeed(task, sent.fence, new Date(clock.nowMs), 1));
    queues.send(COMPLETIONS_QUEUE.id, { taskId: done.taskId, fence: done.fence, tenantId: 'a', state: done.state });
    // The registry's delete applies and its answer is lost: the SDK's retry finds nothing to delete.
    const deregister = control.deregisterIntake.bind(control);
    let lost = 0;
    control.deregisterIntake = async (registration, before) => {
      if (await deregister(registration, before)) lost++;
      return false;
    };

    // Act: long enough for the probe (G after the last announcement) and its retry; then a new task
    for (let i = 0; i < 40 && lost === 0; i++) {
      clock.nowMs += 1_000;
      await scheduler.tick();
    }
    await scheduler.tick();
    const registeredAfterLoss = control.registry.has('normal#a');
    await submit('a-2');
    await scheduler.tick();

    // Assess: the registry lost the item; the new task's announcement registered the tenant-tier
    // again, so a scheduler starting afresh (every Lambda invocation) finds its work
    expect(lost).toBe(1);
    expect(registeredAfterLoss).toBe(false);
    expect(control.registry.has('normal#a')).toBe(true);
  });

  it('publishes no snapshot whose rotation its successor could not restore: the rotation is saved first, and a failed save publishes nothing', async () => {
    // Prepare: one slot; a's task runs, then b's waits with a turn the snapshot would publish
    const { clock, control, newScheduler, submit } = withMovingClock(1);
    const scheduler = newScheduler();
    await scheduler.resume();
    await submit('a-1', 'a');
    await scheduler.tick();
    const before = control.snapshot;
    await submit('b-1', 'b');
    const saveRotation = control.putRotation.bind(control);
    control.putRotation = async () => {
      throw new Error('ProvisionedThroughputExceededException');
    };

    // Act: the upkeep's rotation write fails
    clock.nowMs += 3_000;
    await expect(scheduler.tick()).rejects.toThrow('ProvisionedThroughputExceededException');

    // Assess: b's turn was not published (a successor restoring the rotation would not know it)
    expect(control.snapshot).toBe(before);
    expect(JSON.stringify(control.snapshot)).not.toContain('"b"');

    // Act: the write goes through again
    control.putRotation = saveRotation;
    clock.nowMs += 3_000;
    await scheduler.tick();

    // Assess: published now, with the rotation saved alongside it
    expect(JSON.stringify(control.snapshot)).toContain('"b"');
    expect(JSON.stringify(control.rotation)).toContain('"b"');
  });

  it('a task cancelled between the round read and its write is let go: nothing held, nothing sent, not picked again', async () => {
    // Prepare: the cancel lands just before the dispatch write is checked
    const { tasks, queues, scheduler, submit, ticks } = setUp();
    await scheduler.resume();
    const [task] = await submit(1, 'other');
    let refused = 0;
    tasks.beforeApply = (plan) => {
      if (plan.next.taskId !== task!.taskId || plan.next.state !== 'DISPATCHED') return;
      const current = tasks.items.get(task!.taskId)!;
      tasks.put({ ...current, state: 'CANCELLED', version: current.version + 1 });
      refused++;
    };

    // Act
    const dispatched = await ticks(3);

    // Assess
    expect(refused).toBe(1);
    expect(dispatched).toBe(0);
    expect(queues.sentToWorkers).toEqual([]);
    expect(tasks.items.get(task!.taskId)?.state).toBe('CANCELLED');
    expect([scheduler.activeCount, scheduler.policy.activeCount, scheduler.heldCount]).toEqual([0, 0, 0]);
  });

  it('reads the whole settings only when their version moved, and every 5 minutes as a fallback: not every 10 s (10,000 tenants made that 674.5 read units)', async () => {
    // Prepare: a clock that moves; a stored tenant setting, then a steady state with nothing to do
    const { clock, control, newScheduler } = withMovingClock(3);
    control.tenants = [{ tenantId: 'acme', weight: 1, maxConcurrency: 4, updatedAt: NOW.toISOString() }];
    const scheduler = newScheduler();
    await scheduler.resume();
    const ticksFor = async (ms: number) => {
      for (const end = clock.nowMs + ms; clock.nowMs < end; ) {
        clock.nowMs += 1_000;
        await scheduler.tick();
      }
    };
    const afterResume = control.settingsScans;

    // Act: four minutes with nothing stored
    await ticksFor(4 * 60_000);
    const steady = control.settingsScans - afterResume;
    const versionReads = control.versionReads;

    // Act: a PUT (settings written, version bumped); then one whose bump was lost (the caller got an error)
    control.tenants = [{ tenantId: 'acme', weight: 1, maxConcurrency: 5, updatedAt: NOW.toISOString() }];
    control.version = 'v2';
    await ticksFor(11_000);
    const afterPut = scheduler.policy.tenantSettings('acme').maxConcurrency;
    control.tenants = [{ tenantId: 'acme', weight: 1, maxConcurrency: 6, updatedAt: NOW.toISOString() }];
    await ticksFor(60_000);
    const beforeFallback = scheduler.policy.tenantSettings('acme').maxConcurrency;
    await ticksFor(5 * 60_000);

    // Assess: the steady state read only the version (one small item, every 10 s); a bump is
    // taken within 10 s, a lost one by the 5-minute rescan
    expect(afterResume).toBe(1);
    expect(steady).toBe(0);
    expect(versionReads).toBeGreaterThanOrEqual(20);
    expect(afterPut).toBe(5);
    expect(beforeFallback).toBe(5);
    expect(scheduler.policy.tenantSettings('acme').maxConcurrency).toBe(6);
  });

  it('a resume that takes most of the lease renews it before the first tick: the lease does not lapse (10,000 tenant-tiers to restore)', async () => {
    // Prepare: a clock that moves; resume takes 25 s of the 30 s lease (its settings scan, here)
    let nowMs = NOW.getTime();
    const tasks = new InMemoryTasks();
    const control = new InMemoryControl();
    const queues = new InMemoryQueues();
    const config = parseConfig({ pools: { lambda: { concurrency: 3 }, fargate: { vcpu: 1, memoryMiB: 2048 } } });
    const listSettings = control.listSettings.bind(control);
    control.listSettings = async () => {
      nowMs += 25_000;
      return listSettings();
    };
    const events: string[] = [];
    let ticks = 0;

    // Act: 20 ticks of a second each
    await runSchedulerLoop({
      control,
      createScheduler: () => new Scheduler({ store: tasks, control, queues, config, now: () => new Date(nowMs) }),
      signal: new AbortController().signal,
      keepGoing: () => ticks < 20,
      now: () => new Date(nowMs),
      waitSeconds: 0,
      leaseTtlMs: 30_000,
      onTick: () => {
        ticks++;
        nowMs += 1_000;
      },
      onLease: (event, lease) => events.push(`${event} ${lease.token}`),
    });

    // Assess: one lease, held throughout (before: renewed 10 s after resume ended, when it had lapsed)
    expect(events).toEqual(['acquired 1', 'released 1']);
  });

  it('activation reads registered tenant-tiers a few at a time and stops at the first due: 10,000 at once (90,000 Queries) failed on timeouts', async () => {
    // Prepare: 2,000 registered tenant-tiers, each with one task due in an hour; the 11th also one
    // due now; behind an index too large to read whole
    const { tasks, control, queues } = setUp();
    const services = { store: tasks, control, queues };
    behindLargeIndex(tasks);
    for (let i = 0; i < 2_000; i++) {
      tasks.put(
        createTask(`later-${i}`, taskSpec({ tenantId: `t${i}`, runAt: new Date(NOW.getTime() + 3_600_000) }), NOW),
      );
      await control.registerIntake(`t${i}`, 'normal', NOW);
    }
    const firstQueued = tasks.firstQueued.bind(tasks);
    let inFlight = 0;
    let most = 0;
    let reads = 0;
    tasks.firstQueued = async (tenantId, tier) => {
      reads++;
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      return firstQueued(tenantId, tier);
    };

    // Act
    const idle = await hasSchedulerWork(services, NOW);
    const readsIdle = reads;
    tasks.put(createTask('due-now', taskSpec({ tenantId: 't10' }), NOW));
    reads = 0;
    const due = await hasSchedulerWork(services, NOW);

    // Assess: every registration read when nothing is due, never more than 4 at once; stopped soon after the due one
    expect([idle, readsIdle, most <= 4]).toEqual([false, 2_000, true]);
    expect(due).toBe(true);
    expect(reads).toBeLessThanOrEqual(16);
  });

  it("the idle stop's check keeps the lease while it reads: 2,000 registered tenant-tiers read one by one outlast the 30 s lease, which lapsed and was taken again (a start-over, a resume of every tenant-tier)", async () => {
    // Prepare: a clock that moves; 2,000 registered tenant-tiers with work due in an hour; each read 30 ms
    let nowMs = NOW.getTime();
    const tasks = new InMemoryTasks();
    const control = new InMemoryControl();
    const queues = new InMemoryQueues();
    const config = parseConfig({ pools: { lambda: { concurrency: 3 }, fargate: { vcpu: 1, memoryMiB: 2048 } } });
    for (let i = 0; i < 2_000; i++) {
      tasks.put(
        createTask(`later-${i}`, taskSpec({ tenantId: `t${i}`, runAt: new Date(NOW.getTime() + 3_600_000) }), NOW),
      );
      await control.registerIntake(`t${i}`, 'normal', NOW);
    }
    // The minute tick tries the lease now and then: it takes it if it lapsed.
    const tookOver: number[] = [];
    behindLargeIndex(tasks);
    const firstQueued = tasks.firstQueued.bind(tasks);
    tasks.firstQueued = async (tenantId, tier) => {
      nowMs += 30;
      if (nowMs % 1_000 < 30 && (await control.acquireLease(SCHEDULER_LEASE, 'the-tick', nowMs, 30_000))) {
        tookOver.push(nowMs);
      }
      return firstQueued(tenantId, tier);
    };
    const services = { store: tasks, control, queues };
    const events: string[] = [];
    let ticks = 0;

    // Act: ticks of a second each, until the loop stops idle (or 200 ticks)
    const end = await runSchedulerLoop({
      control,
      createScheduler: () => new Scheduler({ store: tasks, control, queues, config, now: () => new Date(nowMs) }),
      signal: new AbortController().signal,
      keepGoing: () => ticks < 200,
      now: () => new Date(nowMs),
      waitSeconds: 0,
      leaseTtlMs: 30_000,
      waitForLease: false,
      idleStop: {
        afterMs: 20_000,
        graceMs: 3_000,
        hasWork: (keepAlive) => hasSchedulerWork(services, new Date(nowMs), undefined, undefined, keepAlive),
      },
      onTick: () => {
        ticks++;
        nowMs += 1_000;
      },
      onLease: (event, lease) => events.push(`${event} ${lease.token}`),
    });

    // Assess: it read every registration (60 s) under one lease, found nothing due within 90 s, and stopped
    expect(tookOver).toEqual([]);
    expect(events).toEqual(['acquired 1', 'released 1']);
    expect(end).toBe('idle');
  });

  it("activation reads the index whole when that costs less than the registrations' first entries: 2,000 registered tenant-tiers with a task due in an hour are one page, not 18,000 Queries", async () => {
    // Prepare: 2,000 registered tenant-tiers, each with one task due in an hour
    const { tasks, control, queues } = setUp();
    const services = { store: tasks, control, queues };
    for (let i = 0; i < 2_000; i++) {
      tasks.put(
        createTask(`later-${i}`, taskSpec({ tenantId: `t${i}`, runAt: new Date(NOW.getTime() + 3_600_000) }), NOW),
      );
      await control.registerIntake(`t${i}`, 'normal', NOW);
    }
    let firstEntries = 0;
    const firstQueued = tasks.firstQueued.bind(tasks);
    tasks.firstQueued = async (tenantId, tier) => {
      firstEntries++;
      return firstQueued(tenantId, tier);
    };
    const scans: number[] = [];
    const scanQueued = tasks.scanQueued.bind(tasks);
    tasks.scanQueued = async (limit: number) => {
      scans.push(limit);
      return scanQueued(limit);
    };

    // Act: nothing due within 90 s; then a task of the 11th tenant due now
    const idle = await hasSchedulerWork(services, NOW);
    const idleScans = [...scans];
    tasks.put(createTask('due-now', taskSpec({ tenantId: 't10' }), NOW));
    const due = await hasSchedulerWork(services, NOW);

    // Assess: the Limit-1 emptiness read and one page of the whole index each time, no first entries
    expect([idle, due]).toEqual([false, true]);
    expect(idleScans).toEqual([1, 3_000]);
    expect(firstEntries).toBe(0);
  });

  it("activation falls back to the registrations' first entries behind an index too large to read whole, spending no more on the attempt than they cost", async () => {
    // Prepare: one registered tenant-tier, its task due now, behind a large index
    const { tasks, control, queues } = setUp();
    const services = { store: tasks, control, queues };
    tasks.put(createTask('due-now', taskSpec({ tenantId: 'small' }), NOW));
    await control.registerIntake('small', 'normal', NOW);
    const scanned: number[] = [];
    const read = behindLargeIndex(tasks);
    const scanQueued = tasks.scanQueued.bind(tasks);
    tasks.scanQueued = async (limit: number) => {
      scanned.push(limit);
      return scanQueued(limit);
    };

    // Act
    const needed = await hasSchedulerWork(services, NOW);

    // Assess: found through its first entry; the whole-index read stopped at its budget (4.5 + 20
    // read units: about 600 entries), after the Limit-1 read
    expect(needed).toBe(true);
    expect(scanned[0]).toBe(1);
    const wholeIndexEntries = scanned.slice(1).reduce((sum, limit) => sum + limit, 0);
    expect(wholeIndexEntries).toBeGreaterThan(0);
    expect(wholeIndexEntries).toBeLessThanOrEqual(Math.ceil((4.5 + 20) * 25) + 1);
    expect(read.pages).toBe(scanned.length);
  });

  it("activation: a due announcement nobody took starts a scheduler, wherever its task falls in the index scan (it was left to the backstop's page a minute)", async () => {
    // Prepare: a registered tenant-tier with 600 tasks due tomorrow; no scheduler runs. Another
    // tenant's task, submitted with a delay, is due now: its announcement (sent with that delay)
    // is visible in the tier queue, its tenant-tier is not registered, and a Scan (in DynamoDB's
    // order, not by due time) lists it after the first page.
    const { tasks, control, queues } = setUp();
    const services = { store: tasks, control, queues };
    const tomorrow = new Date(NOW.getTime() + 86_400_000);
    const later = Array.from({ length: 600 }, (_, i) =>
      createTask(`tomorrow-${i}`, taskSpec({ tenantId: 'big', runAt: tomorrow }), NOW),
    );
    tasks.put(...later);
    await control.registerIntake('big', 'normal', NOW);
    const delayed = createTask(
      'delayed-1',
      taskSpec({ tenantId: 'new', runAt: NOW }),
      new Date(NOW.getTime() - 300_000),
    );
    tasks.put(delayed);
    await queues.announce([delayed]);
    const inScanOrder = [...later, delayed].map((task) => ({ ...task }));
    tasks.scanQueued = async (limit: number, cursor?: unknown) => {
      const from = typeof cursor === 'number' ? cursor : 0;
      const page = inScanOrder.slice(from, from + limit);
      const next = from + limit < inScanOrder.length ? from + limit : undefined;
      return {
        refs: page.map((task) => ({
          taskId: task.taskId,
          tenantId: task.tenantId,
          priority: task.priority,
          runAt: task.runAt,
          fence: task.fence,
        })) as never,
        ...(next === undefined ? {} : { next: next as never }),
      };
    };

    // Act
    const needed = await hasSchedulerWork(services, NOW);

    // Assess
    expect(needed).toBe(true);
  });

  it('activation: no scheduler is started for nothing, one is for a registered tenant-tier due soon or a leased task', async () => {
    const { tasks, control, queues } = setUp();
    const services = { store: tasks, control, queues };
    expect(await hasSchedulerWork(services, NOW)).toBe(false);

    const due = createTask('due-1', taskSpec({ tenantId: 'a' }), NOW);
    tasks.put(due);
    await control.registerIntake('a', 'normal', NOW);
    expect(await hasSchedulerWork(services, NOW)).toBe(true);

    tasks.put({ ...due, state: 'RUNNING', fence: 1 });
    expect(await hasSchedulerWork(services, NOW)).toBe(true);
    tasks.put({ ...due, state: 'SUCCEEDED', fence: 1 });
    expect(await hasSchedulerWork(services, NOW)).toBe(false);
  });
  it('a completion round that fails midway leaves no rejection unhandled: the deletes it had sent are waited for before it throws (CI, 1b80359)', async () => {
    // Prepare: 3 attempts dispatched and reported finished; every completions delete fails, and
    // the round's second receive (the first came back full) is throttled
    const { tasks, queues, scheduler, submit, ticks } = setUp();
    await scheduler.resume();
    await submit(3, 'other');
    await ticks(1);
    for (const { message } of queues.sentToWorkers) {
      await tasks.transition(message.taskId, (task) => start(task, message.fence, NOW, 60));
      const done = await tasks.transition(message.taskId, (task) => succeed(task, message.fence, NOW, 1));
      queues.send(COMPLETIONS_QUEUE.id, {
        taskId: done.taskId,
        fence: done.fence,
        tenantId: 'other',
        state: done.state,
      });
    }
    // Stale reports (no active attempt) fill the first receive to 10, so the round reads again.
    for (let i = 0; i < 7; i++) {
      queues.send(COMPLETIONS_QUEUE.id, { taskId: `gone-${i}`, fence: 1, tenantId: 'other', state: 'SUCCEEDED' });
    }
    const receive = queues.receive.bind(queues);
    let completionReceives = 0;
    queues.receive = async <T>(queueId: string, options?: { max?: number }) => {
      if (queueId === COMPLETIONS_QUEUE.id && ++completionReceives >= 2) throw new Error('injected: receive throttled');
      return receive<T>(queueId, options);
    };
    queues.delete = async (queueId) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      throw new Error(`injected: delete on ${queueId} throttled`);
    };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);

    // Act
    try {
      await expect(ticks(2)).rejects.toThrow('injected');
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }

    // Assess: the tick failed as a whole, and no promise it started was left to fail unheard
    expect(completionReceives).toBeGreaterThanOrEqual(2);
    expect(unhandled).toEqual([]);
  });
});
