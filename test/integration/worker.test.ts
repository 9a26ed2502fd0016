import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { WorkerMessage } from '../../runtime/adapters/queues.ts';
import { NonRetryableError } from '../../runtime/core/errors.ts';
import { createTask, dispatch } from '../../runtime/core/lifecycle.ts';
import { MAX_ERROR_MESSAGE_BYTES, MAX_ERROR_NAME_BYTES } from '../../runtime/core/storable.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { DEMO_TASK_TYPES } from '../../runtime/task-types/demo.ts';
import { ATTEMPT_END_RESERVE_MS, type AttemptDeps, runAttempt } from '../../runtime/worker/run-attempt.ts';
import { taskSpec } from '../helpers/factories.ts';
import { startTestServices, type TestServices } from '../helpers/services.ts';

const executions = new Map<string, number>();
const counted = defineTaskType({
  type: 'test.counted',
  description: 'Counts its executions; sleeps a little so duplicates overlap.',
  payload: z.strictObject({
    ms: z.number().default(50),
    mode: z.enum([
      'ok',
      'throw',
      'permanent',
      'hang',
      'huge',
      'hugeError',
      'hugeName',
      'emojiError',
      'bigint',
      'plainObject',
    ]),
  }),
  async handler({ ms, mode }, ctx) {
    executions.set(ctx.taskId, (executions.get(ctx.taskId) ?? 0) + 1);
    await new Promise((resolve) => setTimeout(resolve, ms));
    if (mode === 'throw') throw new Error('transient');
    if (mode === 'permanent') throw new NonRetryableError('bad input');
    if (mode === 'hang') await new Promise(() => {});
    if (mode === 'huge') return { blob: 'x'.repeat(400_000) };
    if (mode === 'bigint') return { count: 10n };
    if (mode === 'plainObject') throw { code: 'ECONNRESET', message: 'socket hang up' };
    // 1 MB messages and names: what the attempt records of them must still fit the 400 KB item.
    if (mode === 'hugeError') throw new NonRetryableError('m'.repeat(1_000_000));
    if (mode === 'hugeName') throw Object.assign(new Error('short'), { name: 'n'.repeat(1_000_000) });
    // 'x😀' is three UTF-16 units: a cut by units alone splits an emoji's surrogate pair.
    if (mode === 'emojiError') throw new Error('x😀'.repeat(10_000));
    return { attempt: ctx.attempt, key: ctx.idempotencyKey };
  },
});

