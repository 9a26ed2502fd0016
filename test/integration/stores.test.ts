import { randomBytes, randomUUID } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heldKey, queueKey, tenantKeyShardOf, tenantStateKey } from '../../runtime/adapters/index-keys.ts';
import type { CreateManyResult, CreateResult } from '../../runtime/adapters/task-store.ts';
import {
  ConcurrentUpdateError,
  StaleAttemptError,
  TaskNotFoundError,
  ValidationError,
} from '../../runtime/core/errors.ts';
import {
  cancel,
  createTask,
  dispatch,
  expireLease,
  fail,
  heartbeat,
  start,
  succeed,
} from '../../runtime/core/lifecycle.ts';
import { SINGLE_SHARD } from '../../runtime/core/shards.ts';
import type { Task } from '../../runtime/core/task.ts';
import { TASKS_TABLE } from '../../runtime/infra/resources.ts';
import { leasedRefOf } from '../../runtime/scheduler/dispatch.ts';
import { LeaseLedger } from '../../runtime/scheduler/lease-ledger.ts';
import { dispatchAsScheduler, taskSpec } from '../helpers/factories.ts';
import { faultyComponent, WriteLog } from '../helpers/faults.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

const spec = (tenantId = 'acme') => taskSpec({ tenantId, payload: { hello: 'world' } });

/** The stored item with the store's derived index attributes (which reads strip). */
async function rawItem(taskId: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await services.clients.documents.send(
    new GetCommand({ TableName: services.emulators.tables.tasks, Key: { taskId } }),
  );
  return Item;
}

let services: TestServices;
let counter = 0;
const newId = () => `it-${Date.now()}-${counter++}`;

beforeAll(async () => {
  services = await startTestServices();
});

/** Counts the DynamoDB commands the shared services send from now on; returns the counts so far. */
function countCalls(): () => Record<string, number> {
  const counts: Record<string, number> = {};
  const name = `count-${counter++}`;
  services.clients.dynamodb.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? 'unknown';
      counts[command] = (counts[command] ?? 0) + 1;
      return next(args);
    },
    { step: 'initialize', name },
  );
  return () => {
    services.clients.dynamodb.middlewareStack.remove(name);
    return counts;
  };
}
afterAll(async () => {
  await services.stop();
});

