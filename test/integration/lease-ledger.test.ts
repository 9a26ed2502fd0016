/**
 * The lease ledger end to end (issue 25): the scheduler records a round's attempts on a page
 * before their dispatch writes, a successor finds them there, and pages go once their attempts
 * ended. Against dynalite and fauxqs.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type LeasePage, type LeasePageKey, LeasePages } from '../../runtime/adapters/lease-pages.ts';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { TaskStore } from '../../runtime/adapters/task-store.ts';
import { start, succeed } from '../../runtime/core/lifecycle.ts';
import { LEASE_PARTITIONS, LEASES_TABLE } from '../../runtime/infra/resources.ts';
import { PAGE_LANDING_GRACE_MS } from '../../runtime/scheduler/lease-ledger.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
beforeEach(async () => {
  services = await startTestServices({
    config: { pools: { lambda: { concurrency: 3 }, fargate: { vcpu: 1, memoryMiB: 2048 } } },
  });
});
afterEach(async () => {
  await services.stop();
});

const schedulerWith = (store: TaskStore = services.store, now?: () => Date) =>
  new Scheduler({
    store,
    control: services.control,
    queues: services.queues,
    config: services.config,
    ...(now ? { now } : {}),
  });

async function submit(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { task } = await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo', payload: { i } });
    ids.push(task.taskId);
  }
  return ids;
}

/** Every page in the table, read as a scheduler reads them. */
async function storedPages(): Promise<LeasePage[]> {
  return services.store.leasePages!.all();
}

/** Items of the leases table, counted with a raw Query per partition (nothing decoded). */
async function pageItems(): Promise<number> {
  let count = 0;
  for (let k = 0; k < LEASE_PARTITIONS; k++) {
    const response = await services.clients.documents.send(
      new QueryCommand({
        TableName: services.emulators.tables[LEASES_TABLE.id]!,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': 'partition' },
        ExpressionAttributeValues: { ':p': `P${k}` },
      }),
    );
    count += response.Count ?? 0;
  }
  return count;
}

async function dispatchedMessages(): Promise<WorkerMessage[]> {
  const received = await services.queues.receive<WorkerMessage>('worker-lambda', { waitSeconds: 0 });
  return received.map((message) => message.body);
}

/** A worker's run of each attempt: started, succeeded and reported. */
async function runToEnd(messages: readonly WorkerMessage[]): Promise<void> {
  for (const message of messages) {
    const running = await services.store.transition(message.taskId, (t) => start(t, message.fence, new Date(), 60));
    await services.store.apply(succeed(running, running.fence, new Date(), { ok: true }));
  }
  await services.queues.reportCompletions(
    messages.map((message) => ({
      taskId: message.taskId,
      fence: message.fence,
      tenantId: message.tenantId,
      state: 'SUCCEEDED',
    })),
  );
}