/** Returns a result within MAX_RESULT_BYTES, whatever its payload. */
const bigResult = defineTaskType({
  type: 'test.big-result',
  description: 'Returns 150,000 bytes',
  payload: z.object({ pad: z.string() }),
  async handler() {
    return { blob: 'r'.repeat(150_000) };
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
    registry: new TaskTypeRegistry([...DEMO_TASK_TYPES, counted, bigResult]),
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

  it('fails at once on a NonRetryableError of 1 MB, its message cut to a bounded length with a marker', async () => {
    // Before: the end write was refused (Item size has exceeded the maximum allowed size), the
    // task stayed RUNNING until its lease lapsed and was run again, and the error was lost.
    const message = await dispatched({ mode: 'hugeError', ms: 1 });
    const outcome = await runAttempt(deps, message);
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({
      state: 'FAILED',
      attempts: 1,
      error: { name: 'NonRetryableError', retryable: false },
    });
    const stored = await services.store.get(message.taskId);
    const text = stored?.error?.message ?? '';
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_BYTES);
    expect(text.startsWith('mmmm')).toBe(true);
    expect(text).toMatch(/\[truncated: 1000000 bytes\]$/);
  });

  it('requeues a retryable error whose name is 1 MB, the name cut to a bounded length', async () => {
    const message = await dispatched({ mode: 'hugeName', ms: 1 });
    const outcome = await runAttempt(deps, message);
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({
      state: 'QUEUED',
      attempts: 1,
      error: { message: 'short', retryable: true },
    });
    const name = (await services.store.get(message.taskId))?.error?.name ?? '';
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(MAX_ERROR_NAME_BYTES);
    expect(name.startsWith('nnnn')).toBe(true);
  });

  it('cuts a long error message between characters, never inside a surrogate pair', async () => {
    // Before: message.slice(0, 2000) left a lone surrogate, which the API then served as "\ud83d"
    // (jq: "Invalid \uXXXX\uXXXX surrogate pair escape").
    const message = await dispatched({ mode: 'emojiError', ms: 1 }, { maxAttempts: 1 });
    const outcome = await runAttempt(deps, message);
    const text = outcome.kind === 'finished' ? (outcome.task.error?.message ?? '') : '';
    expect(text.length).toBeGreaterThan(1000);
    expect(text.isWellFormed()).toBe(true);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_BYTES);
  });

  it('fails at once, naming why, a result JSON cannot serialize (a BigInt), instead of running the handler again', async () => {
    // Before: JSON.stringify's TypeError was a retryable failure, so a handler that had done its
    // work ran maxAttempts times and the task ended "Do not know how to serialize a BigInt".
    const message = await dispatched({ mode: 'bigint', ms: 1 }, { maxAttempts: 3 });
    const outcome = await runAttempt(deps, message);
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({
      state: 'FAILED',
      attempts: 1,
      error: { name: 'NonRetryableError', retryable: false },
    });
    expect(outcome.kind === 'finished' && outcome.task.error?.message).toMatch(
      /result cannot be stored: it cannot be serialized as JSON \(.*BigInt/,
    );
  });

  it('fails, instead of stranding RUNNING, a result that fits alone but not beside the rest of the item', async () => {
    // A 300,000-byte payload (as a task type's schema transform or defaults could store) and a
    // 150,000-byte result: the end write is over 400 KB. Before: "attempt failed before settling"
    // (ValidationException: Item size has exceeded the maximum allowed size), the task RUNNING
    // until its lease lapsed, then run again to fail the same way.
    const taskId = 'tsk_00000000000000000000000000b16173';
    await services.store.create(
      createTask(
        taskId,
        taskSpec({ tenantId: 'w', type: 'test.big-result', payload: { pad: 'p'.repeat(300_000) } }),
        new Date(),
      ),
    );
    const next = await services.store.transition(taskId, (t) => dispatch(t, new Date(), 30));
    const outcome = await runAttempt(deps, { taskId, fence: next.fence, tenantId: 'w', type: 'test.big-result' });
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({
      state: 'FAILED',
      attempts: 1,
      error: { name: 'NonRetryableError', retryable: false },
    });
    expect(outcome.kind === 'finished' && outcome.task.error?.message).toMatch(/result cannot be stored/);
    expect((await services.store.get(taskId))?.result).toBeUndefined();
  });

  it('records what a thrown plain object says, not "[object Object]"', async () => {
    // Some libraries reject with plain objects; before, the task's error read "[object Object]".
    const message = await dispatched({ mode: 'plainObject', ms: 1 }, { maxAttempts: 1 });
    const outcome = await runAttempt(deps, message);
    expect(outcome.kind === 'finished' && outcome.task.error).toEqual({
      name: 'Error',
      message: '{"code":"ECONNRESET","message":"socket hang up"}',
      retryable: true,
    });
  });

  it('aborts a handler past its timeout and records a retryable TimeoutError', async () => {
    const message = await dispatched({ mode: 'hang', ms: 1 }, { timeoutSeconds: 1, maxAttempts: 1 });
    const outcome = await runAttempt(deps, message);
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({
      state: 'FAILED',
      error: { name: 'TimeoutError' },
    });
  });

  it('times an attempt out before the Lambda invocation running it ends, so its end is recorded', async () => {
    // Prepare: a task allowed 900 s (Lambda's most) in an invocation with no more time than the
    // attempt keeps back to record its end. Lambda stops an invocation at its timeout, with no
    // write of the end: the task sat RUNNING until its lease lapsed, and its message came back.
    const message = await dispatched({ mode: 'hang', ms: 1 }, { timeoutSeconds: 900, maxAttempts: 1 });
    const invocation = { ...deps, remainingMs: () => ATTEMPT_END_RESERVE_MS };

    // Act
    const outcome = await runAttempt(invocation, message);

    // Assess
    expect(outcome.kind === 'finished' && outcome.task).toMatchObject({
      state: 'FAILED',
      error: { name: 'TimeoutError', message: expect.stringMatching(/Lambda invocation/) },
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