describe('Class: TaskStore (against dynalite)', () => {
  describe('Method: create', () => {
    it('writes once; a second create returns the existing item untouched', async () => {
      // Prepare
      const task = createTask(newId(), spec(), new Date());

      // Act
      const first = await services.store.create(task);
      const second = await services.store.create({ ...task, payload: { other: true } });

      // Assess
      expect(first.created).toBe(true);
      expect(second).toEqual({ created: false, task: first.task });
      expect(first.task).toEqual({ ...task, writeTokens: [expect.any(String)] });
    });
  });

  describe('Method: createMany', () => {
    const fresh = (n: number) => Array.from({ length: n }, () => createTask(newId(), spec('bulk'), new Date()));
    const created = (results: readonly CreateManyResult[]) =>
      results.map((result) => 'created' in result && result.created);

    it('creates in calls of 25 INSERTs, in order; a task that exists is answered as it is, the others created', async () => {
      // Prepare: 250 tasks (10 calls), 2 of them already there.
      const tasks = fresh(250);
      const before = [await services.store.create(tasks[7]!), await services.store.create(tasks[150]!)];
      const calls = countCalls();

      // Act
      const results = await services.store.createMany(tasks.map((task) => ({ ...task, payload: { other: true } })));
      const sent = calls();

      // Assess
      expect(created(results)).toEqual(tasks.map((_, i) => i !== 7 && i !== 150));
      expect(results[7]).toEqual({ created: false, task: before[0]!.task });
      expect(results[150]).toEqual({ created: false, task: before[1]!.task });
      for (const [i, task] of tasks.entries()) {
        expect((results[i] as CreateResult).task.taskId).toBe(task.taskId);
        if (i !== 7 && i !== 150)
          expect(await services.store.get(task.taskId)).toEqual((results[i] as CreateResult).task);
      }
      // 10 calls; the 2 tasks that exist answered DuplicateItem with their item: no read, no PutItem.
      expect(sent).toEqual({ BatchExecuteStatementCommand: 10 });
    });

    it('finds its own writes after a call that landed and went unanswered, and creates each task once', async () => {
      // Prepare: the first call lands and its answer is lost (a timeout after the SDK's retries).
      // The store sends the same INSERTs again, as the SDK's own retry of a lost answer would:
      // each meets the item it wrote, DuplicateItem with the item, whose write token is this
      // create's, so it is answered created (a lost answer retried by the SDK on the wire, inside
      // one call, is test/sim/aws-fakes.test.ts's BatchExecuteStatement case).
      const log = new WriteLog();
      let lost = 0;
      const component = faultyComponent({
        name: 'lost-insert-call',
        emulators: services.emulators,
        config: services.config,
        registry: services.registry,
        now: () => new Date(),
        log,
        decide: (call) => (call.command === 'BatchExecuteStatementCommand' && lost++ === 0 ? 'ambiguous' : undefined),
      });
      const tasks = fresh(30);

      // Act
      const results = await component.store.createMany(tasks);

      // Assess
      expect(component.dynamo.counts.ambiguous).toBe(1);
      expect(created(results)).toEqual(tasks.map(() => true));
      for (const [i, task] of tasks.entries())
        expect((results[i] as CreateResult).task).toEqual(await services.store.get(task.taskId));
      // One landed write a task: the lost call's (the INSERTs sent again were refused as duplicates).
      for (const task of tasks) expect(log.history(task.taskId)).toHaveLength(1);
      // 2 calls (25 + 5), and the first's 25 INSERTs again.
      expect(component.dynamo.counts.calls).toBe(3);
      await component.dispose();
    });

    it('answers a DuplicateItem that comes without the item by a conditional PutItem and a read', async () => {
      // Prepare: the second task exists; the answer of every INSERT call loses its items (AWS
      // documents Item for a failed condition check with ALL_OLD; were it left out for an INSERT).
      const tasks = fresh(3);
      const before = await services.store.create(tasks[1]!);
      const name = `strip-${counter++}`;
      services.clients.dynamodb.middlewareStack.add(
        (next, context) => async (args) => {
          const result = await next(args);
          if (context.commandName === 'BatchExecuteStatementCommand') {
            for (const response of (result.output as { Responses?: { Error?: { Item?: unknown } }[] }).Responses ??
              []) {
              if (response.Error) delete response.Error.Item;
            }
          }
          return result;
        },
        { step: 'initialize', name },
      );
      const calls = countCalls();

      // Act
      const results = await services.store
        .createMany(tasks)
        .finally(() => services.clients.dynamodb.middlewareStack.remove(name));
      const sent = calls();

      // Assess
      expect(created(results)).toEqual([true, false, true]);
      expect(results[1]).toEqual({ created: false, task: before.task });
      expect(sent).toEqual({ BatchExecuteStatementCommand: 1, PutItemCommand: 1, GetItemCommand: 1 });
    });

    it('goes one by one when its calls stay throttled, and answers an error in its task only', async () => {
      // Prepare: every call throttled (after the SDK's retries), then one task's PutItem too.
      const tasks = fresh(5);
      let inserts = 0;
      const component = faultyComponent({
        name: 'throttled-inserts',
        emulators: services.emulators,
        config: services.config,
        registry: services.registry,
        now: () => new Date(),
        decide: (call) => {
          if (call.command === 'BatchExecuteStatementCommand') inserts++;
          return call.command === 'BatchExecuteStatementCommand' ||
            (call.command === 'PutItemCommand' && (call.input.Item as Task).taskId === tasks[3]!.taskId)
            ? 'throttle'
            : undefined;
        },
      });

      // Act
      const results = await component.store.createMany(tasks);

      // Assess: the call tried 4 times, then each task alone.
      expect(inserts).toBe(4);
      expect(created(results)).toEqual([true, true, true, false, true]);
      expect((results[3] as { error: Error }).error.name).toBe('ProvisionedThroughputExceededException');
      expect(await services.store.get(tasks[3]!.taskId)).toBeUndefined();
      await component.dispose();
    });
  });

  describe('Method: apply', () => {
    it('writes a plan whose precondition holds', async () => {
      const { task } = await services.store.create(createTask(newId(), spec(), new Date()));
      const stored = await dispatchAsScheduler(services.store, task, new Date(), 60);
      expect(stored.state).toBe('DISPATCHED');
      expect(await services.store.get(task.taskId)).toEqual(stored);
    });

    it('refuses a plan computed from a stale version and carries the current item', async () => {
      // Prepare: two writers read version 1; the first wins.
      const { task } = await services.store.create(createTask(newId(), spec(), new Date()));
      const winner = await dispatchAsScheduler(services.store, task, new Date(), 60);

      // Act
      const loser = services.store.apply(cancel(task, new Date())!);

      // Assess
      await expect(loser).rejects.toBeInstanceOf(ConcurrentUpdateError);
      const error = (await loser.catch((e) => e)) as ConcurrentUpdateError;
      expect(error.current).toEqual(winner);
      expect(error.expected).toEqual({ states: ['QUEUED'], version: 1 });
    });

    it('turns a fenced write from a superseded attempt into StaleAttemptError', async () => {
      // Prepare: attempt 1 runs, its lease is lost, the task is re-dispatched (fence 2).
      const { task } = await services.store.create(createTask(newId(), spec(), new Date()));
      const d1 = await dispatchAsScheduler(services.store, task, new Date(), 60);
      const r1 = await services.store.apply(start(d1, 1, new Date(), 60));
      const requeued = { ...r1, state: 'QUEUED' as const, version: r1.version };
      const zombiePlan = succeed(r1, 1, new Date(), 'late');
      await services.store.apply({
        name: 'expireLease',
        precondition: { states: ['RUNNING'], version: r1.version },
        next: { ...requeued, version: r1.version + 1 },
      });
      const current = await services.store.get(task.taskId);
      await services.store.apply(dispatch(current!, new Date(), 60));

      // Act
      const zombie = services.store.apply(zombiePlan);

      // Assess
      await expect(zombie).rejects.toBeInstanceOf(StaleAttemptError);
      expect((await services.store.get(task.taskId))?.state).toBe('DISPATCHED');
    });
  });

  describe('Method: transition', () => {
    it('re-decides on the fresh item after losing a race', async () => {
      const { task } = await services.store.create(createTask(newId(), spec(), new Date()));
      await dispatchAsScheduler(services.store, task, new Date(), 60);
      // The caller's copy is stale (QUEUED); cancel must be re-planned against DISPATCHED.
      const result = await services.store.transition(task.taskId, (t) => cancel(t, new Date()), { known: task });
      expect(result).toMatchObject({ state: 'CANCELLED', version: 3 });
    });

    it('reports an unknown task', async () => {
      await expect(services.store.transition('nope', (t) => cancel(t, new Date()))).rejects.toBeInstanceOf(
        TaskNotFoundError,
      );
    });
  });

  describe('Method: list', () => {
    it('pages a tenant newest first, by state, with cursors that cannot cross tenants', async () => {
      // Prepare
      const tenant = `list-${newId()}`;
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const created = createTask(newId(), spec(tenant), new Date(Date.UTC(2026, 0, 1, 0, 0, i)));
        await services.store.create(created);
        ids.push(created.taskId);
      }
      await services.store.transition(ids[0]!, (t) => cancel(t, new Date()));

      // Act
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await services.store.list({ tenantId: tenant, limit: 3, ...(cursor ? { cursor } : {}) });
        seen.push(...page.items.map((t) => t.taskId));
        cursor = page.nextCursor;
      } while (cursor);
      const cancelled = await services.store.list({ tenantId: tenant, state: 'CANCELLED', limit: 10 });
      const first = await services.store.list({ tenantId: tenant, limit: 3 });

      // Assess
      expect(seen).toEqual([...ids].reverse());
      expect(cancelled.items.map((t) => t.taskId)).toEqual([ids[0]]);
      await expect(
        services.store.list({ tenantId: 'someone-else', limit: 3, cursor: first.nextCursor! }),
      ).rejects.toBeInstanceOf(ValidationError);
      await expect(services.store.list({ tenantId: tenant, limit: 3, cursor: 'garbage!' })).rejects.toThrow(/cursor/);
    });
  });

  describe('QUEUED: in byTenantState only when byTenantQueue cannot list it newest first', () => {
    it('lists and counts every QUEUED task once, newest first, whichever index holds it', async () => {
      // Prepare: a second apart, a tenant's tasks due at submit (a, f), delayed an hour (b),
      // held for a dependency (c), retried after an expired lease (d: due later than submitted),
      // written by the previous version (e: its QUEUED key as well as its queue entry), and one
      // that succeeded (g).
      const tenant = `queued-${newId()}`;
      const t0 = Date.now() - 60_000;
      const at = (second: number) => new Date(t0 + second * 1000);
      const put = async (task: ReturnType<typeof createTask>) => (await services.store.create(task)).task;
      const a = await put(createTask(newId(), spec(tenant), at(0)));
      const b = await put(createTask(newId(), { ...spec(tenant), runAt: new Date(Date.now() + 3_600_000) }, at(1)));
      const c = await put({ ...createTask(newId(), spec(tenant), at(2)), dependsOn: ['tsk_x'], waitingOn: ['tsk_x'] });
      const dQueued = await put(createTask(newId(), spec(tenant), at(3)));
      const dLeased = await dispatchAsScheduler(services.store, dQueued, new Date(), 60);
      const dRunning = await services.store.apply(start(dLeased, dLeased.fence, new Date(), 60));
      const d = await services.store.apply(expireLease(dRunning, new Date(Date.now() + 120_000), 5_000));
      const e = await put(createTask(newId(), spec(tenant), at(4)));
      await services.clients.documents.send(
        new PutCommand({
          TableName: services.emulators.tables.tasks,
          Item: { ...(await rawItem(e.taskId)), tenantState: `${tenant}#QUEUED`, queueKey: `${tenant}#normal` },
        }),
      );
      const f = await put(createTask(newId(), spec(tenant), at(5)));
      const gQueued = await put(createTask(newId(), spec(tenant), at(6)));
      const gLeased = await dispatchAsScheduler(services.store, gQueued, new Date(), 60);
      const gRunning = await services.store.apply(start(gLeased, gLeased.fence, new Date(), 60));
      const g = await services.store.apply(succeed(gRunning, gRunning.fence, new Date(), { ok: true }));
      const listAll = async (state: 'QUEUED' | undefined, limit: number) => {
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await services.store.list({ tenantId: tenant, state, limit, cursor });
          expect(page.items.length).toBeLessThanOrEqual(limit);
          seen.push(...page.items.map((task) => task.taskId));
          cursor = page.nextCursor;
          pages++;
        } while (cursor && pages < 30);
        return seen;
      };

      // Assess: where each is held. Due at submit: byTenantQueue alone, no byTenantState entry.
      expect(d.state).toBe('QUEUED');
      expect(d.runAt).not.toBe(d.submittedAt);
      expect(await rawItem(a.taskId)).not.toHaveProperty('tenantState');
      expect(await rawItem(a.taskId)).toMatchObject({ queueKey: queueKey(tenant, 'normal', a.taskId) });
      expect(await rawItem(b.taskId)).toMatchObject({
        tenantState: tenantStateKey(tenant, 'QUEUED', b.taskId),
        queueKey: queueKey(tenant, 'normal', b.taskId),
      });
      expect(await rawItem(c.taskId)).toMatchObject({ tenantState: heldKey(tenant, c.taskId) });
      expect(await rawItem(c.taskId)).not.toHaveProperty('queueKey');
      expect(await rawItem(d.taskId)).toMatchObject({ tenantState: tenantStateKey(tenant, 'QUEUED', d.taskId) });

      // Newest first by submission, each once, at every page size; with every state too.
      const queuedNewestFirst = [f, e, d, c, b, a].map((task) => task.taskId);
      for (const limit of [1, 2, 4, 10]) expect(await listAll('QUEUED', limit)).toEqual(queuedNewestFirst);
      for (const limit of [1, 3, 10]) expect(await listAll(undefined, limit)).toEqual([g.taskId, ...queuedNewestFirst]);
      expect(await services.store.countByTenantState(tenant, 'QUEUED')).toBe(6);
      expect(await services.store.countByTenantState(tenant, 'QUEUED', 4)).toBe(4);
      for (const firstTier of ['normal', 'high'] as const) {
        expect(await services.store.countByTenantState(tenant, 'QUEUED', 2, { firstTier })).toBe(2);
        expect(await services.store.countByTenantState(tenant, 'QUEUED', 100, { firstTier })).toBe(6);
      }

      // Dispatched, a task due at submit leaves byTenantQueue and was never in byTenantState.
      await dispatchAsScheduler(services.store, a, new Date(), 60);
      expect(await rawItem(a.taskId)).not.toHaveProperty('tenantState');
      expect(await services.store.countByTenantState(tenant, 'QUEUED')).toBe(5);
      expect(await listAll('QUEUED', 2)).toEqual(queuedNewestFirst.slice(0, 5));
    });
  });

  describe('Leased states (DISPATCHED, RUNNING): listed and counted from byLeased', () => {
    it('pages one tenant newest first, counts it, and keeps its entries out of byTenantState', async () => {
      // Prepare: 5 RUNNING and 1 DISPATCHED for the tenant, 2 RUNNING for a neighbour.
      const tenant = `leased-${newId()}`;
      const neighbour = `leased-other-${newId()}`;
      const running: string[] = [];
      const put = async (tenantId: string, second: number, toState: 'DISPATCHED' | 'RUNNING') => {
        const { task } = await services.store.create(
          createTask(newId(), spec(tenantId), new Date(Date.UTC(2026, 0, 2, 0, 0, second))),
        );
        const dispatched = await dispatchAsScheduler(services.store, task, new Date(), 60);
        return toState === 'RUNNING'
          ? services.store.apply(start(dispatched, dispatched.fence, new Date(), 60))
          : dispatched;
      };
      for (let i = 0; i < 5; i++) running.push((await put(tenant, i, 'RUNNING')).taskId);
      const dispatchedId = (await put(tenant, 9, 'DISPATCHED')).taskId;
      for (let i = 0; i < 2; i++) await put(neighbour, 20 + i, 'RUNNING');

      // Act
      const seen: string[] = [];
      const pages: number[] = [];
      let cursor: string | undefined;
      do {
        const page = await services.store.list({
          tenantId: tenant,
          state: 'RUNNING',
          limit: 2,
          ...(cursor ? { cursor } : {}),
        });
        seen.push(...page.items.map((t) => t.taskId));
        pages.push(page.items.length);
        cursor = page.nextCursor;
      } while (cursor);

      // Assess
      expect(seen).toEqual([...running].reverse());
      expect(pages).toEqual([2, 2, 1]);
      expect(
        (await services.store.list({ tenantId: tenant, state: 'DISPATCHED', limit: 10 })).items.map((t) => t.taskId),
      ).toEqual([dispatchedId]);
      expect(await services.store.countByTenantState(tenant, 'RUNNING')).toBe(5);
      expect(await services.store.countByTenantState(tenant, 'DISPATCHED')).toBe(1);
      expect(await services.store.countByTenantState(neighbour, 'RUNNING')).toBe(2);
      // Cursors still cannot be replayed for another tenant or state.
      const first = await services.store.list({ tenantId: tenant, state: 'RUNNING', limit: 2 });
      await expect(
        services.store.list({ tenantId: neighbour, state: 'RUNNING', limit: 2, cursor: first.nextCursor! }),
      ).rejects.toBeInstanceOf(ValidationError);
      await expect(
        services.store.list({ tenantId: tenant, state: 'DISPATCHED', limit: 2, cursor: first.nextCursor! }),
      ).rejects.toBeInstanceOf(ValidationError);
      // The point: a leased item carries no tenantState, so dispatch and start do not move it.
      const Item = await rawItem(running[0]!);
      // No index entry at all: the lease ledger lists it (no write per task there).
      expect(Item).toMatchObject({ state: 'RUNNING' });
      expect(Item).not.toHaveProperty('leasedShard');
      expect(Item).not.toHaveProperty('tenantState');
    });
  });

  describe('A batch member that ended', () => {
    it('is listed with its tenant when it failed, and only through its batch when it succeeded', async () => {
      const tenantId = `batch-member-${counter++}`;
      const member = async (index: number) => {
        const { task } = await services.store.create(
          createTask(newId(), { ...spec(tenantId), maxAttempts: 1, batchId: 'bat_x', batchIndex: index }, new Date()),
        );
        const dispatched = await dispatchAsScheduler(services.store, task, new Date(), 60);
        return services.store.apply(start(dispatched, dispatched.fence, new Date(), 60));
      };
      const succeeded = await services.store.apply(succeed(await member(0), 1, new Date(), { ok: true }));
      const failing = await member(1);
      const failed = await services.store.apply(
        fail(failing, failing.fence, new Date(), { name: 'Error', message: 'no', retryable: false }, 0),
      );
      const lone = (await services.store.create(createTask(newId(), spec(tenantId), new Date()))).task;
      const loneRunning = await services.store.apply(
        start(await dispatchAsScheduler(services.store, lone, new Date(), 60), 1, new Date(), 60),
      );
      await services.store.apply(succeed(loneRunning, loneRunning.fence, new Date(), { ok: true }));

      expect(succeeded.state).toBe('SUCCEEDED');
      expect(failed.state).toBe('FAILED');
      expect(await rawItem(succeeded.taskId)).not.toHaveProperty('tenantState');
      expect(await rawItem(failed.taskId)).toMatchObject({
        tenantState: tenantStateKey(tenantId, 'FAILED', failed.taskId),
      });
      const listed = async (state: 'SUCCEEDED' | 'FAILED') =>
        (await services.store.list({ tenantId, state, limit: 10 })).items.map((task) => task.taskId);
      expect(await listed('SUCCEEDED')).toEqual([lone.taskId]);
      expect(await listed('FAILED')).toEqual([failed.taskId]);
      expect(await services.store.countByTenantState(tenantId, 'SUCCEEDED')).toBe(1);
    });
  });

  describe('A ledger page that outlives some of its attempts', () => {
    it('lists and counts only the attempts still leased: an ended one is shown from its end (or its batch) alone', async () => {
      // Prepare: two tasks dispatched in one round (one page); the batch member succeeds.
      const tenantId = `page-${counter++}`;
      const now = new Date();
      const member = (
        await services.store.create(
          createTask(
            newId(),
            { ...spec(tenantId), batchId: 'bat_page', batchIndex: 0 },
            new Date(now.getTime() - 2000),
          ),
        )
      ).task;
      const other = (await services.store.create(createTask(newId(), spec(tenantId), new Date(now.getTime() - 1000))))
        .task;
      const plans = [member, other].map((task) => dispatch(task, now, 60));
      await new LeaseLedger(services.store.leasePages!, SINGLE_SHARD).record(
        plans.map((plan) => leasedRefOf(plan.next)),
        now.getTime(),
      );
      const [dispatchedMember] = await Promise.all(plans.map((plan) => services.store.apply(plan)));
      const running = await services.store.apply(start(dispatchedMember!, dispatchedMember!.fence, now, 60));
      await services.store.apply(succeed(running, running.fence, now, { ok: true }));

      // Act
      const all = await services.store.list({ tenantId, limit: 10 });
      const counts = await services.store.countLeasedByTenant();

      // Assess: the page still names both; only the other is shown, and counted.
      const pages = await services.store.leasePages!.all();
      expect(pages.some((page) => page.refs.some((ref) => ref.taskId === member.taskId))).toBe(true);
      expect(all.items.map((task) => task.taskId)).toEqual([other.taskId]);
      expect(counts.get(tenantId)).toBe(1);
    });
  });

  describe('Method: listLeased', () => {
    it('lists a task from its page on the lease ledger once dispatched, not while QUEUED (its index is byTenantQueue)', async () => {
      const listedOf = async (tenantId: string) => {
        const ids: string[] = [];
        for await (const ref of services.store.listLeased({ tenantId })) ids.push(ref.taskId);
        return ids;
      };
      const { task } = await services.store.create(createTask(newId(), spec('queued-key'), new Date()));
      const queued = await rawItem(task.taskId);
      expect(queued).not.toHaveProperty('leasedShard');
      expect(queued).not.toHaveProperty('activeShard');
      expect(queued).toMatchObject({ queueKey: queueKey('queued-key', 'normal', task.taskId) });
      expect(await listedOf('queued-key')).toEqual([]);
      await dispatchAsScheduler(services.store, task, new Date(), 60);
      const leased = await rawItem(task.taskId);
      expect(leased).not.toHaveProperty('queueKey');
      expect(leased).not.toHaveProperty('leasedShard');
      expect(await listedOf('queued-key')).toEqual([task.taskId]);
    });

    it('anyLeased: a Limit-1 query a shard sees a dispatched task', async () => {
      const { task } = await services.store.create(createTask(newId(), spec('any-leased'), new Date()));
      await dispatchAsScheduler(services.store, task, new Date(), 60);
      expect(await services.store.anyLeased()).toBe(true);
    });

    it('writes no index entry for a leased task from dispatch to the last lease renewal', async () => {
      // An entry added and removed costs two index writes a task; the ledger's page one write per
      // round. No index key or projected attribute may be set on a leased item.
      const { task } = await services.store.create(createTask(newId(), spec('leased-key'), new Date()));
      const dispatched = await dispatchAsScheduler(services.store, task, new Date(), 60);
      const atDispatch = await rawItem(task.taskId);
      const running = await services.store.apply(start(dispatched, dispatched.fence, new Date(), 60));
      const atStart = await rawItem(task.taskId);
      await services.store.apply(heartbeat(running, running.fence, new Date(Date.now() + 30_000), 600));
      const atRenewal = await rawItem(task.taskId);

      for (const item of [atDispatch, atStart, atRenewal]) {
        for (const index of TASKS_TABLE.indexes) expect(item).not.toHaveProperty(index.partitionKey);
      }
      expect(atRenewal?.leaseExpiresAt).not.toEqual(atStart?.leaseExpiresAt);
      expect(atStart?.state).not.toEqual(atDispatch?.state);
      // Still listed.
      const listed: string[] = [];
      for await (const ref of services.store.listLeased({ tenantId: 'leased-key' })) listed.push(ref.taskId);
      expect(listed).toContain(task.taskId);
    });

    it('lists leased tasks across shards, and only leased ones', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const { task } = await services.store.create(createTask(newId(), spec('across'), new Date()));
        if (i < 6) await dispatchAsScheduler(services.store, task, new Date(), 60);
        ids.push(task.taskId);
      }
      const listed: string[] = [];
      for await (const ref of services.store.listLeased({ tenantId: 'across' })) listed.push(ref.taskId);
      expect(listed.sort()).toEqual(ids.slice(0, 6).sort());
    });
  });
});

