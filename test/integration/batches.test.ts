/**
 * Batches against the emulators (issue 25): per-item results, a repeat of the request, the
 * then-task once every member ended, and the crash windows the sweeper covers (a member ended
 * and never counted, a count whose answer was lost).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchStore } from '../../runtime/adapters/batch-store.ts';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { submitTaskSchema } from '../../runtime/api/schemas.ts';
import { BatchService, type BatchSubmitInput, memberCursor } from '../../runtime/app/batches.ts';
import { idempotentTaskId } from '../../runtime/app/task-service.ts';
import { thenTaskKey } from '../../runtime/core/batch.ts';
import { cancel, dispatch } from '../../runtime/core/lifecycle.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { runAttempt } from '../../runtime/worker/run-attempt.ts';
import { type FaultKind, type FaultyComponent, faultyComponent, type SdkCall } from '../helpers/faults.ts';
import { snapshotWrites, startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
beforeAll(async () => {
  services = await startTestServices();
});
afterAll(async () => {
  await services.stop();
});

const item = (tenantId: string, n: number) => ({ tenantId, type: 'demo.echo', payload: { n } });

/** A batch of `size` echo tasks of `tenantId`, with a then-task. */
const batchOf = (tenantId: string, size: number, extra: Partial<BatchSubmitInput> = {}): BatchSubmitInput => ({
  tasks: Array.from({ length: size }, (_, n) => item(tenantId, n)),
  // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (PRODUCT.md, POST /v1/tasks/batch)
  then: { tenantId, type: 'demo.echo', payload: { report: tenantId } },
  ...extra,
});

/** End every task of the results by cancelling it (QUEUED → CANCELLED). */
async function cancelAll(taskIds: readonly string[], store = services.store): Promise<void> {
  for (const taskId of taskIds) await store.transition(taskId, (task) => cancel(task, new Date()));
}

const idsOf = (results: readonly unknown[]): string[] =>
  results.flatMap((result) => ('taskId' in (result as object) ? [(result as { taskId: string }).taskId] : []));

