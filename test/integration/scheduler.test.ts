import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { TaskStore } from '../../runtime/adapters/task-store.ts';
import type { TransitionPlan } from '../../runtime/core/lifecycle.ts';
import { start, succeed } from '../../runtime/core/lifecycle.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;

beforeEach(async () => {
  services = await startTestServices({
    config: {
      pools: { lambda: { concurrency: 3 }, fargate: { vcpu: 1, memoryMiB: 2048 } },
      tenantDefaults: { weight: 1, maxConcurrency: 10 },
      tenants: { capped: { weight: 1, maxConcurrency: 2 } },
    },
  });
});
afterEach(async () => {
  await services.stop();
});

const newScheduler = (extra: { now?: () => Date } = {}) =>
  new Scheduler({
    store: services.store,
    control: services.control,
    queues: services.queues,
    config: services.config,
    ...extra,
  });

async function submit(count: number, tenantId: string, extra: Record<string, unknown> = {}) {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { task } = await services.tasks.submit({ tenantId, type: 'demo.echo', payload: { i }, ...extra });
    ids.push(task.taskId);
  }
  return ids;
}

/** Tick until nothing more is dispatched (the buffer fills over a few receives). */
async function settle(scheduler: Scheduler, ticks = 6) {
  let dispatched = 0;
  for (let i = 0; i < ticks; i++) dispatched += (await scheduler.tick()).dispatched;
  return dispatched;
}

async function workerMessages(runtime: 'lambda' | 'fargate') {
  const messages: WorkerMessage[] = [];
  for (let round = 0; round < 5; round++) {
    const got = await services.queues.receive<WorkerMessage>(`worker-${runtime}`, { waitSeconds: 0 });
    if (got.length === 0) break;
    messages.push(...got.map((m) => m.body));
    await services.queues.delete(
      `worker-${runtime}`,
      got.map((m) => m.receiptHandle),
    );
  }
  return messages;
}