describe('Class: TaskStore, byTenantQueue (against dynalite)', () => {
  it("lists a tenant-tier's due QUEUED tasks oldest due first, and only while they wait", async () => {
    // Prepare: tenant `queue-a` has three normal tasks due, one due later, one high; tenant
    // `queue-b` one normal. One of queue-a's due tasks is dispatched.
    const tenantId = `queue-a-${counter++}`;
    const nowMs = Date.now();
    const at = (offsetMs: number) => new Date(nowMs + offsetMs);
    const create = async (tenant: string, offsetMs: number, priority: 'normal' | 'high' = 'normal') =>
      (await services.store.create(createTask(newId(), { ...spec(tenant), priority }, at(offsetMs)))).task;
    const oldest = await create(tenantId, -3_000);
    const middle = await create(tenantId, -2_000);
    const newest = await create(tenantId, -1_000);
    const later = await create(tenantId, 60_000);
    const high = await create(tenantId, -5_000, 'high');
    await create(`queue-b-${counter++}`, -4_000);
    const dispatched = await dispatchAsScheduler(services.store, middle, at(0), 60);

    // Act
    const due = await services.store.listDue(tenantId, 'normal', nowMs, 10);
    const firstOnly = await services.store.listDue(tenantId, 'normal', nowMs, 1);
    const first = await services.store.firstQueued(tenantId, 'normal');
    const highDue = await services.store.listDue(tenantId, 'high', nowMs, 10);

    // Assess
    expect(due.refs.map((ref) => ref.taskId)).toEqual([oldest.taskId, newest.taskId]);
    expect(due.hasMore).toBe(false);
    expect(due.refs[0]).toEqual({
      taskId: oldest.taskId,
      tenantId,
      priority: 'normal',
      runtime: oldest.runtime,
      resources: oldest.resources,
      agingFrom: oldest.agingFrom,
      runAt: oldest.runAt,
      fence: oldest.fence,
    });
    expect(firstOnly).toEqual({ refs: [due.refs[0]], hasMore: true });
    expect(first?.taskId).toBe(oldest.taskId);
    expect(highDue.refs.map((ref) => ref.taskId)).toEqual([high.taskId]);
    // The later task is listed once due, and the derived keys leave with QUEUED.
    const whenLaterDue = await services.store.listDue(tenantId, 'normal', nowMs + 60_000, 10);
    expect(whenLaterDue.refs.map((ref) => ref.taskId)).toEqual([oldest.taskId, newest.taskId, later.taskId]);
    expect(await rawItem(dispatched.taskId)).not.toHaveProperty('queueKey');
    expect(await rawItem(oldest.taskId)).toMatchObject({ queueKey: queueKey(tenantId, 'normal', oldest.taskId) });
    expect(await services.store.get(oldest.taskId)).not.toHaveProperty('queueKey');
  });
});

