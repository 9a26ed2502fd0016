/**
 * One targeted test per bug class peers have shipped (REFERENCE.md), each driving the real
 * Scheduler, Reconciler and runAttempt on the emulators with injected faults.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import type { Task } from '../../runtime/core/task.ts';
import { workerQueue } from '../../runtime/infra/resources.ts';
import { type AttemptDeps, runAttempt } from '../../runtime/worker/run-attempt.ts';
import { Crash, type FaultyComponent } from '../helpers/faults.ts';
import { Harness } from './harness.ts';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

async function started(): Promise<Harness> {
  harness = await Harness.start();
  return harness;
}

const WORKER_QUEUE = workerQueue('lambda').id;

function attemptDeps(h: Harness, component: FaultyComponent, faults?: AttemptDeps['faults']): AttemptDeps {
  return {
    store: component.store,
    queues: component.queues,
    registry: h.registry,
    config: h.config,
    now: h.clock.now,
    ...(faults ? { faults } : {}),
  };
}

/** Tick until a worker message for `taskId` shows up; returns it (received, left in flight). */
async function nextWorkerMessage(h: Harness, taskId: string): Promise<WorkerMessage> {
  for (let i = 0; i < 50; i++) {
    await h.tick();
    const messages = await h.admin.queues.receive<WorkerMessage>(WORKER_QUEUE, { visibilitySeconds: 30 });
    const mine = messages.find((m) => m.body.taskId === taskId);
    if (mine) return mine.body;
  }
  throw new Error(`no worker message for ${taskId}`);
}

async function waitFor(h: Harness, taskId: string, check: (task: Task) => boolean): Promise<Task> {
  for (let i = 0; i < 200; i++) {
    const task = await h.admin.store.get(taskId);
    if (task && check(task)) return task;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`task ${taskId} never reached the expected state`);
}

const record = (ms = 0, failTimes = 0) => ({
  tenantId: 'tenant-a',
  type: 'test.record',
  payload: { failTimes, permanent: false, ms },
  idempotencyKey: `k-${Math.random()}`,
});

