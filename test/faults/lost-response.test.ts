/**
 * Issue 10, item 1: a conditional write that lands while its response is lost. The SDK retries
 * the same request, the condition now fails against our own write, and the caller must still
 * recognise the transition as done. The faults sit in the SDK client's HTTP handler, below its
 * retries (sim/faults/lost-response.ts), against the dynalite and fauxqs emulators.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients, localEndpoints } from '../../runtime/adapters/aws-clients.ts';
import type { TierMessage, WorkerMessage } from '../../runtime/adapters/queues.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { dispatch } from '../../runtime/core/lifecycle.ts';
import type { Task } from '../../runtime/core/task.ts';
import { TASKS_TABLE, tierQueue, workerQueue } from '../../runtime/infra/resources.ts';
import { NO_INTAKE, Reconciler } from '../../runtime/scheduler/reconciler.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { runAttempt } from '../../runtime/worker/run-attempt.ts';
import { attributeString, installLostResponses, loseFirstPut } from '../../sim/faults/lost-response.ts';
import { dispatchAsScheduler, failedTask, submitTask } from '../helpers/factories.ts';
import { FakeClock } from '../helpers/faults.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

const CONFIG = {
  retry: { baseDelaySeconds: 0, maxDelaySeconds: 0 },
  scheduler: { dispatchLeaseSeconds: 5, runLeaseSeconds: 5 },
};

let services: TestServices;
const clock = new FakeClock();

beforeAll(async () => {
  services = await startTestServices({ config: CONFIG, now: clock.now });
});
afterAll(async () => {
  await services?.stop();
});

/** Services on their own clients whose first PutItem of an item matching `match` loses its response. */
function lossy(match: (item: Record<string, unknown>) => boolean): Services & { lost: () => number } {
  const { emulators } = services;
  const clients = createAwsClients(localEndpoints(emulators.dynamodbUrl, emulators.sqsUrl));
  const decide = loseFirstPut(emulators.tables[TASKS_TABLE.id]!, match);
  installLostResponses(clients.dynamodb, decide);
  const built = buildServices({
    config: parseConfig(CONFIG, 'lost-response test'),
    clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
    now: clock.now,
  });
  return { ...built, lost: decide.fired };
}

const inState = (state: string, taskId?: string) => (item: Record<string, unknown>) =>
  attributeString(item, 'state') === state && (taskId === undefined || attributeString(item, 'taskId') === taskId);

/** Every message on a queue (received and left hidden), by task. */
async function messagesOn<T extends { taskId: string }>(queueId: string): Promise<T[]> {
  const bodies: T[] = [];
  for (;;) {
    const batch = await services.queues.receive<T>(queueId, { visibilitySeconds: 600 });
    if (batch.length === 0) return bodies;
    bodies.push(...batch.map((m) => m.body));
  }
}

async function dispatched(task: Task): Promise<Task> {
  return dispatchAsScheduler(services.store, task.taskId, clock.now(), 5);
}