describe('Class: TaskStore, sharded per-tenant keys (against dynalite)', () => {
  /** What the version before issue 24 wrote: the unsharded keys. */
  async function asPreviousVersion(taskId: string): Promise<void> {
    const item = (await rawItem(taskId))!;
    const tenantId = item.tenantId as string;
    await services.clients.documents.send(
      new PutCommand({
        TableName: services.emulators.tables.tasks,
        Item: {
          ...item,
          ...(item.tenantState ? { tenantState: `${tenantId}#${item.state as string}` } : {}),
          ...(item.queueKey ? { queueKey: `${tenantId}#${item.priority as string}` } : {}),
        },
      }),
    );
  }

  it('spreads one tenant over its shards, and finds both the sharded and the unsharded key forms, in order', async () => {
    // Prepare: 24 due tasks of one tenant-tier, a second apart, every third written with the
    // previous version's unsharded keys; 12 of them succeed.
    const tenantId = `sharded-${counter++}`;
    const nowMs = Date.now();
    const tasks = [];
    for (let i = 0; i < 24; i++) {
      const { task } = await services.store.create(
        createTask(newId(), spec(tenantId), new Date(nowMs - 60_000 + i * 1000)),
      );
      tasks.push(task);
    }
    const legacy = tasks.filter((_, i) => i % 3 === 0);
    const done = [];
    for (const [i, task] of tasks.entries()) {
      if (i % 2 === 1) {
        const dispatched = await dispatchAsScheduler(services.store, task, new Date(), 60);
        const running = await services.store.apply(start(dispatched, dispatched.fence, new Date(), 60));
        done.push(await services.store.apply(succeed(running, running.fence, new Date(), { ok: true })));
      }
    }
    for (const task of legacy) await asPreviousVersion(task.taskId);
    const queued = tasks.filter((_, i) => i % 2 === 0);
    const raw = await Promise.all(tasks.map((task) => rawItem(task.taskId)));
    expect(new Set(raw.map((item) => item?.tenantState)).size).toBeGreaterThan(4);
    expect(raw[1]?.tenantState).toBe(tenantStateKey(tenantId, 'SUCCEEDED', tasks[1]!.taskId));
    expect(raw[0]?.queueKey).toBe(`${tenantId}#normal`);
    expect(raw[2]?.queueKey).toBe(queueKey(tenantId, 'normal', tasks[2]!.taskId));
    expect(new Set(queued.map((task) => tenantKeyShardOf(task.taskId))).size).toBeGreaterThan(3);

    // Act + Assess: the intake's window, oldest due first, whatever its page size.
    const all = await services.store.listDue(tenantId, 'normal', nowMs, 100);
    expect(all).toEqual({
      refs: queued.map((task) => expect.objectContaining({ taskId: task.taskId })),
      hasMore: false,
    });
    for (const limit of [1, 3, 5]) {
      const page = await services.store.listDue(tenantId, 'normal', nowMs, limit);
      expect(page.hasMore).toBe(true);
      expect(page.refs.length).toBeGreaterThan(0);
      expect(page.refs.map((ref) => ref.taskId)).toEqual(queued.slice(0, page.refs.length).map((t) => t.taskId));
      // A full page whenever the tenant-tier has that much due: a short one leaves its intake
      // window nearly empty between refills.
      expect(page.refs).toHaveLength(limit);
    }
    expect((await services.store.firstQueued(tenantId, 'normal'))?.taskId).toBe(queued[0]!.taskId);
    expect(await services.store.countQueued(tenantId, 'normal', 1000)).toBe(12);
    expect(await services.store.countQueued(tenantId, 'normal', 5)).toBe(5);
    expect(await services.store.countByTenantState(tenantId, 'QUEUED')).toBe(12);
    expect(await services.store.countByTenantState(tenantId, 'SUCCEEDED')).toBe(12);

    // Listing by state, newest first, page by page across shards and both key forms.
    for (const [state, expected] of [
      ['QUEUED', queued],
      ['SUCCEEDED', done],
    ] as const) {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await services.store.list({ tenantId, state, limit: 4, cursor });
        expect(page.items.length).toBeLessThanOrEqual(4);
        seen.push(...page.items.map((task) => task.taskId));
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen).toEqual([...expected].reverse().map((task) => task.taskId));
    }
  });
  it('lists a tenant in every state newest first, from byTenantState (both key forms) and the lease ledger, page by page', async () => {
    // Prepare: 10 tasks a second apart: queued, dispatched, running and succeeded, some of them
    // written with the previous version's unsharded keys.
    const tenantId = `all-states-${counter++}`;
    const t0 = Date.now() - 60_000;
    const tasks = [];
    for (let i = 0; i < 10; i++) {
      const { task } = await services.store.create(createTask(newId(), spec(tenantId), new Date(t0 + i * 1000)));
      tasks.push(task);
    }
    const dispatched = await dispatchAsScheduler(services.store, tasks[2]!, new Date(), 60);
    const running = await dispatchAsScheduler(services.store, tasks[5]!, new Date(), 60);
    await services.store.apply(start(running, running.fence, new Date(), 60));
    for (const i of [7, 8]) {
      const d = await dispatchAsScheduler(services.store, tasks[i]!, new Date(), 60);
      const r = await services.store.apply(start(d, d.fence, new Date(), 60));
      await services.store.apply(succeed(r, r.fence, new Date(), { ok: true }));
    }
    for (const i of [0, 3, 8]) await asPreviousVersion(tasks[i]!.taskId);
    expect(dispatched.state).toBe('DISPATCHED');

    // Act
    const seen: { id: string; state: string }[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await services.store.list({ tenantId, limit: 3, cursor });
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items.map((task) => ({ id: task.taskId, state: task.state })));
      cursor = page.nextCursor;
      pages++;
    } while (cursor && pages < 20);

    // Assess
    expect(seen.map((entry) => entry.id)).toEqual([...tasks].reverse().map((task) => task.taskId));
    expect(seen.filter((entry) => entry.state !== 'QUEUED').map((entry) => entry.state)).toEqual([
      'SUCCEEDED',
      'SUCCEEDED',
      'RUNNING',
      'DISPATCHED',
    ]);
    // A cursor another tenant's listing minted is refused.
    const first = await services.store.list({ tenantId, limit: 3 });
    await expect(
      services.store.list({ tenantId: 'someone-else', limit: 3, cursor: first.nextCursor }),
    ).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('Class: ControlStore (against dynalite)', () => {
  it("takes a lease whose write landed and whose answer was lost: the SDK's retry is refused by that very write", async () => {
    const { ControlStore } = await import('../../runtime/adapters/control-store.ts');
    const tableName = services.emulators.tables.control!;
    const documents = services.clients.documents;
    // The first lease write is sent twice, the answer of the second returned: a write applied, its
    // answer lost, and retried by the SDK (what chaos bounds seed 7 did: the successor took the lease,
    // was told it was held, and left it held by itself for its TTL; no scheduler ran for 90 s).
    let replays = 0;
    const retried = {
      send: async (command: Parameters<typeof documents.send>[0]) => {
        if (command instanceof PutCommand && replays++ === 0) await documents.send(command);
        return documents.send(command);
      },
    } as unknown as typeof documents;
    const other = new ControlStore(documents, tableName);
    await other.acquireLease('lost-answer', 'A', 0, 1_000);

    // Act: B takes A's expired lease through the lost answer
    const lease = await new ControlStore(retried, tableName).acquireLease('lost-answer', 'B', 5_000, 30_000);

    // Assess: taken, with the token and the predecessor's end as if answered at once
    expect(lease).toMatchObject({ owner: 'B', token: 2, expiresAt: 35_000, predecessorUntilMs: 1_000 });
    expect(await other.getLease('lost-answer')).toMatchObject({ owner: 'B', token: 2, expiresAt: 35_000 });
    // Held by B, it is refused to C as before
    expect(await other.acquireLease('lost-answer', 'C', 6_000, 30_000)).toBeUndefined();
  });

  it('writes a large snapshot as one copy per 24 KB, reads them in turn, and deletes the copies it no longer needs', async () => {
    const { ControlStore } = await import('../../runtime/adapters/control-store.ts');
    const tableName = services.emulators.tables.control!;
    const writer = new ControlStore(services.clients.documents, tableName);
    let clockMs = 0;
    const reader = new ControlStore(services.clients.documents, tableName, {
      snapshotCacheMs: 1_000,
      nowMs: () => clockMs,
    });
    const copiesStored = async () => {
      const stored = [];
      for (let copy = 0; copy < 8; copy++) {
        const pk = copy === 0 ? 'snapshot#scheduler' : `snapshot#scheduler#${copy}`;
        const { Item } = await services.clients.documents.send(new GetCommand({ TableName: tableName, Key: { pk } }));
        if (Item) stored.push(pk);
      }
      return stored;
    };
    // Incompressible (the snapshot is stored gzipped): about 61 KB, 3 copies.
    const large = { at: 'large', filler: randomBytes(60_000).toString('base64') };

    await writer.putSnapshot(large);
    expect(await copiesStored()).toEqual(['snapshot#scheduler', 'snapshot#scheduler#1', 'snapshot#scheduler#2']);
    // The first read learns the copies; each read after the cache's second takes the next copy
    // (copy 1 marked here to tell them apart).
    await services.clients.documents.send(
      new PutCommand({
        TableName: tableName,
        Item: { pk: 'snapshot#scheduler#1', kind: 'snapshot', copies: 3, snapshotJson: '{"at":"copy 1"}' },
      }),
    );
    const read = [];
    for (let i = 0; i < 4; i++) {
      clockMs += 1_000;
      read.push(((await reader.getSnapshot()) as { at: string }).at);
    }
    expect(read.filter((at) => at === 'copy 1')).toHaveLength(1);
    expect(read.filter((at) => at === 'large').length).toBeGreaterThanOrEqual(2);
    await writer.putSnapshot(large);
    await writer.putSnapshot({ at: 'small' });
    expect(await copiesStored()).toEqual(['snapshot#scheduler']);
    // Within the cache's second the reader serves what it read; after it, the new snapshot.
    expect(await reader.getSnapshot()).toEqual(large);
    clockMs += 1_000;
    expect(await reader.getSnapshot()).toEqual({ at: 'small' });
    // Without a cache, every read is a read.
    expect(await writer.getSnapshot()).toEqual({ at: 'small' });
  });

  it('stores the snapshot gzipped: 10,000 tenants of it (about 1.4 MB of JSON, over the 400 KB an item takes) fit one item of under 50 KB (two copies of it, as reads of that size need), read back whole', async () => {
    const { ControlStore } = await import('../../runtime/adapters/control-store.ts');
    const tableName = services.emulators.tables.control!;
    const store = new ControlStore(services.clients.documents, tableName);
    const tenants = Object.fromEntries(
      Array.from({ length: 10_000 }, (_, i) => [
        `tenant-${String(i).padStart(5, '0')}-of-a-platform-team`,
        { queued: i % 7, running: i % 3, weight: 1, maxConcurrency: 100, waitingTurnAt: '2026-12-03T12:00:00.000Z' },
      ]),
    );
    const snapshot = { at: '2026-12-03T12:00:00.000Z', tenants };
    expect(JSON.stringify(snapshot).length).toBeGreaterThan(1_000_000);

    await store.putSnapshot(snapshot);

    const { Item } = await services.clients.documents.send(
      new GetCommand({ TableName: tableName, Key: { pk: 'snapshot#scheduler' } }),
    );
    expect(Item?.copies).toBeLessThanOrEqual(2);
    expect(Item?.snapshotJson).toBeUndefined();
    expect((Item?.snapshotGz as Uint8Array | undefined)?.byteLength).toBeLessThan(50_000);
    expect(await store.getSnapshot()).toEqual(snapshot);
  });

  it("keeps the rotation's memory with the pool's count of freed slots and how full it was, so a scheduler starting afresh has them", async () => {
    // Prepare
    const state = {
      lambda: { 'tenant-a': 1_700_000_000_000 },
      fargate: {},
      freed: { lambda: { sinceMs: 1_699_999_940_000, buckets: [[1_699_999_990_000, 42]] as [number, number][] } },
      occupancy: {
        lambda: {
          sinceMs: 1_699_999_940_000,
          buckets: [[1_699_999_990_000, 7, 3]] as [number, number, number][],
          before: 2,
        },
      },
    };
    // Act
    await services.control.putRotation(state, new Date());
    // Assess
    expect(await services.control.getRotation()).toEqual(state);
  });

  it("keeps the rotation's memory of thousands of tenants with long ids within DynamoDB's 400 KB item", async () => {
    // Prepare: 5,000 tenants with 120-character ids served in the last minutes (about 650 KB as JSON)
    const base = 1_700_000_000_000;
    const lambda: Record<string, number> = {};
    for (let i = 0; i < 5_000; i++) lambda[`${'t'.repeat(115)}-${String(i).padStart(4, '0')}`] = base + i * 37;
    const state = { lambda, fargate: {} };
    // Act
    await services.control.putRotation(state, new Date());
    // Assess
    expect(await services.control.getRotation()).toEqual(state);
  });

  it("leaves out the tenants served longest ago when even gzipped the rotation's memory would not fit", async () => {
    // Prepare: 40,000 tenants with random ids (gzip cannot fold them), served one every 10 ms
    const base = 1_700_000_000_000;
    const lambda: Record<string, number> = {};
    for (let i = 0; i < 40_000; i++) lambda[randomUUID()] = base + i * 10;
    // Act
    const { dropped } = await services.control.putRotation({ lambda, fargate: {} }, new Date());
    const stored = await services.control.getRotation();
    // Assess: some left out, and exactly the oldest ones
    const kept = Object.values(stored?.lambda ?? {}).sort((a, b) => a - b);
    expect(dropped).toBeGreaterThan(0);
    expect(kept.length).toBe(40_000 - dropped);
    expect(kept[0]).toBe(base + dropped * 10);
    expect(kept.at(-1)).toBe(base + 39_999 * 10);
  });

  it("reads the rotation's memory as a version before d2015cf wrote it (rotationJson), and writes it gzipped next", async () => {
    // Prepare: the item as the release before the gzipped memory left it (a stack updated in place)
    const tableName = services.emulators.tables.control!;
    const older = { lambda: { 'tenant-a': 1_700_000_000_000 }, fargate: { 'tenant-b': 1_700_000_001_000 } };
    await services.clients.documents.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          pk: 'rotation#scheduler',
          kind: 'rotation',
          at: '2026-12-03T12:00:00.000Z',
          rotationJson: JSON.stringify(older),
        },
      }),
    );
    // Act / Assess: a scheduler of this version resumes with it
    const read = await services.control.getRotation();
    expect(read).toEqual(older);
    await services.control.putRotation(read!, new Date());
    const { Item } = await services.clients.documents.send(
      new GetCommand({ TableName: tableName, Key: { pk: 'rotation#scheduler' } }),
    );
    expect(Item?.rotationJson).toBeUndefined();
    expect(Item?.rotationGz).toBeInstanceOf(Uint8Array);
    expect(await services.control.getRotation()).toEqual(older);
  });

  it('stores tenant settings', async () => {
    const stored = await services.control.putTenant('t-settings', { weight: 2, maxConcurrency: 7 }, new Date());
    expect(await services.control.getTenant('t-settings')).toEqual(stored);
    expect((await services.control.listSettings()).tenants.map((t) => t.tenantId)).toContain('t-settings');
  });

  it('moves the tenant settings version on every stored setting, and lists no version item as a tenant', async () => {
    const before = await services.control.tenantsVersion();
    await services.control.putTenant('t-version', { weight: 1, maxConcurrency: 3 }, new Date());
    const once = await services.control.tenantsVersion();
    await services.control.putTenant('t-version', { weight: 1, maxConcurrency: 4 }, new Date());
    expect(once).not.toBe(before);
    expect(await services.control.tenantsVersion()).not.toBe(once);
    expect((await services.control.listSettings()).tenants.every((t) => t.tenantId !== undefined)).toBe(true);
  });

  it('registers a tenant-tier with a fresh token each time and deregisters only on the current one', async () => {
    const tenantId = `intake#${counter++}`;
    const first = await services.control.registerIntake(tenantId, 'high', new Date());
    const second = await services.control.registerIntake(tenantId, 'high', new Date());
    const other = await services.control.registerIntake(tenantId, 'low', new Date());
    const listed = () => services.control.listIntake().then((all) => all.filter((r) => r.tenantId === tenantId));

    expect(second.token).not.toBe(first.token);
    expect(await listed()).toEqual(expect.arrayContaining([second, other]));
    // A deregistration decided on the older registration is refused.
    const nowMs = Date.now();
    expect(await services.control.deregisterIntake(first, nowMs)).toBe(false);
    expect(await services.control.deregisterIntake(second, nowMs)).toBe(true);
    expect(await services.control.deregisterIntake(second, nowMs)).toBe(false);
    expect(await listed()).toEqual([other]);
    // Not a tenant.
    expect((await services.control.listSettings()).tenants.map((t) => t.tenantId)).not.toContain(tenantId);
  });

  it('only ever extends a tenant-tier promise, keeps it across registrations, and deregisters only after it', async () => {
    const { control } = services;
    const tenantId = `promise#${counter++}`;
    const now = new Date();
    const registered = await control.registerIntake(tenantId, 'normal', now);
    expect(registered.scanUntilMs).toBe(0);
    expect(await control.intakePromise(tenantId, 'normal')).toBe(0);

    expect(await control.promiseIntake({ ...registered, scanUntilMs: 60_000 }, now)).toEqual({
      ...registered,
      scanUntilMs: 60_000,
    });
    // A lower promise is refused and the stored one returned.
    expect(await control.promiseIntake({ ...registered, scanUntilMs: 30_000 }, now)).toEqual({
      ...registered,
      scanUntilMs: 60_000,
    });
    // A registration (fresh token) keeps the stored promise, even when its writer knew none.
    const again = await control.registerIntake(tenantId, 'normal', now);
    expect(again.token).not.toBe(registered.token);
    expect(again.scanUntilMs).toBe(60_000);
    // A promise on the old token is refused: the item as it is comes back.
    expect(await control.promiseIntake({ ...registered, scanUntilMs: 90_000 }, now)).toEqual(again);
    expect(await control.intakePromise(tenantId, 'normal')).toBe(60_000);
    // Not before the promise ended (the caller passes now − G).
    expect(await control.deregisterIntake(again, 59_999)).toBe(false);
    expect(await control.deregisterIntake(again, 60_000)).toBe(true);
    expect(await control.getIntake(tenantId, 'normal')).toBeUndefined();
  });

  it('grants a lease to one holder at a time, with a growing token across holders', async () => {
    const name = `lease-${newId()}`;
    const a = await services.control.acquireLease(name, 'A', 1_000, 10_000);
    expect(a).toMatchObject({ owner: 'A', token: 1 });
    expect(await services.control.acquireLease(name, 'B', 5_000, 10_000)).toBeUndefined();
    expect(await services.control.acquireLease(name, 'A', 6_000, 10_000)).toMatchObject({ token: 1 });
    // A stops renewing; after expiry B takes over with a larger token, and A cannot renew.
    const b = await services.control.acquireLease(name, 'B', 17_000, 10_000);
    expect(b).toMatchObject({ owner: 'B', token: 2 });
    expect(await services.control.acquireLease(name, 'A', 18_000, 10_000)).toBeUndefined();
    await services.control.releaseLease(b!, 18_500);
    expect(await services.control.acquireLease(name, 'A', 19_000, 10_000)).toMatchObject({ token: 3 });
  });

  it('tells a new holder until when its predecessor may have written', async () => {
    const name = `lease-${newId()}`;
    // First holder: nobody before it. Renewal: no change of holder.
    expect((await services.control.acquireLease(name, 'A', 1_000, 10_000))?.predecessorUntilMs).toBeUndefined();
    expect((await services.control.acquireLease(name, 'A', 4_000, 10_000))?.predecessorUntilMs).toBeUndefined();
    // A lapses (expiry at 14 000): B's predecessor may have written until then.
    const b = await services.control.acquireLease(name, 'B', 20_000, 10_000);
    expect(b).toMatchObject({ token: 2, predecessorUntilMs: 14_000 });
    // B hands back at 25 000: C's predecessor wrote until its release, not its expiry.
    await services.control.releaseLease(b!, 25_000);
    expect(await services.control.acquireLease(name, 'C', 25_100, 10_000)).toMatchObject({
      token: 3,
      predecessorUntilMs: 25_000,
    });
    // What is stored is the lease itself, not what an acquire said about the one before.
    expect(await services.control.getLease(name)).toEqual({ name, owner: 'C', token: 3, expiresAt: 35_100 });
  });
});
