/**
 * Cancelling a RUNNING task (issue 15): the request reaches the handler's AbortSignal through
 * the worker's cancel watch, not at the next heartbeat (20 s with the default 60 s lease), and
 * a cancel requested before the handler's result is recorded wins over the result.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dispatch } from '../../runtime/core/lifecycle.ts';
import type { Task } from '../../runtime/core/task.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { DEMO_TASK_TYPES } from '../../runtime/task-types/demo.ts';
import { type AttemptDeps, runAttempt } from '../../runtime/worker/run-attempt.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

/** Handlers under the test's control: each run announces itself and waits to be released. */
const runs = new Map<string, { started: () => void; release: Promise<void> }>();
const controlled = defineTaskType({
  type: 'test.controlled',
  description: 'Waits for the test to release it, ignoring its signal (a handler that finishes regardless).',
  payload: z.strictObject({}),
  async handler(_payload, ctx) {
    const run = runs.get(ctx.taskId)!;
    run.started();
    await run.release;
    return { finished: true };
  },
});
const observed = new Map<string, { abortedAt: number }>();
const watchful = defineTaskType({
  type: 'test.watchful',
  description: 'Runs until its signal aborts, recording when.',
  payload: z.strictObject({}),
  async handler(_payload, ctx) {
    const run = runs.get(ctx.taskId)!;
    run.started();
    await new Promise<void>((_resolve, reject) =>
      ctx.signal.addEventListener('abort', () => {
        observed.set(ctx.taskId, { abortedAt: Date.now() });
        reject(ctx.signal.reason);
      }),
    );
  },
});

let services: TestServices;
let deps: AttemptDeps;

beforeAll(async () => {
  services = await startTestServices({
    // The default lease: heartbeats every 20 s, far slower than a cancel must travel.
    config: { scheduler: { runLeaseSeconds: 60 } },
    registry: new TaskTypeRegistry([...DEMO_TASK_TYPES, controlled, watchful]),
  });
  deps = { store: services.store, queues: services.queues, registry: services.registry, config: services.config };
});
afterAll(async () => {
  await services.stop();
});

/** Submit and dispatch a task; run its attempt; resolve once the handler has started. */
async function startAttempt(type: string) {
  const { task } = await services.tasks.submit({ tenantId: 'c', type, payload: {} });
  let started!: () => void;
  const handlerStarted = new Promise<void>((resolve) => {
    started = resolve;
  });
  let release!: () => void;
  runs.set(task.taskId, { started, release: new Promise<void>((resolve) => (release = resolve)) });
  const next = await services.store.transition(task.taskId, (t) => dispatch(t, new Date(), 30));
  const outcome = runAttempt(deps, { taskId: next.taskId, fence: next.fence, tenantId: 'c', type });
  await handlerStarted;
  const running = (await services.store.get(task.taskId)) as Task;
  return { taskId: task.taskId, running, outcome, release };
}

describe('Cancelling a running task', () => {
  it('reaches the handler signal without waiting for a heartbeat, and ends CANCELLED', async () => {
    // Prepare
    const { taskId, running, outcome } = await startAttempt('test.watchful');

    // Act
    const requested = await services.tasks.cancel(taskId);
    const settled = await outcome;

    // Assess: the only writes after start are the request and the settle, so no heartbeat
    // carried the cancel (the first one is due 20 s after start).
    expect(requested).toMatchObject({ state: 'RUNNING', cancelRequested: true });
    expect(observed.has(taskId)).toBe(true);
    expect(settled.kind === 'finished' && settled.task).toMatchObject({
      state: 'CANCELLED',
      version: running.version + 2,
    });
  });

  it('wins over a result the handler returns after the cancel was requested', async () => {
    // Prepare
    const { taskId, outcome, release } = await startAttempt('test.controlled');

    // Act: the cancel is stored, then the handler finishes before anything could abort it.
    await services.tasks.cancel(taskId);
    release();
    const settled = await outcome;

    // Assess
    expect(settled.kind === 'finished' && settled.task.state).toBe('CANCELLED');
    expect(await services.store.get(taskId)).toMatchObject({ state: 'CANCELLED' });
  });
});