describe('The lease ledger, with the scheduler (against the emulators)', () => {
  it('records a round on one page before its dispatch writes, and deletes the page once the attempts ended', async () => {
    const ids = await submit(3);
    const scheduler = schedulerWith();
    await scheduler.resume();

    for (let tick = 0; tick < 6 && (await storedPages()).length === 0; tick++) await scheduler.tick();
    const pages = await storedPages();
    const messages = await dispatchedMessages();
    await runToEnd(messages);
    for (let tick = 0; tick < 6 && (await pageItems()) > 0; tick++) await scheduler.tick();

    expect(pages.flatMap((page) => page.refs.map((ref) => ref.taskId)).sort()).toEqual([...ids].sort());
    expect(pages.flatMap((page) => page.refs.map((ref) => ref.fence))).toEqual([1, 1, 1]);
    expect(messages.map((message) => message.taskId).sort()).toEqual([...ids].sort());
    expect(await pageItems()).toBe(0);
  });

  it("a successor counts its predecessor's leased tasks from their page, and deletes the page once they end", async () => {
    // Prepare: three tasks on a pool of three, dispatched by a scheduler that then stops.
    const ids = await submit(4);
    const first = schedulerWith();
    await first.resume();
    for (let tick = 0; tick < 6 && (await dispatchedMessages()).length === 0; tick++) await first.tick();
    const leased = [...(await services.store.getMany(ids)).values()].filter((task) => task.state === 'DISPATCHED');
    expect(leased).toHaveLength(3);

    // Act: a successor resumes; the pool is full, so it dispatches nothing until they end.
    const successor = schedulerWith();
    await successor.resume();
    let dispatchedWhileFull = 0;
    for (let tick = 0; tick < 3; tick++) dispatchedWhileFull += (await successor.tick()).dispatched;
    await runToEnd(
      leased.map((task) => ({
        taskId: task.taskId,
        fence: task.fence,
        tenantId: task.tenantId,
        type: task.type,
        task,
      })),
    );
    let dispatchedAfter = 0;
    for (let tick = 0; tick < 6 && dispatchedAfter === 0; tick++)
      dispatchedAfter += (await successor.tick()).dispatched;

    // Assess: the fourth went only after the three ended, and only its page is left.
    expect(dispatchedWhileFull).toBe(0);
    expect(dispatchedAfter).toBe(1);
    const left = await storedPages();
    expect(left.flatMap((page) => page.refs.map((ref) => ref.taskId))).toEqual(
      ids.filter((id) => !leased.some((task) => task.taskId === id)),
    );
  });

  it('dispatches nothing when the page cannot be stored: the tasks wait, none is leased unlisted', async () => {
    // Prepare: a store whose pages cannot be written.
    class BrokenPages extends LeasePages {
      override async put(): Promise<void> {
        throw new Error('InternalServerError');
      }
    }
    const store = new TaskStore(services.clients.documents, services.store.tableName, {
      leases: new BrokenPages(services.clients.documents, services.emulators.tables[LEASES_TABLE.id]!),
    });
    const ids = await submit(2);
    const scheduler = schedulerWith(store);
    await scheduler.resume();

    // Act
    const outcomes: string[] = [];
    for (let tick = 0; tick < 4; tick++) {
      try {
        await scheduler.tick();
        outcomes.push('ok');
      } catch (error) {
        outcomes.push(String(error));
      }
    }

    // Assess
    expect(outcomes).toContain('Error: InternalServerError');
    const tasks = [...(await services.store.getMany(ids)).values()];
    expect(tasks.map((task) => task.state)).toEqual(['QUEUED', 'QUEUED']);
    expect(await dispatchedMessages()).toEqual([]);
  });

  it('settles an attempt whose dispatch write never landed once its page is old enough, and deletes the page', async () => {
    // Prepare: a page naming an attempt (fence 1) of a task that stays QUEUED (fence 0): its
    // scheduler stopped between the page and the write.
    const [id] = await submit(1);
    const task = (await services.store.getMany([id!])).get(id!)!;
    const nowMs = Date.now();
    const key: LeasePageKey = { partition: 'P0', page: `0#${String(nowMs).padStart(15, '0')}#gone#0` };
    await services.store.leasePages!.put({
      ...key,
      shard: 0,
      recordedAtMs: nowMs,
      refs: [
        {
          taskId: task.taskId,
          tenantId: task.tenantId,
          priority: task.priority,
          runtime: task.runtime,
          resources: task.resources,
          fence: task.fence + 1,
          runAt: task.runAt,
          agingFrom: task.agingFrom,
          submittedAt: task.submittedAt,
          leasedAt: new Date(nowMs).toISOString(),
        },
      ],
    });
    let clockMs = nowMs;
    const scheduler = schedulerWith(services.store, () => new Date(clockMs));
    await scheduler.resume();

    // Act: a pass while the page is young, then one after the grace.
    await scheduler.tick();
    const young = await pageItems();
    clockMs = nowMs + PAGE_LANDING_GRACE_MS + 10_000;
    for (let tick = 0; tick < 3 && (await pageItems()) > 0; tick++) {
      clockMs += 6_000;
      await scheduler.tick();
    }

    // Assess: kept while the write might land, settled after; the task itself was dispatched meanwhile.
    expect(young).toBe(1);
    expect((await storedPages()).some((page) => page.page === key.page)).toBe(false);
  });
});
