/**
 * A start after an unclean stop takes back the dead process's attempts at once
 * (local/recovery.ts), with fenced writes: what moved on meanwhile is left alone.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { recoverAbandonedAttempts } from '../../local/recovery.ts';
import type { TierMessage } from '../../runtime/adapters/queues.ts';
import { dispatch, start } from '../../runtime/core/lifecycle.ts';
import { tierQueue } from '../../runtime/infra/resources.ts';
import { dispatchAsScheduler } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
beforeEach(async () => {
  services = await startTestServices({ config: { retry: { baseDelaySeconds: 0, maxDelaySeconds: 0 } } });
});
afterEach(async () => {
  await services.stop();
});

async function submitted(payload: Record<string, unknown> = {}) {
  return (await services.tasks.submit({ tenantId: 'acme', type: 'demo.echo', payload, maxAttempts: 2 })).task;
}

async function drainTier(): Promise<string[]> {
  const got = await services.queues.receive<TierMessage>(tierQueue('normal').id, { max: 10, waitSeconds: 0 });
  await services.queues.delete(
    tierQueue('normal').id,
    got.map((m) => m.receiptHandle),
  );
  return got.map((m) => m.body.taskId);
}

describe('Function: recoverAbandonedAttempts', () => {
  it('puts a dispatched task back and retries a running one, leases still holding, and announces them', async () => {
    // Prepare: one DISPATCHED, one RUNNING (its first attempt), one QUEUED; leases run for minutes.
    const [a, b, c] = [await submitted({ n: 1 }), await submitted({ n: 2 }), await submitted({ n: 3 })];
    const now = new Date(Date.now() + 1_000);
    await drainTier();
    const dispatched = await dispatchAsScheduler(services.store, a, now, 600);
    const startedFrom = await dispatchAsScheduler(services.store, b, now, 600);
    const running = await services.store.apply(start(startedFrom, startedFrom.fence, now, 600));

    // Act
    const { recovered } = await recoverAbandonedAttempts({
      store: services.store,
      queues: services.queues,
      config: services.config,
      now: () => now,
    });

    // Assess
    const after = await services.store.getMany([a.taskId, b.taskId, c.taskId]);
    expect(recovered.map((t) => t.taskId).sort()).toEqual([a.taskId, b.taskId].sort());
    expect(after.get(a.taskId)).toMatchObject({ state: 'QUEUED', attempts: 0, fence: dispatched.fence });
    expect(after.get(b.taskId)).toMatchObject({
      state: 'QUEUED',
      attempts: 1,
      fence: running.fence,
      error: { name: 'WorkerGone', retryable: true },
    });
    expect(after.get(c.taskId)).toMatchObject({ state: 'QUEUED', version: c.version });
    expect((await drainTier()).sort()).toEqual([a.taskId, b.taskId].sort());
  });

  it('leaves alone an attempt that moved on between its read and its write (fenced)', async () => {
    // Prepare: the item is read as DISPATCHED (fence 1), then re-dispatched elsewhere (fence 2).
    const task = await submitted();
    const now = new Date(Date.now() + 1_000);
    const first = await dispatchAsScheduler(services.store, task, now, 600);
    const store = new Proxy(services.store, {
      get(target, property) {
        if (property !== 'getMany') {
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        }
        return async (ids: string[]) => {
          const read = await target.getMany(ids);
          // Between the read and the write, the attempt's lease lapses and another dispatch happens.
          const { expireLease } = await import('../../runtime/core/lifecycle.ts');
          const requeued = await target.apply(expireLease(first, new Date(now.getTime() + 601_000), 0));
          await target.apply(dispatch(requeued, new Date(now.getTime() + 601_000), 600));
          return read;
        };
      },
    });

    // Act
    const { recovered } = await recoverAbandonedAttempts({
      store,
      queues: services.queues,
      config: services.config,
      now: () => now,
    });

    // Assess
    expect(recovered).toEqual([]);
    expect(await services.store.get(task.taskId)).toMatchObject({ state: 'DISPATCHED', fence: first.fence + 1 });
  });
});