describe('Class: BatchService (emulators)', () => {
  it("pages a batch's tasks in submit order across its member shards, refused items skipped, with and without a state", async () => {
    // Prepare: 230 items over 3 member shards; every 50th refused; 10 cancelled.
    const input = batchOf('bulk-pages', 230);
    for (let i = 0; i < 230; i += 50) (input.tasks as unknown[])[i] = { tenantId: 'bulk-pages', type: 'demo.nope' };
    const { batchId, results } = await services.batches.submit(input);
    const ids = idsOf(results);
    const cancelled = ids.filter((_, i) => i % 23 === 5);
    await cancelAll(cancelled);
    const pageThrough = async (limit: number, state?: 'QUEUED' | 'CANCELLED') => {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 500; pages++) {
        const page = await services.batches.members(batchId, { state, limit, cursor });
        seen.push(...page!.items.map(({ task }) => task.taskId));
        if (page!.nextIndex === undefined) break;
        cursor = memberCursor(batchId, page!.nextIndex);
      }
      return seen;
    };

    // Act / Assess
    expect(await pageThrough(7)).toEqual(ids);
    expect(await pageThrough(100)).toEqual(ids);
    expect(await pageThrough(30, 'CANCELLED')).toEqual(cancelled);
    expect(await pageThrough(13, 'QUEUED')).toEqual(ids.filter((id) => !cancelled.includes(id)));
    expect(await services.batches.members(batchId, { limit: 5 }, async () => false)).toBeUndefined();
    expect(await services.batches.members('bat_missing', { limit: 5 })).toBeUndefined();
    await expect(
      services.batches.members(batchId, { limit: 5, cursor: memberCursor('bat_other', 3) }),
    ).rejects.toMatchObject({ code: 'invalid_cursor' });
  });

  it('answers per item in order, refuses a bad item alone, and a repeat creates nothing', async () => {
    // Prepare
    const input = batchOf('bulk-a', 5);
    (input.tasks as unknown[])[1] = { tenantId: 'bulk-a', type: 'demo.nope' };
    (input.tasks as unknown[])[3] = { tenantId: 'bulk-a', type: 'demo.echo', priority: 'urgent' };
    // Act
    const first = await services.batches.submit(input);
    const again = await services.batches.submit(input);
    // Assess
    expect(first.results.map((result) => ('error' in result ? result.error.code : result.state))).toEqual([
      'QUEUED',
      'unknown_task_type',
      'QUEUED',
      'invalid_request',
      'QUEUED',
    ]);
    expect(again.batchId).toBe(first.batchId);
    expect(again.created).toBe(false);
    expect(idsOf(again.results)).toEqual(idsOf(first.results));
    expect(again.results.every((result) => !('created' in result) || result.created === false)).toBe(true);
    const view = await services.batches.describe(first.batchId);
    expect(view?.counts).toEqual({ succeeded: 0, failed: 0, cancelled: 0, excluded: 2, pending: 3 });
  });

  it('submits the then-task once, after the last member ended, with the counts in its payload', async () => {
    // Prepare
    const { batchId, results } = await services.batches.submit(batchOf('bulk-b', 3));
    const ids = idsOf(results);
    // Act
    await cancelAll(ids.slice(0, 2));
    const before = await services.batches.describe(batchId);
    await cancelAll(ids.slice(2));
    const after = await services.batches.describe(batchId);
    // Assess
    expect(before?.thenTaskId).toBeUndefined();
    const thenTaskId = idempotentTaskId('bulk-b', thenTaskKey(batchId));
    expect(after?.thenTaskId).toBe(thenTaskId);
    expect(after?.counts).toMatchObject({ cancelled: 3, pending: 0 });
    const thenTask = await services.store.get(thenTaskId);
    expect(thenTask?.payload).toEqual({
      report: 'bulk-b',
      batch: { batchId, succeeded: 0, failed: 0, cancelled: 3 },
    });
    const listed = await services.batches.list('bulk-b', 10);
    expect(listed.items.map((batch) => batch.batchId)).toEqual([batchId]);
  });

  it('ends a batch whose last member ended without being counted, when the sweeper looks', async () => {
    // Prepare: a store without the counting hook ends the members (a crash right after the write)
    const component = faultyComponent({
      name: 'uncounted',
      emulators: services.emulators,
      config: services.config,
      registry: services.registry,
      now: () => new Date(),
    });
    const { batchId, results } = await services.batches.submit(batchOf('bulk-c', 2));
    await cancelAll(idsOf(results), component.store);
    const stuck = await services.batches.describe(batchId);
    // Act
    await services.batches.sweepBatch(batchId);
    // Assess
    expect(stuck?.counts?.pending).toBe(2);
    const swept = await services.batches.describe(batchId);
    expect(swept?.counts).toMatchObject({ cancelled: 2, pending: 0 });
    expect(swept?.thenTaskId).toBe(idempotentTaskId('bulk-c', thenTaskKey(batchId)));
    await component.dispose();
  });

  it('counts a member once when its count landed and the answer was lost', async () => {
    // Prepare
    let lose = 1;
    const component = faultyComponent({
      name: 'lost-count',
      emulators: services.emulators,
      config: services.config,
      registry: services.registry,
      now: () => new Date(),
      decide: (call: SdkCall): FaultKind | undefined =>
        call.command === 'UpdateItemCommand' && lose-- > 0 ? 'ambiguous' : undefined,
    });
    const { batchId } = await services.batches.submit(batchOf('bulk-d', 2));
    // Act: the first count's answer is lost; the caller (or the sweeper) counts it again
    const lost = await component.batches.count(batchId, 0, 'succeeded').catch(() => 'lost');
    const again = await component.batches.count(batchId, 0, 'succeeded');
    const twice = await services.batches.describe(batchId);
    // Assess
    expect(lost).toBe('lost');
    expect(again.sets.succeeded).toEqual(new Set(['0']));
    expect(twice?.counts).toMatchObject({ succeeded: 1, pending: 1 });
    await component.dispose();
  });

  it('refuses a then-task with dependsOn or its own idempotencyKey (it waits for the batch, and is named by it), writing nothing', async () => {
    // Prepare: a task of the tenant the then-task could name.
    const { results } = await services.batches.submit(batchOf('bulk-then', 1));
    const existing = (results[0] as { taskId: string }).taskId;
    const before = await snapshotWrites(services);
    // Act
    const refusals = await Promise.all(
      [{ dependsOn: [existing] }, { dependsOn: ['tsk_nope'] }, { idempotencyKey: 'report-1' }].map((extra) =>
        services.batches
          // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (PRODUCT.md, POST /v1/tasks/batch)
          .submit({ ...batchOf('bulk-then', 2), then: { tenantId: 'bulk-then', type: 'demo.echo', ...extra } })
          .catch((error: unknown) => error),
      ),
    );
    // Assess
    expect(refusals).toEqual([
      expect.objectContaining({ code: 'invalid_request', details: { field: 'then.dependsOn' } }),
      expect.objectContaining({ code: 'invalid_request', details: { field: 'then.dependsOn' } }),
      expect.objectContaining({ code: 'invalid_request', details: { field: 'then.idempotencyKey' } }),
    ]);
    expect(await snapshotWrites(services)).toEqual(before);
  });

  it("refuses a batch whose every item is refused, with each item's error, writing nothing (no batch, no then-task)", async () => {
    // Prepare
    const before = await snapshotWrites(services);
    const input = {
      ...batchOf('bulk-none', 0),
      tasks: [
        { tenantId: 'bulk-none', type: 'demo.nope' },
        { tenantId: 'bulk-none', type: 'demo.echo', priority: 'urgent' },
      ],
    };
    // Act
    const refused = await services.batches.submit(input).catch((error: unknown) => error);
    // Assess
    expect(refused).toMatchObject({
      code: 'all_items_refused',
      message: 'Every item of the batch was refused (2 of 2); nothing was written',
      details: {
        field: 'tasks',
        results: [
          { error: { code: 'unknown_task_type', message: expect.any(String) } },
          { error: { code: 'invalid_request', message: expect.any(String) } },
        ],
      },
    });
    expect(await snapshotWrites(services)).toEqual(before);
    expect((await services.batches.list('bulk-none', 10)).items).toEqual([]);
  });

  it('refuses a batch whose every item names an unknown dependency the same way, writing nothing (it recorded the batch and ran its then-task on counts of 0)', async () => {
    // Prepare
    const before = await snapshotWrites(services);
    const input = {
      ...batchOf('bulk-deps', 0),
      tasks: [
        { tenantId: 'bulk-deps', type: 'demo.echo', dependsOn: ['tsk_nope'] },
        { tenantId: 'bulk-deps', type: 'demo.nope' },
      ],
      // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (PRODUCT.md, POST /v1/tasks/batch)
      then: { tenantId: 'bulk-deps', type: 'demo.echo' },
    };
    // Act
    const refused = await services.batches.submit(input).catch((error: unknown) => error);
    // Assess
    expect(refused).toMatchObject({
      code: 'all_items_refused',
      details: {
        field: 'tasks',
        results: [
          { error: { code: 'unknown_dependency', message: expect.any(String) } },
          { error: { code: 'unknown_task_type', message: expect.any(String) } },
        ],
      },
    });
    expect(await snapshotWrites(services)).toEqual(before);
    expect((await services.batches.list('bulk-deps', 10)).items).toEqual([]);
  });

  it('refuses a batch key reused with another body, and items of several tenants', async () => {
    // Prepare
    await services.batches.submit(batchOf('bulk-e', 1, { idempotencyKey: 'nightly' }));
    // Act
    const reused = await services.batches.submit(batchOf('bulk-e', 2, { idempotencyKey: 'nightly' })).catch((e) => e);
    const mixed = await services.batches.submit({ tasks: [item('bulk-e', 1), item('other', 2)] }).catch((e) => e);
    // Assess
    expect(reused).toMatchObject({
      code: 'idempotency_key_reused',
      message: expect.stringMatching(/"nightly" was already used for a different batch \(bat_[\w-]+\)$/),
      details: { batchId: expect.stringMatching(/^bat_/) },
    });
    expect(mixed).toMatchObject({ code: 'mixed_tenants' });
  });

  it('counts a round of ends in one write per counter shard, each end once (membersEnded)', async () => {
    // Prepare: 150 members (2 counter shards) ended by writes that leave the count to the report
    /** The counting writes (ADD) of counter shards. */
    const updates: string[] = [];
    const component = faultyComponent({
      name: 'count-many',
      emulators: services.emulators,
      config: services.config,
      registry: services.registry,
      now: () => new Date(),
      decide: (call: SdkCall): FaultKind | undefined => {
        const key = (call.input.Key as { taskId?: string } | undefined)?.taskId ?? '';
        const counting = String(call.input.UpdateExpression ?? '').startsWith('ADD');
        if (counting && /#c\d+$/.test(key)) updates.push(key);
        return undefined;
      },
    });
    const counter = batchServiceOf(component);
    const { batchId, results } = await services.batches.submit(batchOf('bulk-f', 150));
    const ids = idsOf(results);
    for (const taskId of ids) {
      await services.store.transition(taskId, (task) => cancel(task, new Date()), { batchEndReported: true });
    }
    const uncounted = await services.batches.describe(batchId);
    const ends = ids.map((_, index) => ({ batchId, batchIndex: index, state: 'CANCELLED' as const }));
    // Act: the ends in two rounds, the second repeating part of the first (a redelivery)
    const first = await counter.membersEnded(ends.slice(0, 120));
    const second = await counter.membersEnded([...ends.slice(100, 120), ...ends.slice(120)]);
    // Assess
    expect(uncounted?.counts?.pending).toBe(150);
    expect([first, second]).toEqual([[], []]);
    expect(updates.sort()).toEqual([`${batchId}#c0`, `${batchId}#c1`, `${batchId}#c1`]);
    const view = await services.batches.describe(batchId);
    expect(view?.counts).toMatchObject({ cancelled: 150, pending: 0 });
    expect(view?.thenTaskId).toBe(idempotentTaskId('bulk-f', thenTaskKey(batchId)));
    await component.dispose();
  });

  it("counts each end once when a round's write landed with its answer lost, or raced a single count", async () => {
    // Prepare: the first counter write's answer is lost
    let lose = 1;
    const component = faultyComponent({
      name: 'count-many-lost',
      emulators: services.emulators,
      config: services.config,
      registry: services.registry,
      now: () => new Date(),
      decide: (call: SdkCall): FaultKind | undefined =>
        (call.command === 'UpdateCommand' || call.command === 'UpdateItemCommand') && lose-- > 0
          ? 'ambiguous'
          : undefined,
    });
    const counter = batchServiceOf(component);
    const { batchId } = await services.batches.submit(batchOf('bulk-g', 4));
    const ends = [0, 1, 2].map((index) => ({ batchId, batchIndex: index, state: 'SUCCEEDED' as const }));
    // Act: lost, then the reports come back; meanwhile member 3 was counted alone as failed (the
    // sweeper), and a later report says it succeeded (an operator's retry): the first end counts
    const lost = await counter.membersEnded(ends);
    await new BatchStore(services.clients.documents, services.store.tableName).count(batchId, 3, 'failed');
    const again = await counter.membersEnded([...ends, { batchId, batchIndex: 3, state: 'SUCCEEDED' }]);
    // Assess
    expect(lost).toEqual(ends);
    expect(again).toEqual([]);
    const counters = await services.batches.describe(batchId);
    expect(counters?.counts).toMatchObject({ succeeded: 3, failed: 1, pending: 0 });
    await component.dispose();
  });

  it('counts the ends workers report in completions when the scheduler frees them (no sweeper)', async () => {
    // Prepare: emulators of its own (no other test's queued work)
    const services = await startTestServices();
    const { batchId, results } = await services.batches.submit(batchOf('bulk-h', 3));
    const scheduler = new Scheduler({
      store: services.store,
      control: services.control,
      queues: services.queues,
      config: services.config,
      countBatchEnds: (ends) => services.batches.membersEnded(ends),
    });
    const messages: WorkerMessage[] = [];
    for (let tick = 0; tick < 8 && messages.length < 3; tick++) {
      await scheduler.tick();
      const got = await services.queues.receive<WorkerMessage>('worker-lambda', { waitSeconds: 0 });
      messages.push(...got.map((m) => m.body));
      if (got.length > 0)
        await services.queues.delete(
          'worker-lambda',
          got.map((m) => m.receiptHandle),
        );
    }
    const deps = {
      store: services.store,
      queues: services.queues,
      registry: services.registry,
      config: services.config,
    };
    // Act
    for (const message of messages) await runAttempt(deps, message);
    const reported = await services.batches.describe(batchId);
    for (let tick = 0; tick < 8 && !(await services.batches.describe(batchId))?.thenTaskId; tick++) {
      await scheduler.tick();
    }
    // Assess
    expect(messages.map((m) => m.taskId).sort()).toEqual(idsOf(results).sort());
    expect(reported?.counts?.pending).toBe(3);
    const ended = await services.batches.describe(batchId);
    expect(ended?.counts).toMatchObject({ succeeded: 3, pending: 0 });
    expect(ended?.thenTaskId).toBe(idempotentTaskId('bulk-h', thenTaskKey(batchId)));
    await scheduler.releaseHeld();
    await services.stop();
  });
  it('counts the end itself when its worker cannot send the completion report', async () => {
    // Prepare: a member dispatched; SQS refuses the worker's report
    const { batchId, results } = await services.batches.submit(batchOf('bulk-i', 2));
    const [taskId] = idsOf(results);
    const next = await services.store.transition(taskId!, (task) => dispatch(task, new Date(), 30));
    const queues = Object.create(services.queues, {
      reportCompletions: { value: async () => Promise.reject(new Error('SQS unavailable')) },
    }) as typeof services.queues;
    const deps = { store: services.store, queues, registry: services.registry, config: services.config };
    // Act
    const outcome = await runAttempt(deps, {
      taskId: next.taskId,
      fence: next.fence,
      tenantId: next.tenantId,
      type: next.type,
    });
    // Assess
    expect(outcome.kind === 'finished' && outcome.task.state).toBe('SUCCEEDED');
    const view = await services.batches.describe(batchId);
    expect(view?.counts).toMatchObject({ succeeded: 1, pending: 1 });
  });
});

/** A BatchService over a fault-injected component's clients (its store counts nothing itself). */
const batchServiceOf = (component: FaultyComponent): BatchService =>
  new BatchService({
    tasks: component.tasks,
    store: component.store,
    batches: component.batches,
    queues: component.queues,
    itemSchema: submitTaskSchema,
  });