describe('bug classes peers have shipped', () => {
  it('a lease that expires mid-run: the zombie cannot overwrite the new attempt (bull#1416, bullmq#439)', async () => {
    const h = await started();
    const task = await h.submit(record(50));
    const first = await nextWorkerMessage(h, task.taskId);

    // The zombie runs its handler to the end, then stalls before settling (GC pause, partition).
    let resumeZombie!: () => void;
    const stalled = new Promise<void>((resolve) => {
      resumeZombie = resolve;
    });
    const zombieComponent = h.component('zombie', false);
    const zombie = runAttempt(
      attemptDeps(h, zombieComponent, async (step) => {
        if (step === 'handled') await stalled;
      }),
      first,
    );
    await waitFor(h, task.taskId, (t) => t.state === 'RUNNING');

    h.jumpClock(); // its lease runs out; the reconciler puts the task back, keeping tier and age
    const second = await nextWorkerMessage(h, task.taskId);
    expect(second.fence).toBe(first.fence + 1);
    const outcome = await runAttempt(attemptDeps(h, h.component('worker', false)), second);
    expect(outcome.kind).toBe('finished');

    resumeZombie();
    const late = await zombie;
    expect(late.kind).toBe('skipped');
    const final = (await h.admin.store.get(task.taskId))!;
    expect(final.state).toBe('SUCCEEDED');
    expect(final.result).toEqual({ fence: second.fence, attempt: 2 });
    expect(h.log.entries(task.taskId, 'SUCCEEDED')).toBe(1);
    // At-least-once execution: both handlers ran to the end; only the current one was recorded.
    expect(h.recorder.completions.get(task.taskId)).toHaveLength(2);
    expect(h.log.audit(() => 2)).toEqual([]);
  });

  it('a worker that crashes after starting does not leave the task RUNNING forever (bullmq#652)', async () => {
    const h = await started();
    const task = await h.submit(record());
    const first = await nextWorkerMessage(h, task.taskId);
    const crashed = h.component('worker');
    await expect(
      runAttempt(
        attemptDeps(h, crashed, (step) => {
          if (step === 'started') throw new Crash('worker died after start');
        }),
        first,
      ),
    ).rejects.toBeInstanceOf(Crash);
    expect((await h.admin.store.get(task.taskId))!.state).toBe('RUNNING');

    // A redelivery of the same message runs nothing (the attempt is no longer DISPATCHED).
    const duplicate = await runAttempt(attemptDeps(h, h.component('worker', false)), first);
    expect(duplicate.kind).toBe('skipped');

    h.jumpClock(6_000); // just past the 5 s run lease, well within the scheduler's memory of it
    // Recovered through the scheduler — the same (restarted) scheduler that dispatched it, which
    // used to hold the re-announced task forever while it still counted the dead attempt.
    const second = await nextWorkerMessage(h, task.taskId);
    const outcome = await runAttempt(attemptDeps(h, h.component('worker', false)), second);
    expect(outcome.kind === 'finished' && outcome.task.state).toBe('SUCCEEDED');
    const final = (await h.admin.store.get(task.taskId))!;
    expect(final.attempts).toBe(2);
    expect(final.result).toEqual({ fence: second.fence, attempt: 2 });
  });

  it('throttled and crashed deliveries do not burn attempts (azul#3708)', async () => {
    const h = await started();
    const task = await h.submit({ ...record(), maxAttempts: 1 });
    const message = await nextWorkerMessage(h, task.taskId);
    // Every worker's start write is throttled (SDK retries spent), five deliveries in a row.
    const throttled = h.component('worker');
    throttled.dynamo.decide = (call) => (call.command === 'PutItemCommand' ? 'throttle' : undefined);
    for (let delivery = 0; delivery < 5; delivery++) {
      await expect(runAttempt(attemptDeps(h, throttled), message)).rejects.toThrow(/throughput/);
    }
    expect((await h.admin.store.get(task.taskId))!).toMatchObject({ state: 'DISPATCHED', attempts: 0 });

    // The dispatch lease runs out: back to QUEUED with no attempt counted, then it runs once.
    h.jumpClock();
    const again = await nextWorkerMessage(h, task.taskId);
    expect(again.fence).toBe(message.fence + 1);
    const outcome = await runAttempt(attemptDeps(h, h.component('worker', false)), again);
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({ state: 'SUCCEEDED', attempts: 1 });
  });

  it('a retried task keeps its tier and its age (bull#1755, bullmq#2507)', async () => {
    const h = await started();
    const task = await h.submit({ ...record(0, 1), priority: 'critical', maxAttempts: 3 });
    const first = await nextWorkerMessage(h, task.taskId);
    const failed = await runAttempt(attemptDeps(h, h.component('worker', false)), first);
    expect(failed.kind === 'finished' && failed.task.state).toBe('QUEUED');
    const requeued = (await h.admin.store.get(task.taskId))!;
    expect(requeued).toMatchObject({ priority: 'critical', agingFrom: task.agingFrom, attempts: 1 });

    // Announced again (on its own tier) and dispatched.
    const second = await nextWorkerMessage(h, task.taskId);
    const outcome = await runAttempt(attemptDeps(h, h.component('worker', false)), second);
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({ state: 'SUCCEEDED', priority: 'critical' });
    expect(h.log.audit(() => 2)).toEqual([]);
  });

  it('a crash between the submit write and the tier send: the registry backstop announces the task', async () => {
    const h = await started();
    // The API process dies right before sending the tier message.
    const api = h.component('api');
    api.sqs.decide = (call) => (call.command === 'SendMessageBatchCommand' ? 'crash' : undefined);
    const input = record();
    await expect(api.tasks.submit(input)).rejects.toBeInstanceOf(Crash);
    await api.dispose();
    const [orphan] = (await h.admin.store.list({ tenantId: 'tenant-a', limit: 10 })).items;
    expect(orphan).toMatchObject({ state: 'QUEUED' });

    // Nothing announces it until the registry backstop: it must be overdue (ORPHAN_AFTER_MS).
    await h.tick();
    expect((await h.admin.store.get(orphan!.taskId))!.state).toBe('QUEUED');
    h.jumpClock();
    const message = await nextWorkerMessage(h, orphan!.taskId);
    const outcome = await runAttempt(attemptDeps(h, h.component('worker', false)), message);
    expect(outcome.kind === 'finished' && outcome.task.state).toBe('SUCCEEDED');
  });
});
