/**
 * Issue 10, item 6: the scheduler lease as a fence. Dispatch writes carry the lease's token (an
 * epoch) and are refused on a task a newer holder already wrote; a holder stops dispatching once
 * its lease has less than a safety margin left by its own clock; a renewal that finds the lease
 * had lapsed starts over with a fresh Scheduler. Real Scheduler and loop on dynalite + fauxqs.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { expireLease } from '../../runtime/core/lifecycle.ts';
import { workerQueue } from '../../runtime/infra/resources.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { runSchedulerLoop, SCHEDULER_LEASE } from '../../runtime/scheduler/scheduler-loop.ts';
import { submitTask } from '../helpers/factories.ts';
import { FakeClock } from '../helpers/faults.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

let services: TestServices;
const clock = new FakeClock();
beforeEach(async () => {
  services = await startTestServices({ now: clock.now });
});
afterEach(async () => {
  await services.stop();
});

const newScheduler = () => new Scheduler({ ...services, now: clock.now });

async function workerMessages(): Promise<WorkerMessage[]> {
  const bodies: WorkerMessage[] = [];
  for (;;) {
    const batch = await services.queues.receive<WorkerMessage>(workerQueue('lambda').id, { visibilitySeconds: 600 });
    if (batch.length === 0) return bodies;
    bodies.push(...batch.map((m) => m.body));
  }
}

describe('the scheduler lease is a fence (issue 10, item 6)', () => {
  it('a deposed scheduler cannot dispatch a task its successor has written', async () => {
    const farMs = clock.now().getTime() + 3_600_000;
    const deposed = newScheduler();
    deposed.holdLease({ token: 1, expiresAtMs: farMs });
    await deposed.resume();
    const successor = newScheduler();
    successor.holdLease({ token: 2, expiresAtMs: farMs });
    await successor.resume();

    const task = await submitTask(services);
    for (let i = 0; i < 3 && successor.activeCount === 0; i++) await successor.tick();
    const dispatched = (await services.store.get(task.taskId))!;
    expect(dispatched.state).toBe('DISPATCHED');
    await workerMessages();
    // Its worker never started it: the dispatch lease runs out and it is queued again.
    const requeued = await services.store.transition(task.taskId, (t) =>
      expireLease(t, new Date(clock.now().getTime() + 600_000), 0),
    );
    expect(requeued.state).toBe('QUEUED');
    await services.queues.announce([requeued], clock.now());

    // The deposed scheduler (paused while it lost the lease) wakes up and receives it.
    const errors: unknown[] = [];
    for (let i = 0; i < 3; i++) await deposed.tick().catch((error: unknown) => errors.push(error));

    expect((await services.store.get(task.taskId))!.state).toBe('QUEUED');
    expect(await workerMessages()).toEqual([]);
    expect(errors.map((e) => (e as Error).name)).toContain('SchedulerFencedError');
  });

  it('a holder whose lease has less than the safety margin left dispatches nothing', async () => {
    const scheduler = newScheduler();
    scheduler.holdLease({ token: 1, expiresAtMs: clock.now().getTime() + 1_000 });
    await scheduler.resume();
    const task = await submitTask(services);
    for (let i = 0; i < 3; i++) await scheduler.tick();
    expect((await services.store.get(task.taskId))!.state).toBe('QUEUED');
    expect(scheduler.heldCount).toBe(1);

    // Renewed: it dispatches what it holds.
    scheduler.holdLease({ token: 1, expiresAtMs: clock.now().getTime() + 30_000 });
    await scheduler.tick();
    expect((await services.store.get(task.taskId))!.state).toBe('DISPATCHED');
  });

  it('a renewal that re-takes a lapsed lease starts over with a fresh Scheduler', async () => {
    const stop = new AbortController();
    const ttlMs = 3_000;
    let created = 0;
    let ticks = 0;
    /** Its first tick outlasts its lease, during which another scheduler holds and hands back the lease. */
    class PausingScheduler extends Scheduler {
      override async tick(options?: Parameters<Scheduler['tick']>[0]) {
        const result = await super.tick(options);
        if (++ticks === 1) {
          clock.advance(ttlMs + 1);
          const lease = await services.control.acquireLease(
            SCHEDULER_LEASE,
            'interloper',
            clock.now().getTime(),
            ttlMs,
          );
          await services.control.releaseLease(lease!, clock.now().getTime());
        }
        if (created >= 2 || ticks >= 6) stop.abort();
        return result;
      }
    }
    await runSchedulerLoop({
      control: services.control,
      signal: stop.signal,
      ownerId: 'paused-holder',
      leaseTtlMs: ttlMs,
      waitSeconds: 0,
      indexSettleMs: 0,
      now: clock.now,
      createScheduler: () => {
        created++;
        return new PausingScheduler({ ...services, now: clock.now });
      },
    });
    expect(created).toBe(2);
  });
});
