/**
 * Chaos end to end (in-process worker chaos: chaos-workers.test.ts).
 * The real local runtime (`bin/local.ts`) as a child process, SIGKILLed mid-run and started
 * again on the same DATA_DIR: every task submitted over HTTP reaches SUCCEEDED exactly once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../local/free-port.ts';

interface ApiTask {
  taskId: string;
  state: string;
  attempts: number;
  finishedAt?: string;
  result?: unknown;
}

describe('chaos: kill -9 of the whole local runtime', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'scheduler-chaos-'));
  const children = new Set<ChildProcess>();
  const output: string[] = [];
  let indexesRebuilt = 0;
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  const configPath = join(dataDir, 'config.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      pools: { lambda: { concurrency: 8 }, fargate: { vcpu: 2, memoryMiB: 4096 } },
      tenantDefaults: { weight: 1, maxConcurrency: 8 },
      retry: { baseDelaySeconds: 0, maxDelaySeconds: 1 },
      scheduler: { dispatchLeaseSeconds: 5, runLeaseSeconds: 5, bufferSize: 100 },
    }),
  );

  async function startRuntime(port: number): Promise<ChildProcess> {
    const child = spawn(
      process.execPath,
      [
        '--experimental-strip-types',
        '--experimental-sqlite',
        '--no-warnings=ExperimentalWarning',
        'bin/local.ts',
        '--config',
        configPath,
      ],
      {
        cwd: process.cwd(),
        env: { ...process.env, PORT: String(port), DATA_DIR: join(dataDir, 'state') },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.add(child);
    child.once('exit', () => children.delete(child));
    const keep = (chunk: Buffer) => {
      if (chunk.includes('rebuilt the DynamoDB indexes')) indexesRebuilt++;
      output.push(chunk.toString());
      if (output.length > 400) output.shift();
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    for (let i = 0; i < 300; i++) {
      if (child.exitCode !== null) throw new Error(`runtime exited (${child.exitCode}):\n${output.join('')}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return child;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`runtime did not start:\n${output.join('')}`);
  }

  async function listAll(port: number, tenantId: string): Promise<ApiTask[]> {
    const tasks: ApiTask[] = [];
    let cursor: string | undefined;
    do {
      const query = new URLSearchParams({ tenantId, limit: '100', ...(cursor ? { cursor } : {}) });
      const response = await fetch(`http://127.0.0.1:${port}/v1/tasks?${query}`);
      expect(response.status).toBe(200);
      const page = (await response.json()) as { items: ApiTask[]; nextCursor?: string };
      tasks.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    return tasks;
  }

  it('SIGKILL mid-run, restart on the same DATA_DIR: every task succeeds, none twice', async () => {
    const port = await freePort();
    const first = await startRuntime(port);
    const tenants = ['acme', 'globex'];
    const submitted = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const response = await fetch(`http://127.0.0.1:${port}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          tenantId: tenants[i % 2],
          type: 'demo.sleep',
          payload: { ms: 300 + (i % 5) * 100 },
          idempotencyKey: `kill9-${i}`,
        }),
      });
      expect(response.status).toBe(202);
      submitted.add(((await response.json()) as ApiTask).taskId);
    }

    // Let work get going: some tasks done, some running, most waiting. A deadline, not a count
    // of polls: a loaded machine may need far longer than 100 polls to get there.
    let before: ApiTask[] = [];
    const goingBy = Date.now() + 120_000;
    while (Date.now() < goingBy) {
      before = (await Promise.all(tenants.map((t) => listAll(port, t)))).flat();
      const running = before.filter((t) => t.state === 'RUNNING' || t.state === 'DISPATCHED').length;
      if (before.filter((t) => t.state === 'SUCCEEDED').length >= 10 && running > 0) break;
      await sleep(100);
    }
    first.kill('SIGKILL');
    await new Promise((resolve) => (first.exitCode === null ? first.once('exit', resolve) : resolve(null)));
    const runningAtKill = before.filter((t) => t.state === 'RUNNING' || t.state === 'DISPATCHED').length;

    await startRuntime(port);
    // Recovery waits on wall-clock leases (the scheduler's 10 s, the tasks' 5 s): a deadline, not
    // a count of polls, so a loaded CI machine gets the time it needs.
    let after: ApiTask[] = [];
    const deadline = Date.now() + 200_000;
    while (Date.now() < deadline) {
      after = (await Promise.all(tenants.map((t) => listAll(port, t)))).flat();
      if (after.length === submitted.size && after.every((t) => t.state === 'SUCCEEDED')) break;
      await sleep(250);
    }
    const states: Record<string, number> = {};
    for (const task of after) states[task.state] = (states[task.state] ?? 0) + 1;
    const unfinished = after.filter((t) => t.state !== 'SUCCEEDED');
    if (unfinished.length > 0) {
      // Enough to tell a stuck task from a slow machine: the tasks as stored, and the runtime's log.
      const stored = await Promise.all(
        unfinished.map(async (t) => (await fetch(`http://127.0.0.1:${port}/v1/tasks/${t.taskId}`)).json()),
      );
      console.error(JSON.stringify(stored, null, 2), output.slice(-100).join(''));
    }
    expect(new Set(after.map((t) => t.taskId))).toEqual(submitted);
    expect(states).toEqual({ SUCCEEDED: 100 });
    // A kill leaves no clean-shutdown marker: the restart rebuilt dynalite's indexes.
    expect(indexesRebuilt).toBe(1);
    // Completed once: what finished before the kill is untouched; an attempt cut short by the
    // kill is retried once at most.
    const byId = new Map(after.map((t) => [t.taskId, t]));
    for (const done of before.filter((t) => t.state === 'SUCCEEDED')) {
      expect(byId.get(done.taskId)).toMatchObject({ finishedAt: done.finishedAt, result: done.result, attempts: 1 });
    }
    for (const task of after) expect(task.attempts).toBeLessThanOrEqual(2);
    expect(runningAtKill).toBeGreaterThan(0);
  }, 300_000);
});
