/**
 * `npm start` as a user meets it: what it listens on, and the one-line answers to the usual
 * mistakes (a port in use, a second start on one data directory, a config flag npm swallowed, a
 * schedule that cannot fire), and Ctrl-C.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../client/cli/run.ts';
import { type LocalProcess, listeningSockets, spawnLocal, startLocal } from './local-process.ts';

const root = mkdtempSync(join(tmpdir(), 'npm-start-'));
const started: LocalProcess[] = [];
afterAll(async () => {
  for (const local of started) local.kill('SIGKILL');
  await Promise.all(started.map((local) => local.exited));
  rmSync(root, { recursive: true, force: true });
});

function track<T extends LocalProcess>(local: T): T {
  started.push(local);
  return local;
}

function writeConfig(name: string, config: unknown): string {
  const path = join(root, name);
  writeFileSync(path, JSON.stringify(config));
  return path;
}

async function post(url: string, body: unknown): Promise<{ taskId: string }> {
  const response = await fetch(`${url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(202);
  return (await response.json()) as { taskId: string };
}

async function stateOf(url: string, taskId: string): Promise<string> {
  return ((await (await fetch(`${url}/v1/tasks/${taskId}`)).json()) as { state: string }).state;
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

async function tasks(argv: string[], env: Record<string, string>): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await runCli(argv, {
    stdout: (text) => {
      out += text;
    },
    stderr: (text) => {
      out += text;
    },
    env,
  });
  return { code, out };
}

/** The lines a refused start printed, without Node's own warnings. */
function printedLines(output: string): string[] {
  return output.split('\n').filter((line) => line.trim() !== '');
}

