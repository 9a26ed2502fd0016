/**
 * The simulated DynamoDB keeps `byTenantQueue` as it keeps every index of the one resource
 * definition: sparse (only QUEUED tasks), and lagging the table like any GSI.
 */
import { describe, expect, it } from 'vitest';
import { LeasePages } from '../../runtime/adapters/lease-pages.ts';
import { TaskStore } from '../../runtime/adapters/task-store.ts';
import { createTask, dispatch } from '../../runtime/core/lifecycle.ts';
import { NO_TRANSPORT_FAULTS } from '../../sim/aws/faults.ts';
import { SimulatedAws } from '../../sim/aws/world.ts';
import { taskSpec } from '../helpers/factories.ts';

function world(indexLagMs: number) {
  const clock = { ms: Date.parse('2026-01-01T00:00:00Z') };
  const aws = new SimulatedAws({
    seed: 1,
    now: () => clock.ms,
    indexLagMs,
    eventualLagMs: 0,
    unprocessedRate: 0,
    sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
  });
  const { documents } = aws.component('test', NO_TRANSPORT_FAULTS).clients;
  const store = new TaskStore(documents, aws.resources.tables.tasks!, {
    leases: new LeasePages(documents, aws.resources.tables.leases!),
  });
  return { store, clock };
}

describe('byTenantQueue on the simulated DynamoDB', () => {
  it('lists due QUEUED work per tenant-tier, drops it after dispatch, and lags the table', async () => {
    const { store, clock } = world(5_000);
    const first = (await store.create(createTask('tsk_1', taskSpec({ tenantId: 'sim' }), new Date(clock.ms)))).task;
    clock.ms += 1;
    await store.create(createTask('tsk_2', taskSpec({ tenantId: 'sim' }), new Date(clock.ms)));
    const ids = async () => (await store.listDue('sim', 'normal', clock.ms, 10)).refs.map((ref) => ref.taskId);

    // Not yet in the index: only the item is truth.
    expect(await ids()).toEqual([]);
    expect(await store.firstQueued('sim', 'normal')).toBeUndefined();
    clock.ms += 10 * 60_000;
    expect(await ids()).toEqual(['tsk_1', 'tsk_2']);

    await store.apply(dispatch(first, new Date(clock.ms), 60));
    // The dispatched task's entry stays until the index catches up, then leaves.
    expect(await ids()).toEqual(['tsk_1', 'tsk_2']);
    clock.ms += 10 * 60_000;
    expect(await ids()).toEqual(['tsk_2']);
    expect((await store.firstQueued('sim', 'normal'))?.taskId).toBe('tsk_2');
  });
});
