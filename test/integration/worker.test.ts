import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { NonRetryableError } from '../../runtime/core/errors.ts';
import { dispatch } from '../../runtime/core/lifecycle.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { DEMO_TASK_TYPES } from '../../runtime/task-types/demo.ts';
import { type AttemptDeps, runAttempt } from '../../runtime/worker/run-attempt.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

const executions = new Map<string, number>();
const counted = defineTaskType({
  type: 'test.counted',
  description: 'Counts its executions; sleeps a little so duplicates overlap.',
  payload: z.strictObject({ ms: z.number().default(50), mode: z.enum(['ok', 'throw', 'permanent', 'hang', 'huge']) }),
  async handler({ ms, mode }, ctx) {
    executions.set(ctx.taskId, (executions.get(ctx.taskId) ?? 0) + 1);
    await new Promise((resolve) => setTimeout(resolve, ms));
    if (mode === 'throw') throw new Error('transient');
    if (mode === 'permanent') throw new NonRetryableError('bad input');
    if (mode === 'hang') await new Promise(() => {});
    if (mode === 'huge') return { blob: 'x'.repeat(400_000) };
    return { attempt: ctx.attempt, key: ctx.idempotencyKey };
  },
});

let services: TestServices;
let deps: AttemptDeps;

beforeAll(async () => {
  services = await startTestServices({
    config: {
      retry: { baseDelaySeconds: 0, maxDelaySeconds: 0 },
      scheduler: { runLeaseSeconds: 5, dispatchLeaseSeconds: 30, bufferSize: 100 },
    },
    registry: new TaskTypeRegistry([...DEMO_TASK_TYPES, counted]),
  });
  deps = { store: services.store, queues: services.queues, registry: services.registry, config: services.config };
});
afterAll(async () => {
  await services.stop();
});

/** Submit and dispatch a task as the scheduler would; returns its worker message. */
async function dispatched(payload: unknown, extra: Record<string, unknown> = {}): Promise<WorkerMessage> {
  const { task } = await services.tasks.submit({ tenantId: 'w', type: 'test.counted', payload, ...extra });
  const next = await services.store.transition(task.taskId, (t) => dispatch(t, new Date(), 30));
  return { taskId: next.taskId, fence: next.fence, tenantId: next.tenantId, type: next.type };
}

describe('Function: runAttempt (against the emulators)', () => {
  it('runs the handler once when the same message is delivered three times at once', async () => {
    // Prepare
    const message = await dispatched({ mode: 'ok', ms: 100 });

    // Act
    const outcomes = await Promise.all([
      runAttempt(deps, message),
      runAttempt(deps, message),
      runAttempt(deps, message),
    ]);

    // Assess
    expect(outcomes.filter((o) => o.kind === 'finished')).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === 'skipped')).toHaveLength(2);
    expect(executions.get(message.taskId)).toBe(1);
    const task = await services.store.get(message.taskId);
    expect(task).toMatchObject({ state: 'SUCCEEDED', attempts: 1, result: { attempt: 1, key: message.taskId } });
  });

  it('requeues a transient failure with its attempt counted, and announces it again', async () => {
    const message = await dispatched({ mode: 'throw', ms: 1 });
    const outcome = await runAttempt(deps, message);
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({ state: 'QUEUED', attempts: 1 });
    const announced = await services.queues.receive<{ taskId: string }>('tier-normal', { waitSeconds: 1 });
    expect(announced.map((m) => m.body.taskId)).toContain(message.taskId);
    await services.queues.delete(
      'tier-normal',
      announced.map((m) => m.receiptHandle),
    );
  });

  it('fails at once on a NonRetryableError', async () => {
    const message = await dispatched({ mode: 'permanent', ms: 1 });
    const outcome = await runAttempt(deps, message);
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({
      state: 'FAILED',
      attempts: 1,
      error: { name: 'NonRetryableError', message: 'bad input', retryable: false },
    });
  });

  it('fails a task whose result cannot be stored, instead of retrying a write that cannot succeed', async () => {
    const message = await dispatched({ mode: 'huge', ms: 1 });
    const outcome = await runAttempt(deps, message);
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({
      state: 'FAILED',
      error: { name: 'NonRetryableError', retryable: false },
    });
    expect(outcome.kind === 'finished' && outcome.task.error?.message).toMatch(/result cannot be stored/);
  });

  it('aborts a handler past its timeout and records a retryable TimeoutError', async () => {
    const message = await dispatched({ mode: 'hang', ms: 1 }, { timeoutSeconds: 1, maxAttempts: 1 });
    const outcome = await runAttempt(deps, message);
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({
      state: 'FAILED',
      error: { name: 'TimeoutError' },
    });
  });

  it('stops a running task that is cancelled: its signal aborts and it ends CANCELLED', async () => {
    // Prepare: demo.sleep honours its signal; heartbeats (every ~1.7 s here) carry the request.
    const { task } = await services.tasks.submit({ tenantId: 'w', type: 'demo.sleep', payload: { ms: 60_000 } });
    const next = await services.store.transition(task.taskId, (t) => dispatch(t, new Date(), 30));
    const running = runAttempt(deps, { taskId: next.taskId, fence: next.fence, tenantId: 'w', type: 'demo.sleep' });

    // Act
    await new Promise((resolve) => setTimeout(resolve, 300));
    const requested = await services.tasks.cancel(task.taskId);
    const outcome = await running;

    // Assess
    expect(requested).toMatchObject({ state: 'RUNNING', cancelRequested: true });
    expect(outcome.kind === 'finished' && outcome.task.state).toBe('CANCELLED');
  });

  it('skips a message whose task was cancelled before it started', async () => {
    const message = await dispatched({ mode: 'ok', ms: 1 });
    await services.tasks.cancel(message.taskId);
    const outcome = await runAttempt(deps, message);
    expect(outcome.kind).toBe('skipped');
    expect(executions.get(message.taskId)).toBeUndefined();
  });
});