describe('npm start', () => {
  it('listens on loopback only: the HTTP API and both emulators, no wildcard address', async () => {
    // Arrange
    const local = track(await startLocal({ env: { DATA_DIR: join(root, 'listen') } }));

    // Act
    const sockets = listeningSockets(local.child.pid!);

    // Assert: the API, dynalite and fauxqs, each on 127.0.0.1.
    expect(sockets.length).toBeGreaterThanOrEqual(3);
    expect(sockets.filter((socket) => socket.address !== '127.0.0.1')).toEqual([]);
    expect(sockets.map((socket) => socket.port)).toContain(Number(new URL(local.url).port));
    local.kill('SIGTERM');
    expect(await local.exited).toBe(0);
  });

  it('says in one line that the port is in use, and how to pick another', async () => {
    // Arrange
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;

    // Act
    const local = track(spawnLocal({ env: { PORT: String(port), DATA_DIR: join(root, 'port') } }));
    const code = await local.exited;
    taken.close();

    // Assert
    expect(code).toBe(1);
    expect(printedLines(local.output())).toEqual([
      `Port ${port} on 127.0.0.1 is already in use (another npm start?): stop it, or set PORT, e.g. PORT=${port + 1} npm start.`,
    ]);
  });

  it('refuses a second start on the same data directory in one line, and the first keeps running', async () => {
    // Arrange
    const dataDir = join(root, 'shared');
    const first = track(await startLocal({ env: { DATA_DIR: dataDir } }));

    // Act
    const second = track(spawnLocal({ env: { DATA_DIR: dataDir } }));
    const code = await second.exited;

    // Assert
    expect(code).toBe(1);
    expect(printedLines(second.output())).toEqual([
      `DATA_DIR ${dataDir} is in use by another npm start (pid ${first.child.pid}): stop it, or set DATA_DIR to another folder.`,
    ]);
    expect((await fetch(`${first.url}/health`)).ok).toBe(true);
    first.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  });

  it('honours `npm start --config x.json` (npm keeps the flag and passes the path on) and refuses stray arguments', async () => {
    // Arrange: what npm 11 hands the script for `npm start --config x.json`.
    const path = writeConfig('npm-flag.json', { policy: 'fifo' });
    const npmEnv = { npm_lifecycle_event: 'start', npm_config_config: 'true', DATA_DIR: join(root, 'npm-flag') };

    // Act
    const local = track(await startLocal({ env: npmEnv, args: [path] }));
    const stray = track(spawnLocal({ env: { DATA_DIR: join(root, 'stray') }, args: ['x.json'] }));
    const typo = track(spawnLocal({ env: { DATA_DIR: join(root, 'typo') }, args: ['--confg', path] }));

    // Assert
    expect(local.output()).toContain(`config=${path}`);
    expect(local.output()).toContain('policy=fifo');
    expect(await stray.exited).toBe(1);
    expect(stray.output()).toContain('Unexpected argument x.json; the configuration is given as --config PATH');
    expect(await typo.exited).toBe(1);
    expect(typo.output()).toContain("Unknown option '--confg'");
    local.kill('SIGTERM');
    await local.exited;
  });

  it('refuses at start a schedule whose task could never be submitted, naming it', async () => {
    // Arrange
    const path = writeConfig('bad-schedule.json', {
      schedules: [
        { name: 'typo', cron: 'cron(0 2 * * ? *)', task: { tenantId: 'acme', type: 'demo.sleeep', payload: {} } },
        { name: 'bad-payload', cron: 'cron(0 3 * * ? *)', task: { tenantId: 'acme', type: 'demo.sleep', payload: {} } },
      ],
    });

    // Act
    const local = track(spawnLocal({ env: { DATA_DIR: join(root, 'schedules') }, args: ['--config', path] }));

    // Assert
    expect(await local.exited).toBe(1);
    expect(local.output()).toMatch(/schedules\[0\] "typo": unknown_task_type/);
    expect(local.output()).toMatch(/schedules\[1\] "bad-payload": invalid_payload/);
    expect(local.output()).not.toContain('scheduler running at');
  });

  it('Ctrl-C says how many tasks it waits for; a second Ctrl-C stops now and the next start finishes them', async () => {
    // Arrange: short leases, so the restarted runtime takes the interrupted task back soon.
    const path = writeConfig('ctrl-c.json', { scheduler: { dispatchLeaseSeconds: 5, runLeaseSeconds: 5 } });
    const env = { DATA_DIR: join(root, 'ctrl-c') };
    const args = ['--config', path];
    const first = track(await startLocal({ env, args }));
    const { taskId } = await post(first.url, { tenantId: 'acme', type: 'demo.sleep', payload: { ms: 6_000 } });
    await until(async () => (await stateOf(first.url, taskId)) === 'RUNNING', 30_000, 'running');

    // Act
    first.kill('SIGINT');
    await first.waitFor(/waiting for 1 running task to finish .* Ctrl-C again stops now/);
    first.kill('SIGINT');
    const code = await first.exited;
    const second = track(await startLocal({ env, args }));

    // Assert
    expect(code).toBe(130);
    expect(first.output()).toContain('SIGINT again: stopping now; 1 running task will be recovered on the next start');
    await until(async () => (await stateOf(second.url, taskId)) === 'SUCCEEDED', 90_000, 'recovered');
    second.kill('SIGTERM');
    await second.exited;
  }, 180_000);

  it('`tasks schedules run NAME` fires a schedule now and `tasks redrive` works on the local runtime', async () => {
    // Arrange
    const dataDir = join(root, 'operator');
    const path = writeConfig('operator.json', {
      schedules: [
        {
          name: 'nightly-echo',
          cron: 'cron(0 2 * * ? *)',
          task: { tenantId: 'ops', type: 'demo.echo', payload: { night: '{{date}}' } },
        },
      ],
    });
    const local = track(await startLocal({ env: { DATA_DIR: dataDir }, args: ['--config', path] }));
    const env = { DATA_DIR: dataDir };

    // Act
    const listed = await tasks(['schedules', 'list', '--config', path, '--json'], env);
    const fired = await tasks(
      ['schedules', 'run', 'nightly-echo', '--config', path, '--endpoint', local.url, '--json'],
      env,
    );
    const unknown = await tasks(['schedules', 'run', 'weekly', '--config', path, '--endpoint', local.url], env);
    const redrive = await tasks(['redrive', '--json'], env);
    const redriveElsewhere = await tasks(['redrive'], { DATA_DIR: join(root, 'nothing-here') });

    // Assert
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.out)).toEqual([expect.objectContaining({ name: 'nightly-echo', enabled: true })]);
    expect(fired.code).toBe(0);
    const task = JSON.parse(fired.out) as { taskId: string; payload: { night: string }; idempotencyKey: string };
    expect(task.payload.night).toBe(new Date().toISOString().slice(0, 10));
    expect(task.idempotencyKey).toMatch(/^schedule:nightly-echo:/);
    await until(async () => (await stateOf(local.url, task.taskId)) === 'SUCCEEDED', 30_000, 'fired task');
    expect(unknown.code).not.toBe(0);
    expect(unknown.out).toContain('No schedule "weekly"');
    expect(redrive.code).toBe(0);
    expect((JSON.parse(redrive.out) as { queues: unknown[] }).queues.length).toBeGreaterThan(0);
    expect(redriveElsewhere.code).not.toBe(0);
    expect(redriveElsewhere.out).toContain('no local runtime found at');
    local.kill('SIGTERM');
    await local.exited;
  });
});
