/**
 * Batches against the emulators (issue 25): per-item results, a repeat of the request, the
 * then-task once every member ended, and the crash windows the sweeper covers (a member ended
 * and never counted, a count whose answer was lost).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchSubmitInput } from '../../runtime/app/batches.ts';
import { idempotentTaskId } from '../../runtime/app/task-service.ts';
import { thenTaskKey } from '../../runtime/core/batch.ts';
import { cancel } from '../../runtime/core/lifecycle.ts';
import { type FaultKind, faultyComponent, type SdkCall } from '../helpers/faults.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

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

  it('refuses a batch key reused with another body, and items of several tenants', async () => {
    // Prepare
    await services.batches.submit(batchOf('bulk-e', 1, { idempotencyKey: 'nightly' }));
    // Act
    const reused = await services.batches.submit(batchOf('bulk-e', 2, { idempotencyKey: 'nightly' })).catch((e) => e);
    const mixed = await services.batches.submit({ tasks: [item('bulk-e', 1), item('other', 2)] }).catch((e) => e);
    // Assess
    expect(reused).toMatchObject({ code: 'idempotency_key_reused' });
    expect(mixed).toMatchObject({ code: 'mixed_tenants' });
  });
});