describe('Class: Scheduler (against the emulators)', () => {
  it('dispatches no more than the Lambda pool holds, each with one worker message', async () => {
    // Prepare
    const ids = await submit(10, 'acme');
    const scheduler = newScheduler();
    await scheduler.resume();

    // Act
    const dispatched = await settle(scheduler);

    // Assess
    const tasks = [...(await services.store.getMany(ids)).values()];
    expect(dispatched).toBe(3);
    expect(tasks.filter((t) => t.state === 'DISPATCHED')).toHaveLength(3);
    const messages = await workerMessages('lambda');
    expect(messages.map((m) => m.taskId).sort()).toEqual(
      tasks
        .filter((t) => t.state === 'DISPATCHED')
        .map((t) => t.taskId)
        .sort(),
    );
    expect(messages.every((m) => m.fence === 1)).toBe(true);
  });

  it('holds a tenant to its quota while others use the remaining capacity', async () => {
    await submit(5, 'capped');
    await submit(1, 'other');
    const scheduler = newScheduler();
    await scheduler.resume();
    await settle(scheduler);
    const messages = await workerMessages('lambda');
    expect(messages.filter((m) => m.tenantId === 'capped')).toHaveLength(2);
    expect(messages.filter((m) => m.tenantId === 'other')).toHaveLength(1);
  });

  it('binds tenant settings stored after it started before its next dispatch (issue 11)', async () => {
    // Prepare: the scheduler's clock stands still (a minute ahead, so every task is due), so
    // its periodic tenant refresh never runs: only the PUT itself can make the quota bind.
    const frozen = new Date(Date.now() + 60_000);
    const scheduler = newScheduler({ now: () => frozen });
    await scheduler.resume();
    await services.tasks.putTenant('acme', { weight: 1, maxConcurrency: 2 });
    const ids = await submit(12, 'acme');

    // Act
    await settle(scheduler);

    // Assess: the pool has 3 slots and the default quota is 10, so only the new quota holds it at 2.
    const tasks = [...(await services.store.getMany(ids)).values()];
    expect(tasks.filter((t) => t.state === 'DISPATCHED')).toHaveLength(2);
    await scheduler.releaseHeld();
  });

  it("binds the configured settings again once a tenant's stored settings are removed (DELETE /v1/tenants/{id})", async () => {
    // Prepare: "capped" is configured at 2; stored settings raise it to 3 (the pool's size), then are removed
    const frozen = new Date(Date.now() + 60_000);
    const scheduler = newScheduler({ now: () => frozen });
    await services.tasks.putTenant('capped', { weight: 1, maxConcurrency: 3 });
    await scheduler.resume();
    await services.tasks.deleteTenant('capped');
    const ids = await submit(6, 'capped');
    // Act
    await settle(scheduler);
    // Assess: the configured quota holds it again
    const tasks = [...(await services.store.getMany(ids)).values()];
    expect(tasks.filter((t) => t.state === 'DISPATCHED')).toHaveLength(2);
    await scheduler.releaseHeld();
  });

  it('an idle tick long-polls the tiers for idleWaitSeconds but wakes as soon as a task arrives', async () => {
    const scheduler = newScheduler();
    await scheduler.resume();
    const startedMs = Date.now();
    // SQS's longest poll (20 s) against a wake within a few seconds: the margin keeps a loaded
    // machine (2 shared cores) from being taken for a poll that ran to its end.
    const ticking = scheduler.tick({ waitSeconds: 1, idleWaitSeconds: 20 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [id] = await submit(1, 'acme');

    const result = await ticking;

    expect(result).toMatchObject({ received: 1, dispatched: 1 });
    expect((await services.store.get(id!))?.state).toBe('DISPATCHED');
    // Woken by the message, not by the end of the 20 s poll.
    expect(Date.now() - startedMs).toBeLessThan(15_000);
    await scheduler.releaseHeld();
  });

  it('dispatches a task announced three times exactly once', async () => {
    const [id] = await submit(1, 'acme');
    const task = (await services.store.get(id!))!;
    await services.queues.announce([task, task], new Date());
    const scheduler = newScheduler();
    await scheduler.resume();
    await settle(scheduler);
    const messages = await workerMessages('lambda');
    expect(messages).toHaveLength(1);
    expect((await services.store.get(id!))?.fence).toBe(1);
    // The duplicate tier messages were dropped, not left to come back.
    expect(await services.queues.receive('tier-normal', { waitSeconds: 0, visibilitySeconds: 0 })).toEqual([]);
  });

  it('dispatches once a task announced as versions before the ref rode along did (taskId, tenantId, priority only), and drops the announcement', async () => {
    // Prepare: the submit's own announcement taken away, one as the release before sent it put back
    const [id] = await submit(1, 'acme');
    const sent = await services.queues.receive('tier-normal', { waitSeconds: 0, visibilitySeconds: 0 });
    await services.queues.delete(
      'tier-normal',
      sent.map((message) => message.receiptHandle),
    );
    await services.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: services.queues.urlOf('tier-normal'),
        MessageBody: JSON.stringify({ taskId: id, tenantId: 'acme', priority: 'normal' }),
      }),
    );
    // Act
    const scheduler = newScheduler();
    await scheduler.resume();
    await settle(scheduler);
    // Assess
    expect((await workerMessages('lambda')).map((message) => message.taskId)).toEqual([id]);
    expect((await services.store.get(id!))?.fence).toBe(1);
    expect(await services.queues.receive('tier-normal', { waitSeconds: 0, visibilitySeconds: 0 })).toEqual([]);
  });

  it('frees capacity when a worker reports completion', async () => {
    await submit(4, 'acme');
    const scheduler = newScheduler();
    await scheduler.resume();
    await settle(scheduler);
    const [first] = await workerMessages('lambda');
    // A worker runs and finishes the first one (what runAttempt does, then reports).
    const running = await services.store.transition(first!.taskId, (t) => start(t, first!.fence, new Date(), 60));
    const done = await services.store.transition(first!.taskId, (t) => succeed(t, first!.fence, new Date(), 1), {
      known: running,
    });
    await services.queues.reportCompletions([{ taskId: done.taskId, fence: 1, tenantId: 'acme', state: done.state }]);
    expect(await settle(scheduler)).toBe(1);
  });

  it('keeps the fair-share rotation across a restart: a tenant served just before it does not go first again', async () => {
    // Prepare: one Lambda slot; tenants a, b and c submit three tasks each, a first
    const single = {
      ...services.config,
      pools: { ...services.config.pools, lambda: { ...services.config.pools.lambda, concurrency: 1 } },
    };
    const schedulerWith = () =>
      new Scheduler({ store: services.store, control: services.control, queues: services.queues, config: single });
    for (const tenantId of ['a', 'b', 'c']) await submit(3, tenantId);
    const finish = async (message: WorkerMessage) => {
      const running = await services.store.transition(message.taskId, (t) => start(t, message.fence, new Date(), 60));
      const done = await services.store.transition(message.taskId, (t) => succeed(t, message.fence, new Date(), 1), {
        known: running,
      });
      await services.queues.reportCompletions([
        { taskId: done.taskId, fence: message.fence, tenantId: done.tenantId, state: done.state },
      ]);
    };
    const served: string[] = [];
    const runOne = async (scheduler: Scheduler) => {
      await settle(scheduler);
      const [message] = await workerMessages('lambda');
      served.push(message!.tenantId);
      await finish(message!);
    };
    const first = schedulerWith();
    await first.resume();
    await runOne(first);
    await runOne(first);
    // Act: a clean handover (as the Lambda does every minute), and a fresh scheduler goes on
    await first.releaseHeld();
    const second = schedulerWith();
    await second.resume();
    await runOne(second);
    await runOne(second);
    await runOne(second);
    // Assess
    expect(served).toEqual(['a', 'b', 'c', 'a', 'b']);
  });

  it('resumes after a crash from DynamoDB, not memory: a new scheduler keeps the pool limit', async () => {
    // Prepare: the first scheduler fills the pool and "crashes" (is dropped without cleanup).
    const ids = await submit(6, 'acme');
    const crashed = newScheduler();
    await crashed.resume();
    await settle(crashed);

    // Act: its held tier messages come back, as when their visibility lapses after a crash
    // (releaseHeld only makes them visible; the crashed instance's counts are simply gone).
    await crashed.releaseHeld();
    const successor = newScheduler();
    await successor.resume();
    const dispatched = await settle(successor);

    // Assess
    expect(successor.activeCount).toBe(3);
    expect(successor.heldCount).toBe(3);
    expect(dispatched).toBe(0);
    const states = [...(await services.store.getMany(ids)).values()].map((t) => t.state);
    expect(states.filter((s) => s === 'DISPATCHED')).toHaveLength(3);
  });

  it('dispatches nothing once its stop signal aborted, even mid-tick, and keeps the work (issue 28)', async () => {
    // Prepare: work held and capacity free, then the stop arrives (Ctrl-C during the tick's poll).
    const ids = await submit(4, 'acme');
    const scheduler = newScheduler();
    await scheduler.resume();
    const stopping = new AbortController();
    stopping.abort();

    // Act
    let dispatched = 0;
    for (let i = 0; i < 4; i++) dispatched += (await scheduler.tick({ signal: stopping.signal })).dispatched;

    // Assess: nothing written, nothing sent, and the same scheduler dispatches it all without the signal.
    expect(dispatched).toBe(0);
    expect([...(await services.store.getMany(ids)).values()].map((t) => t.state)).toEqual(Array(4).fill('QUEUED'));
    expect(await workerMessages('lambda')).toEqual([]);
    expect(await settle(scheduler)).toBe(3);
  });

  it('does not dispatch a task cancelled while held', async () => {
    const [id] = await submit(1, 'acme', { delaySeconds: 2 });
    const scheduler = newScheduler();
    await scheduler.resume();
    await settle(scheduler, 2);
    await services.tasks.cancel(id!);
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    await settle(scheduler, 3);
    expect((await services.store.get(id!))?.state).toBe('CANCELLED');
    expect(await workerMessages('lambda')).toEqual([]);
  });

  it('backs a throttled tenant off alone: the tick goes on for the others and throws nothing (issue 24, item 5)', async () => {
    // Prepare: DynamoDB refuses the dispatch writes of tenant `hot` as a hot GSI partition does
    // (after the SDK's retries). On the code before, the tick threw: the loop then slept, handed
    // its lease back and settled, every tenant stalled for 3 s or more.
    let throttling = true;
    let refused = 0;
    class HotPartitionStore extends TaskStore {
      override async apply(plan: TransitionPlan) {
        if (throttling && plan.next.tenantId === 'hot' && plan.next.state === 'DISPATCHED') {
          refused++;
          throw new ProvisionedThroughputExceededException({
            message: 'Throughput exceeds the current capacity of your table or index.',
            $metadata: { httpStatusCode: 400 },
          });
        }
        return super.apply(plan);
      }
    }
    const store = new HotPartitionStore(services.clients.documents, services.store.tableName, {
      leases: services.store.leasePages,
    });
    let clockMs = Date.now() + 60_000;
    const scheduler = new Scheduler({
      store,
      control: services.control,
      queues: services.queues,
      config: services.config,
      now: () => new Date(clockMs),
    });
    await scheduler.resume();
    const [hot] = await submit(1, 'hot');
    const cool = await submit(2, 'cool');

    // Act: ticks while `hot` is throttled.
    let dispatched = 0;
    for (let i = 0; i < 6; i++) dispatched += (await scheduler.tick()).dispatched;

    // Assess: the others dispatched, `hot` refused and waiting, nothing thrown.
    expect(refused).toBeGreaterThan(0);
    expect(dispatched).toBe(2);
    const afterThrottle = await services.store.getMany([hot!, ...cool]);
    expect(afterThrottle.get(hot!)?.state).toBe('QUEUED');
    expect(cool.map((id) => afterThrottle.get(id)?.state)).toEqual(['DISPATCHED', 'DISPATCHED']);
    const refusedWhileBackingOff = refused;
    // Within its back-off it is not tried again.
    await scheduler.tick();
    expect(refused).toBe(refusedWhileBackingOff);

    // Once the partition cools and the back-off ends, it is read from the index and dispatched.
    throttling = false;
    clockMs += 10_000;
    for (let i = 0; i < 6; i++) dispatched += (await scheduler.tick()).dispatched;
    expect(dispatched).toBe(3);
    expect((await services.store.get(hot!))?.state).toBe('DISPATCHED');
  });
});
