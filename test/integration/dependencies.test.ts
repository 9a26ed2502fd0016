/**
 * Task dependencies against the emulators (issue 25 item 3): the check before any write, the hold
 * (out of the scheduler's queue index), release and DEPENDENCY_FAILED from the durable change feed
 * (the local outbox relay), and no missed wake-up when a dependency ends while its dependent is
 * being written or registered, or when the process dies between a final write and its settling.
 */
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isDependentsKey } from '../../runtime/adapters/dependents-store.ts';
import type { TaskStore } from '../../runtime/adapters/task-store.ts';
import { DependencyService } from '../../runtime/app/dependencies.ts';
import { DEPENDENCY_FAILED } from '../../runtime/core/dependencies.ts';
import { ValidationError } from '../../runtime/core/errors.ts';
import { fail, succeed } from '../../runtime/core/lifecycle.ts';
import type { Task } from '../../runtime/core/task.ts';
import { OutboxRelay } from '../../runtime/events/outbox-relay.ts';
import { runningTask, submitTask } from '../helpers/factories.ts';
import { snapshotWrites, startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
let relay: OutboxRelay;

/** The local runtime's change feed: the outbox relay with the dependencies as its consumer. */
const newRelay = () =>
  new OutboxRelay({
    store: services.store,
    webhooks: [],
    consumers: [(event) => services.dependencies.onChange(event.taskId, event)],
  });

beforeAll(async () => {
  services = await startTestServices({
    events: { outbox: false, dependencyOutbox: true, onOutboxEvent: (taskId) => relay?.notify(taskId) },
  });
  relay = newRelay();
});
afterAll(async () => {
  await services.stop();
});

let tenantSeq = 0;
const freshTenant = () => `deps-${++tenantSeq}`;

const submitDependent = async (tenantId: string, dependsOn: string[]) =>
  (await services.tasks.submit({ tenantId, type: 'demo.echo', payload: {}, dependsOn })).task;

const succeedTask = (task: Task) =>
  services.store.transition(task.taskId, (t) => succeed(t, task.fence, services.now(), { ok: true }));
const failTask = (task: Task) =>
  services.store.transition(task.taskId, (t) =>
    fail(t, task.fence, services.now(), { name: 'Error', message: 'boom', retryable: false }, 0),
  );

/** Whether the scheduler's intake would see the task (its tenant-tier's queue index). */
async function inQueueIndex(task: Task): Promise<boolean> {
  const due = await services.store.listDue(task.tenantId, task.priority, Date.now() + 3_600_000, 100);
  return due.refs.some((ref) => ref.taskId === task.taskId);
}

describe('Submit with dependsOn', () => {
  it('refuses a dependency that does not exist, or is another tenant’s, naming them, and writes nothing', async () => {
    // Prepare
    const tenantId = freshTenant();
    const other = await submitTask(services, { tenantId: freshTenant() });
    const before = await snapshotWrites(services);

    // Act
    const refusal = await submitDependent(tenantId, ['tsk_missing', other.taskId]).catch((error: unknown) => error);

    // Assess
    expect(refusal).toBeInstanceOf(ValidationError);
    expect((refusal as ValidationError).code).toBe('unknown_dependency');
    expect((refusal as ValidationError).details).toEqual({
      field: 'dependsOn',
      missing: ['tsk_missing', other.taskId],
    });
    expect(await snapshotWrites(services)).toEqual(before);
  });

  it('holds the task while a dependency runs: QUEUED, out of the queue index, the wait naming it', async () => {
    // Prepare
    const tenantId = freshTenant();
    const dependency = await runningTask(services, { tenantId });

    // Act
    const dependent = await submitDependent(tenantId, [dependency.taskId]);
    await relay.drain();

    // Assess
    const stored = (await services.store.get(dependent.taskId))!;
    expect(stored.state).toBe('QUEUED');
    expect(stored.waitingOn).toEqual([dependency.taskId]);
    expect(await inQueueIndex(stored)).toBe(false);
    expect((await services.store.get(dependency.taskId))!.hasDependents).toBe(true);
    const described = await services.tasks.describe(dependent.taskId);
    expect(described?.wait?.reason).toBe('dependencies');
    expect(described?.wait?.message).toContain(dependency.taskId);
    expect(described?.wait?.maxWaitSeconds).toBeNull();
  });

  it('answers a repeat (same idempotency key) with the task, even once a dependency is gone', async () => {
    // Prepare
    const tenantId = freshTenant();
    const dependency = await runningTask(services, { tenantId });
    const input = { tenantId, type: 'demo.echo', payload: {}, idempotencyKey: 'k-1', dependsOn: [dependency.taskId] };
    const first = await services.tasks.submit(input);
    await services.emulators.clients.documents.send(
      new DeleteCommand({ TableName: services.store.tableName, Key: { taskId: dependency.taskId } }),
    );

    // Act
    const again = await services.tasks.submit(input);

    // Assess
    expect(again.created).toBe(false);
    expect(again.task.taskId).toBe(first.task.taskId);
    // Registered after its dependency was deleted: cancelled, not stranded.
    await relay.drain();
    const settled = (await services.store.get(first.task.taskId))!;
    expect(settled.state).toBe('CANCELLED');
    expect(settled.error?.message).toBe(`Dependency ${dependency.taskId} no longer exists (it ended and was deleted)`);
  });

  it('is not held when every dependency has already succeeded', async () => {
    // Prepare
    const tenantId = freshTenant();
    const dependency = await succeedTask(await runningTask(services, { tenantId }));

    // Act
    const dependent = await submitDependent(tenantId, [dependency.taskId]);

    // Assess
    expect(dependent.waitingOn).toBeUndefined();
    expect(dependent.dependsOn).toEqual([dependency.taskId]);
    expect(await inQueueIndex(dependent)).toBe(true);
  });
});

describe('Batch items with dependsOn', () => {
  it('holds an item on a task that existed before the batch, refuses one on an unknown task at its index', async () => {
    // Prepare
    const tenantId = freshTenant();
    const dependency = await runningTask(services, { tenantId });
    const item = (tag: string, dependsOn?: string[]) => ({
      tenantId,
      type: 'demo.echo',
      payload: { tag },
      ...(dependsOn ? { dependsOn } : {}),
    });

    // Act
    const { results } = await services.batches.submit({
      tasks: [item('held', [dependency.taskId]), item('unknown', ['tsk_nowhere']), item('free')],
    });
    await relay.drain();

    // Assess
    expect(results[1]).toEqual({ error: expect.objectContaining({ code: 'unknown_dependency' }) });
    const [held, , free] = await Promise.all(
      results.map((result) => ('taskId' in result ? services.store.get(result.taskId) : undefined)),
    );
    expect(held?.waitingOn).toEqual([dependency.taskId]);
    expect(await inQueueIndex(held!)).toBe(false);
    expect(free?.waitingOn).toBeUndefined();
    await succeedTask((await services.store.get(dependency.taskId))!);
    await relay.drain();
    expect(await inQueueIndex((await services.store.get(held!.taskId))!)).toBe(true);
  });
});

describe('Settling from the change feed', () => {
  it('releases the dependent once its last dependency succeeded, and only then', async () => {
    // Prepare
    const tenantId = freshTenant();
    const first = await runningTask(services, { tenantId });
    const second = await runningTask(services, { tenantId });
    const dependent = await submitDependent(tenantId, [first.taskId, second.taskId]);
    await relay.drain();

    // Act
    await succeedTask((await services.store.get(first.taskId))!);
    await relay.drain();
    const afterFirst = (await services.store.get(dependent.taskId))!;
    const indexedAfterFirst = await inQueueIndex(afterFirst);
    await succeedTask((await services.store.get(second.taskId))!);
    await relay.drain();

    // Assess
    expect(afterFirst.waitingOn).toEqual([second.taskId]);
    expect(indexedAfterFirst).toBe(false);
    const released = (await services.store.get(dependent.taskId))!;
    expect(released.state).toBe('QUEUED');
    expect(released.waitingOn).toBeUndefined();
    expect(await inQueueIndex(released)).toBe(true);
    // The settled buckets are gone.
    const buckets = await services.dependencies.dependentsOf(first.taskId);
    expect(buckets).toEqual([]);
  });

  it('cancels the dependents of a failed task with DEPENDENCY_FAILED, transitively', async () => {
    // Prepare
    const tenantId = freshTenant();
    const root = await runningTask(services, { tenantId, maxAttempts: 1 });
    const child = await submitDependent(tenantId, [root.taskId]);
    await relay.drain();
    const grandchild = await submitDependent(tenantId, [child.taskId]);
    await relay.drain();

    // Act
    await failTask((await services.store.get(root.taskId))!);
    await relay.drain();

    // Assess
    for (const id of [child.taskId, grandchild.taskId]) {
      const task = (await services.store.get(id))!;
      expect(task.state).toBe('CANCELLED');
      expect(task.error?.code).toBe(DEPENDENCY_FAILED);
      expect(task.waitingOn).toBeUndefined();
    }
  });

  it('cancels a dependent of a cancelled task', async () => {
    // Prepare
    const tenantId = freshTenant();
    const dependency = await submitTask(services, { tenantId });
    const dependent = await submitDependent(tenantId, [dependency.taskId]);
    await relay.drain();

    // Act
    await services.tasks.cancel(dependency.taskId);
    await relay.drain();

    // Assess
    const stored = (await services.store.get(dependent.taskId))!;
    expect(stored.state).toBe('CANCELLED');
    expect(stored.error).toMatchObject({
      code: DEPENDENCY_FAILED,
      message: `Dependency ${dependency.taskId} ended CANCELLED`,
    });
  });
});

describe('No missed wake-up', () => {
  it('a dependency that succeeds between the submit’s check and the dependent’s write', async () => {
    // Prepare: the check reads it RUNNING; it succeeds before the held task is written.
    const tenantId = freshTenant();
    const dependency = await runningTask(services, { tenantId });
    const read = services.store.getMany.bind(services.store);
    const spy = vi.spyOn(services.store, 'getMany').mockImplementationOnce(async (ids) => {
      const found = await read(ids);
      await succeedTask(dependency);
      return found;
    });

    // Act
    const dependent = await submitDependent(tenantId, [dependency.taskId]);
    spy.mockRestore();
    await relay.drain();

    // Assess
    expect(dependent.waitingOn).toEqual([dependency.taskId]);
    const stored = (await services.store.get(dependent.taskId))!;
    expect(stored.waitingOn).toBeUndefined();
    expect(await inQueueIndex(stored)).toBe(true);
  });

  it('a dependency that fails between the edge’s write and its mark', async () => {
    // Prepare: the dependent is held; the dependency fails right after the edge is written.
    const tenantId = freshTenant();
    const dependency = await runningTask(services, { tenantId, maxAttempts: 1 });
    const dependent = await submitDependent(tenantId, [dependency.taskId]);
    const add = services.dependencies.dependentsStore.add.bind(services.dependencies.dependentsStore);
    const spy = vi.spyOn(services.dependencies.dependentsStore, 'add').mockImplementationOnce(async (a, b) => {
      await add(a, b);
      await failTask(dependency);
    });

    // Act
    await relay.drain();
    spy.mockRestore();

    // Assess
    const stored = (await services.store.get(dependent.taskId))!;
    expect(stored.state).toBe('CANCELLED');
    expect(stored.error?.code).toBe(DEPENDENCY_FAILED);
  });

  it('a dependency whose dependents were settled before a late registration wrote its edge', async () => {
    // Prepare: one dependent registered (the dependency marked); a second written held, not yet registered.
    const tenantId = freshTenant();
    const dependency = await runningTask(services, { tenantId });
    const early = await submitDependent(tenantId, [dependency.taskId]);
    await relay.drain();
    const late = await submitDependent(tenantId, [dependency.taskId]);

    // Act: the dependency ends and is settled first; the late registration comes after.
    const ended = await succeedTask((await services.store.get(dependency.taskId))!);
    await services.dependencies.settle(ended.taskId);
    await services.dependencies.register((await services.store.get(late.taskId))!);

    // Assess
    for (const id of [early.taskId, late.taskId]) {
      const stored = (await services.store.get(id))!;
      expect(stored.waitingOn).toBeUndefined();
      expect(await inQueueIndex(stored)).toBe(true);
    }
    await relay.drain();
  });

  it('a crash between a dependency’s final write and its settling: the next relay settles it', async () => {
    // Prepare
    const tenantId = freshTenant();
    const dependency = await runningTask(services, { tenantId });
    const dependent = await submitDependent(tenantId, [dependency.taskId]);
    await relay.drain();

    // Act: the final write lands; the process dies before its relay works (no drain), a new one starts.
    const ended = await succeedTask((await services.store.get(dependency.taskId))!);
    expect(ended.outbox?.map((event) => event.state)).toEqual(['SUCCEEDED']);
    const restarted = newRelay();
    await restarted.scan();
    await restarted.drain();

    // Assess
    const stored = (await services.store.get(dependent.taskId))!;
    expect(stored.waitingOn).toBeUndefined();
    expect(await inQueueIndex(stored)).toBe(true);
    expect((await services.store.get(dependency.taskId))!.outbox).toBeUndefined();
  });

  it('keeps the dependents buckets apart from tasks', () => {
    expect(isDependentsKey('dependents#tsk_1#3')).toBe(true);
    expect(isDependentsKey('tsk_1')).toBe(false);
  });
});

describe('Settling on AWS: the stream function stops at its timeout', () => {
  it('a settle cut short goes on where it stopped, so retries finish a large fan-out', async () => {
    // Prepare: a dependency with 64 dependents, registered; it ends.
    const tenantId = freshTenant();
    const dependency = await runningTask(services, { tenantId });
    const dependents: Task[] = [];
    for (let i = 0; i < 64; i++) dependents.push(await submitDependent(tenantId, [dependency.taskId]));
    await relay.drain();
    const ended = await succeedTask((await services.store.get(dependency.taskId))!);
    // Each invocation of the stream function gets through 24 writes of dependents before Lambda
    // stops it (its timeout: the record is retried from the start by a new invocation). Locally
    // the relay has no such end; on AWS one settle of ~2,000 dependents outlasts the 60 s function.
    const invocation = () => {
      let writes = 0;
      const store = new Proxy(services.store, {
        get(target, property) {
          if (property === 'transition') {
            return (...args: Parameters<TaskStore['transition']>) => {
              if (++writes > 24) return Promise.reject(new Error('Task timed out after 60.00 seconds'));
              return target.transition(...args);
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      return new DependencyService({
        store,
        dependents: services.dependencies.dependentsStore,
        queues: services.queues,
      });
    };

    // Act: retried as Lambda retries a failed stream record, up to 20 times.
    let invocations = 0;
    for (let done = false; !done && invocations < 20; ) {
      invocations++;
      done = await invocation()
        .settle(ended.taskId)
        .then(
          () => true,
          () => false,
        );
    }

    // Assess
    const stored = await services.store.getMany(dependents.map((task) => task.taskId));
    const released = [...stored.values()].filter((task) => task.state === 'QUEUED' && task.waitingOn === undefined);
    expect(released).toHaveLength(64);
    expect(invocations).toBeLessThan(20);
    expect(await services.dependencies.dependentsOf(ended.taskId)).toEqual([]);
    await relay.drain();
  }, 60_000);
});
