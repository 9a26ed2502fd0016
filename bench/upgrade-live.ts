/**
 * An upgrade in place, live and local: `npm start` of an older commit on a DATA_DIR, given work
 * in every state (running on both pools, queued behind a quota, delayed, retrying, on a
 * concurrency key, held on dependencies, in a batch with a then-task: what that version takes),
 * stopped mid-flight (kill -9 by default), then this checkout's `npm start` on the same DATA_DIR
 * until every task has ended. The older version's items and queued messages are read by this
 * one (docs/deploy.md, "Upgrading across several of these at once").
 *
 *   node --experimental-strip-types bench/upgrade-live.ts --from COMMIT [--stop kill|term] [--wait MS]
 *
 * It checks the older commit out in a temporary git worktree (sharing this checkout's
 * node_modules), and removes it after. Exit 1 when a task did not end as expected or a batch's
 * then-task did not run.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ENDED = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface TaskView {
  readonly taskId: string;
  readonly tenantId: string;
  readonly type: string;
  readonly state: string;
  readonly attempts: number;
}

const { values } = parseArgs({
  options: {
    from: { type: 'string' },
    stop: { type: 'string', default: 'kill' },
    wait: { type: 'string', default: '5000' },
  },
});
if (!values.from || !['kill', 'term'].includes(values.stop)) {
  console.error(
    'usage: node --experimental-strip-types bench/upgrade-live.ts --from COMMIT [--stop kill|term] [--wait MS]',
  );
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), 'upgrade-live-'));
const older = join(work, 'older');
const dataDir = join(work, 'data');
const children = new Set<ChildProcess>();

function startRuntime(checkout: string, port: number, name: string): ChildProcess {
  const log = createWriteStream(join(work, `${name}.log`));
  const child = spawn(
    process.execPath,
    ['--experimental-strip-types', '--experimental-sqlite', '--no-warnings', 'bin/local.ts'],
    {
      cwd: checkout,
      env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), SCHEDULER_CONFIG: join(work, 'config.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

async function stopRuntime(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

async function call<T>(port: number, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 200)}`);
  return JSON.parse(text) as T;
}

async function waitUp(port: number): Promise<void> {
  for (let i = 0; i < 900; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/v1/status`)).status < 500) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`no runtime answered on port ${port}`);
}

async function main(): Promise<number> {
  execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', older, values.from!], { stdio: 'ignore' });
  symlinkSync(join(ROOT, 'node_modules'), join(older, 'node_modules'));
  const config = JSON.parse(readFileSync(join(ROOT, 'config', 'default.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(
    join(work, 'config.json'),
    JSON.stringify({ ...config, schedules: [], tenants: { busy: { weight: 1, maxConcurrency: 2 } } }),
  );
  const port = 20_000 + Math.floor(Math.random() * 20_000);

  const old = startRuntime(older, port, 'older');
  await waitUp(port);
  const ids: string[] = [];
  const left: string[] = [];
  const submit = async (body: Record<string, unknown>) => {
    const task = await call<{ taskId: string }>(port, 'POST', '/v1/tasks', body);
    ids.push(task.taskId);
    return task.taskId;
  };
  /** A feature the older version may not have: left out when it refuses it. */
  const optional = async (what: string, run: () => Promise<unknown>) => {
    await run().catch((error: unknown) => left.push(`${what} (${String(error).slice(0, 80)})`));
  };
  for (let i = 0; i < 12; i++) await submit({ tenantId: `t${i % 4}`, type: 'demo.sleep', payload: { ms: 8000 } });
  for (let i = 0; i < 4; i++) {
    await submit({ tenantId: `t${i % 2}`, type: 'demo.sleep', payload: { ms: 6000 }, runtime: 'fargate' });
  }
  for (let i = 0; i < 20; i++) {
    await submit({
      tenantId: 'busy',
      type: 'demo.echo',
      payload: { i },
      priority: ['critical', 'high', 'normal', 'low'][i % 4],
    });
  }
  for (let i = 0; i < 6; i++)
    await submit({ tenantId: `d${i % 3}`, type: 'demo.echo', payload: { i }, delaySeconds: 15 });
  for (let i = 0; i < 4; i++) await submit({ tenantId: 'f', type: 'demo.fail', payload: { failTimes: 2 } });
  await optional('concurrencyKey', async () => {
    for (let i = 0; i < 4; i++) {
      await submit({ tenantId: 'k', type: 'demo.sleep', payload: { ms: 2000 }, concurrencyKey: 'acct-1' });
    }
  });
  const first = await submit({ tenantId: 'dep', type: 'demo.sleep', payload: { ms: 6000 } });
  await optional('dependsOn', async () => {
    const second = await submit({ tenantId: 'dep', type: 'demo.echo', payload: { step: 2 }, dependsOn: [first] });
    await submit({ tenantId: 'dep', type: 'demo.echo', payload: { step: 3 }, dependsOn: [second] });
  });
  let batchId: string | undefined;
  await optional('batches', async () => {
    const batch = await call<{ batchId: string; results: { taskId: string }[] }>(port, 'POST', '/v1/tasks/batch', {
      tasks: Array.from({ length: 12 }, (_, i) => ({
        tenantId: 'bat',
        type: 'demo.sleep',
        payload: { ms: 1500 + 300 * i },
      })),
      // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (POST /v1/tasks/batch)
      then: { tenantId: 'bat', type: 'demo.echo', payload: { thenTask: true } },
    });
    batchId = batch.batchId;
    for (const result of batch.results) ids.push(result.taskId);
  });
  await sleep(Number(values.wait));
  const atStop: Record<string, number> = {};
  for (const id of ids) {
    const { state } = await call<TaskView>(port, 'GET', `/v1/tasks/${id}`);
    atStop[state] = (atStop[state] ?? 0) + 1;
  }
  await stopRuntime(old, values.stop === 'term' ? 'SIGTERM' : 'SIGKILL');

  const startedMs = Date.now();
  const current = startRuntime(ROOT, port, 'current');
  await waitUp(port);
  let tasks: TaskView[] = [];
  let thenState = batchId ? 'none' : 'no batch';
  for (;;) {
    tasks = await Promise.all(ids.map((id) => call<TaskView>(port, 'GET', `/v1/tasks/${id}`)));
    if (batchId) {
      const batch = await call<{ thenTaskId?: string }>(port, 'GET', `/v1/batches/${batchId}`);
      if (batch.thenTaskId) thenState = (await call<TaskView>(port, 'GET', `/v1/tasks/${batch.thenTaskId}`)).state;
    }
    const open = tasks.filter((task) => !ENDED.includes(task.state)).length;
    const thenDone = !batchId || thenState === 'SUCCEEDED';
    if ((open === 0 && thenDone) || Date.now() - startedMs > 240_000) break;
    await sleep(2000);
  }
  await stopRuntime(current, 'SIGTERM');

  const notSucceeded = tasks.filter((task) => task.state !== 'SUCCEEDED');
  const attempts: Record<number, number> = {};
  for (const task of tasks) attempts[task.attempts] = (attempts[task.attempts] ?? 0) + 1;
  console.log(`from ${values.from}, stopped by ${values.stop} after ${values.wait} ms: ${ids.length} tasks`);
  if (left.length > 0) console.log(`  left out (the older version refused them): ${left.join('; ')}`);
  console.log(`  states at the stop: ${JSON.stringify(atStop)}`);
  console.log(
    `  after this checkout's start: ${tasks.length - notSucceeded.length} of ${tasks.length} SUCCEEDED in ${Math.round((Date.now() - startedMs) / 1000)} s; then-task: ${thenState}`,
  );
  for (const task of notSucceeded)
    console.log(`  not SUCCEEDED: ${task.taskId} ${task.tenantId} ${task.type} ${task.state}`);
  console.log(`  attempts (count: tasks): ${JSON.stringify(attempts)}`);
  return notSucceeded.length === 0 && (!batchId || thenState === 'SUCCEEDED') ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  console.error(error);
} finally {
  for (const child of children) child.kill('SIGKILL');
  try {
    execFileSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', older], { stdio: 'ignore' });
  } catch {
    // not added
  }
  rmSync(work, { recursive: true, force: true });
}
process.exit(code);