describe('a write applied whose response was lost is recognised as our own (issue 10, item 1)', () => {
  it('start: the worker runs the attempt instead of skipping it', async () => {
    const task = await dispatched(await submitTask(services, { maxAttempts: 1 }));
    const worker = lossy(inState('RUNNING', task.taskId));
    const message: WorkerMessage = { taskId: task.taskId, fence: task.fence, tenantId: task.tenantId, type: task.type };
    const outcome = await runAttempt({ ...worker, store: worker.store, queues: worker.queues }, message);
    expect(worker.lost()).toBe(1);
    expect(outcome.kind).toBe('finished');
    const stored = (await services.store.get(task.taskId))!;
    expect(stored.state).toBe('SUCCEEDED');
    expect(stored.attempts).toBe(1);
  });

  it('dispatch: the scheduler sends the worker message and counts the slot', async () => {
    const task = await submitTask(services, { tenantId: 'dispatch-tenant' });
    const schedulerServices = lossy(inState('DISPATCHED', task.taskId));
    const scheduler = new Scheduler({ ...schedulerServices, now: clock.now });
    await scheduler.resume();
    for (let i = 0; i < 5 && schedulerServices.lost() === 0; i++) await scheduler.tick();
    expect(schedulerServices.lost()).toBe(1);
    expect((await services.store.get(task.taskId))!.state).toBe('DISPATCHED');
    const sent = await messagesOn<WorkerMessage>(workerQueue('lambda').id);
    expect(sent.map((m) => m.taskId)).toContain(task.taskId);
    expect(scheduler.activeCount).toBe(1);
  });

  it('fail → QUEUED: the retry is announced on its tier queue', async () => {
    const submitted = await services.tasks.submit({
      tenantId: 'fail-tenant',
      type: 'demo.fail',
      payload: { failTimes: 1 },
    });
    await messagesOn<TierMessage>(tierQueue('normal').id); // the submit's own announcement
    const task = await dispatched(submitted.task);
    const worker = lossy(inState('QUEUED', task.taskId));
    const message: WorkerMessage = { taskId: task.taskId, fence: task.fence, tenantId: task.tenantId, type: task.type };
    const outcome = await runAttempt({ ...worker }, message);
    expect(worker.lost()).toBe(1);
    expect(outcome.kind).toBe('finished');
    expect((await services.store.get(task.taskId))!.state).toBe('QUEUED');
    const announced = await messagesOn<TierMessage>(tierQueue('normal').id);
    expect(announced.map((m) => m.taskId)).toContain(task.taskId);
  });

  it("reconciler's expireLease: the task put back is announced on its tier queue", async () => {
    const task = await dispatched(await submitTask(services, { tenantId: 'expire-tenant' }));
    await messagesOn<TierMessage>(tierQueue('normal').id);
    clock.advance(10_000); // the dispatch lease (5 s) ran out: no worker started it
    const reconcilerServices = lossy(inState('QUEUED', task.taskId));
    const reconciler = new Reconciler({ ...reconcilerServices, now: clock.now });
    const result = await reconciler.run(NO_INTAKE, new Map());
    expect(reconcilerServices.lost()).toBe(1);
    expect(result.expired).toBeGreaterThanOrEqual(1);
    expect((await services.store.get(task.taskId))!.state).toBe('QUEUED');
    const announced = await messagesOn<TierMessage>(tierQueue('normal').id);
    expect(announced.map((m) => m.taskId)).toContain(task.taskId);
  });

  it('operator retry: answers with the QUEUED task and announces it', async () => {
    const failed = await failedTask(services, { tenantId: 'retry-tenant' });
    await messagesOn<TierMessage>(tierQueue('normal').id);
    const api = lossy(inState('QUEUED', failed.taskId));
    const retried = await api.tasks.retry(failed.taskId);
    expect(api.lost()).toBe(1);
    expect(retried.state).toBe('QUEUED');
    const announced = await messagesOn<TierMessage>(tierQueue('normal').id);
    expect(announced.map((m) => m.taskId)).toContain(failed.taskId);
  });

  it('cancel: answers with the CANCELLED task', async () => {
    const task = await submitTask(services, { tenantId: 'cancel-tenant' });
    const api = lossy(inState('CANCELLED', task.taskId));
    const cancelled = await api.tasks.cancel(task.taskId);
    expect(api.lost()).toBe(1);
    expect(cancelled.state).toBe('CANCELLED');
  });

  it('submit: a create whose response was lost answers 201 (created), not as a repeat', async () => {
    const api = lossy(inState('QUEUED'));
    const { created, task } = await api.tasks.submit({
      tenantId: 'submit-tenant',
      type: 'demo.echo',
      payload: {},
      idempotencyKey: 'lost-create',
    });
    expect(api.lost()).toBe(1);
    expect(created).toBe(true);
    expect(task.state).toBe('QUEUED');
  });
});
