/**
 * Task dependencies live on the local runtime over HTTP (issue 25's "done when"): a dependent
 * starts only after its dependency finished; a dependent of a failed task (and its own dependent)
 * is cancelled with DEPENDENCY_FAILED; a dependency on an unknown task is refused with a 4xx; and
 * dependents submitted while their dependency ends all run. Assertions are on what DynamoDB
 * recorded (states, start and finish times), never on how fast the machine ran.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LocalServer } from '../../local/server.ts';
import { NonRetryableError } from '../../runtime/core/errors.ts';
import { defineTaskType } from '../../runtime/task-types/define.ts';
import { apiOf, startTestServer } from '../helpers/live-server.ts';

/** Gated tasks running now, by tag: calling one ends that task. */
const gates = new Map<string, () => void>();
const payload = z.strictObject({ tag: z.string(), gated: z.boolean().optional(), fails: z.boolean().optional() });
const step = defineTaskType({
  type: 'test.step',
  description: 'Waits for its gate when gated; fails for good when asked.',
  payload,
  async handler({ tag, gated, fails }, ctx) {
    if (gated) {
      await new Promise<void>((resolve) => {
        gates.set(tag, () => {
          gates.delete(tag);
          resolve();
        });
        ctx.signal.addEventListener('abort', () => resolve());
      });
    }
    if (fails) throw new NonRetryableError(`planned failure of ${tag}`);
    return { tag };
  },
});

let server: LocalServer;
beforeAll(async () => {
  server = await startTestServer([step], 20);
});
afterAll(async () => {
  for (const release of gates.values()) release();
  await server?.stop();
});

const api = apiOf(() => server.url);

interface TaskView {
  taskId: string;
  state: string;
  startedAt: string | null;
  finishedAt: string | null;
  waitingOn?: string[];
  error: { code?: string; message: string } | null;
  wait?: { reason: string; message: string };
}

const submit = async (tenantId: string, tag: string, extra: Record<string, unknown> = {}) => {
  const { status, body } = await api<TaskView>('POST', '/v1/tasks', {
    tenantId,
    type: 'test.step',
    payload: { tag, ...(extra.payload as object) },
    ...(extra.dependsOn ? { dependsOn: extra.dependsOn } : {}),
  });
  expect(status).toBe(202);
  return body;
};
const get = async (taskId: string) => (await api<TaskView>('GET', `/v1/tasks/${taskId}`)).body;

/** Poll until the task is in one of `states` (a liveness guard, not a timing assertion). */
async function until(taskId: string, states: string[], deadlineMs = 120_000): Promise<TaskView> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const task = await get(taskId);
    if (states.includes(task.state)) return task;
    if (Date.now() > deadline) throw new Error(`task ${taskId} still ${task.state}, wanted ${states.join('|')}`);
    await sleep(100);
  }
}
async function gateOpened(tag: string): Promise<() => void> {
  const deadline = Date.now() + 120_000;
  while (!gates.has(tag)) {
    if (Date.now() > deadline) throw new Error(`${tag} never started`);
    await sleep(50);
  }
  return gates.get(tag)!;
}

describe('Dependencies over HTTP', () => {
  it('starts a dependent only after its dependency finished, explaining the hold meanwhile', async () => {
    // Prepare
    const first = await submit('deps-a', 'first', { payload: { gated: true } });
    const release = await gateOpened('first');

    // Act
    const second = await submit('deps-a', 'second', { dependsOn: [first.taskId] });
    const held = await get(second.taskId);
    release();
    const done = await until(second.taskId, ['SUCCEEDED', 'FAILED', 'CANCELLED']);

    // Assess
    expect(held.state).toBe('QUEUED');
    expect(held.waitingOn).toEqual([first.taskId]);
    expect(held.wait?.reason).toBe('dependencies');
    expect(held.wait?.message).toContain(first.taskId);
    expect(done.state).toBe('SUCCEEDED');
    const dependency = await get(first.taskId);
    expect(Date.parse(done.startedAt!)).toBeGreaterThanOrEqual(Date.parse(dependency.finishedAt!));
  });

  it('cancels the dependents of a failed task with DEPENDENCY_FAILED, transitively', async () => {
    // Prepare
    const root = await submit('deps-b', 'root', { payload: { gated: true, fails: true } });
    const release = await gateOpened('root');
    const child = await submit('deps-b', 'child', { dependsOn: [root.taskId] });
    const grandchild = await submit('deps-b', 'grandchild', { dependsOn: [child.taskId] });

    // Act
    release();

    // Assess
    expect((await until(root.taskId, ['FAILED'])).state).toBe('FAILED');
    for (const id of [child.taskId, grandchild.taskId]) {
      const task = await until(id, ['SUCCEEDED', 'FAILED', 'CANCELLED']);
      expect(task.state).toBe('CANCELLED');
      expect(task.error?.code).toBe('DEPENDENCY_FAILED');
      expect(task.startedAt).toBeNull();
    }
  });

  it('refuses a dependency on an unknown task with 400, naming it', async () => {
    const { status, body } = await api<{ error: { code: string; details: { missing: string[] } } }>(
      'POST',
      '/v1/tasks',
      { tenantId: 'deps-c', type: 'test.step', payload: { tag: 'x' }, dependsOn: ['tsk_unknown'] },
    );
    expect(status).toBe(400);
    expect(body.error.code).toBe('unknown_dependency');
    expect(body.error.details.missing).toEqual(['tsk_unknown']);
  });

  it('runs every dependent submitted while its dependency ends, each after it', async () => {
    // Prepare
    const dependency = await submit('deps-d', 'quick');

    // Act: dependents written before, during and after its end.
    const dependents = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        await sleep(i * 15);
        return submit('deps-d', `after-${i}`, { dependsOn: [dependency.taskId] });
      }),
    );

    // Assess
    const ended = await until(dependency.taskId, ['SUCCEEDED']);
    for (const dependent of dependents) {
      const done = await until(dependent.taskId, ['SUCCEEDED', 'FAILED', 'CANCELLED']);
      expect(done.state).toBe('SUCCEEDED');
      expect(Date.parse(done.startedAt!)).toBeGreaterThanOrEqual(Date.parse(ended.finishedAt!));
    }
  });
});
