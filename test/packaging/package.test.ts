/**
 * The package as a user meets it: `npm pack` (which builds dist/ through prepack), the tarball
 * installed into a new project outside the repository, then
 * - the light install: no emulators, CDK, AWS SDK clients or sharp;
 * - the client imported from plain Node against a local stack, type-checked by TypeScript,
 *   bundled by esbuild, and `npx tasks --help`;
 * - the README's snippets as written: inside this repository (against the dist/ just built) and
 *   in the new project, where `npx tasks dev --task-types` runs the project's own task modules
 *   (its first run installing the local system's peers) and the SDK submits to them.
 * (A browser bundle is not claimed: the signer loads the AWS SDK's Node credential chain.)
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../local/server.ts';
import { startQuietServer } from '../client/local-server.ts';

const run = promisify(execFile);
const repo = resolve('.');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** npm resolves from its cache first (the repository's `npm ci` filled it): no network needed. */
const npmEnv = {
  ...process.env,
  npm_config_prefer_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
};
let project: string;
let server: LocalServer;
const children: ChildProcess[] = [];
const snippetsDir = join(repo, '.snippets');

beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), 'package-consumer-'));
  const packed = join(project, 'packed');
  await mkdir(packed);
  await run(npm, ['pack', '--silent', '--pack-destination', packed], {
    cwd: repo,
    env: npmEnv,
    maxBuffer: 16 * 1024 * 1024,
  });
  const [tarball] = (await readdir(packed)).filter((name) => name.endsWith('.tgz'));
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
  );
  await run(npm, ['install', '--no-audit', '--no-fund', join(packed, tarball!)], {
    cwd: project,
    env: npmEnv,
    maxBuffer: 16 * 1024 * 1024,
  });
  server = await startQuietServer();
}, 900_000);

afterAll(async () => {
  for (const child of children) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await server?.stop();
  if (project) await rm(project, { recursive: true, force: true });
  await rm(snippetsDir, { recursive: true, force: true });
});

/** The code blocks of a Markdown file whose fence names a file (```ts name.mts), by that name. */
function snippets(markdown: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const match of readFileSync(join(repo, markdown), 'utf8').matchAll(
    /^```\w+ ([\w.-]+\.m?[tj]s)\n([\s\S]*?)^```$/gm,
  )) {
    found.set(match[1]!, match[2]!);
  }
  return found;
}

function bytesOf(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) bytes += bytesOf(full);
    else if (entry.isFile()) bytes += statSync(full).size;
  }
  return bytes;
}

/** A long-running command's output, and a wait for a line of it. */
function started(child: ChildProcess) {
  children.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  let exited = false;
  // 'close': every holder of its output is gone (npm exec's child included), not only the process.
  const exit = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      exited = true;
      resolve(code);
    }),
  );
  return {
    output: () => output,
    exit,
    /** SIGTERM to its process group (npm exec and the command it runs); resolves with the output. */
    async stop(): Promise<string> {
      process.kill(-child.pid!, 'SIGTERM');
      await exit;
      return output;
    },
    async url(timeoutMs = 600_000): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const match = /scheduler running at (http:\/\/\S+)/.exec(output);
        if (match) return match[1]!;
        if (exited) throw new Error(`exited before serving:\n${output}`);
        await sleep(100);
      }
      throw new Error(`not serving within ${timeoutMs} ms:\n${output}`);
    },
  };
}

describe('the packed package, installed into a new project', () => {
  it('is a light install: the client, the task-type API and their four dependencies, nothing else', () => {
    const installed = join(project, 'node_modules');
    const dist = join(installed, 'serverless-task-scheduler', 'dist');

    expect(existsSync(join(dist, 'client', 'sdk', 'index.js'))).toBe(true);
    expect(existsSync(join(dist, 'client', 'sdk', 'index.d.ts'))).toBe(true);
    expect(existsSync(join(dist, 'bin', 'cli.js'))).toBe(true);
    for (const absent of [
      'dynalite',
      'fauxqs',
      'level',
      'aws-cdk-lib',
      'constructs',
      'esbuild',
      'sharp',
      '@img',
      '@aws-sdk/client-dynamodb',
      '@aws-sdk/client-s3',
      '@aws-lambda-powertools',
      'cron-parser',
    ]) {
      expect(existsSync(join(installed, absent)), absent).toBe(false);
    }
    // The README states the figure `du -sh node_modules` printed; this keeps it from creeping back.
    const megabytes = bytesOf(installed) / 1e6;
    console.log(`client-only install: ${megabytes.toFixed(1)} MB of node_modules`);
    expect(megabytes).toBeLessThan(40);
    // npm runs no install script of ours, and warns of none (npm 11 lists packages that have one).
    const manifest = JSON.parse(readFileSync(join(installed, 'serverless-task-scheduler', 'package.json'), 'utf8'));
    expect(manifest.scripts.prepare).toBeUndefined();
    expect(JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).scripts.prepare).toBe('npm run build');
  });

  it('imports the client from plain Node and submits a task to a local stack', async () => {
    // Arrange
    const script = join(project, 'submit.mjs');
    await writeFile(
      script,
      `import { SchedulerClient } from 'serverless-task-scheduler/client';
const client = new SchedulerClient({ endpoint: process.argv[2] });
const { taskId } = await client.submit({ tenantId: 'acme', type: 'demo.echo', payload: { from: 'package' } });
const done = await client.waitFor(taskId, { timeoutMs: 30000 });
console.log(JSON.stringify({ state: done.state, result: done.result }));
`,
    );

    // Act
    const { stdout } = await run(process.execPath, [script, server.url], { cwd: project });

    // Assert
    const outcome = JSON.parse(stdout) as { state: string; result: unknown };
    expect(outcome.state).toBe('SUCCEEDED');
    expect(JSON.stringify(outcome.result)).toContain('package');
  });

  it('type-checks a TypeScript caller and a task module against the declarations', async () => {
    // Arrange
    await writeFile(
      join(project, 'caller.ts'),
      `import { SchedulerClient, type Task } from 'serverless-task-scheduler/client';
import { defineTaskType, z } from 'serverless-task-scheduler';
declare const endpoint: string;
const client = new SchedulerClient({ endpoint });
const { taskId } = await client.submit({ tenantId: 'acme', type: 'demo.echo', priority: 'high' });
const task: Task = await client.waitFor(taskId);
export const state: string = task.state;
// @ts-expect-error 'urgent' is not a priority tier
await client.submit({ tenantId: 'acme', type: 'demo.echo', priority: 'urgent' });
export default [
  defineTaskType({
    type: 'typed.one',
    description: 'typed from its schema',
    payload: z.strictObject({ n: z.number() }),
    // @ts-expect-error the payload's n is a number
    async handler({ n }): Promise<string> { return n.toUpperCase(); },
  }),
];
`,
    );
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          // As most projects do: our declarations are checked, the AWS SDK's are trusted.
          skipLibCheck: true,
          typeRoots: [join(repo, 'node_modules', '@types')],
          types: ['node'],
        },
        files: ['caller.ts'],
      }),
    );

    // Act
    const errors = await run(
      process.execPath,
      [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project],
      {
        cwd: project,
      },
    ).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );

    // Assert
    expect(errors).toBe('');
  });

  it('bundles the client with esbuild (for Node: the signer uses the AWS SDK credential chain)', async () => {
    // Arrange
    await writeFile(
      join(project, 'bundled.mjs'),
      `import { SchedulerClient } from 'serverless-task-scheduler/client';
export const client = new SchedulerClient({ endpoint: 'http://127.0.0.1:3000' });
`,
    );

    // Act
    const result = await build({
      absWorkingDir: project,
      entryPoints: ['bundled.mjs'],
      bundle: true,
      platform: 'node',
      format: 'esm',
      write: false,
      logLevel: 'silent',
    });

    // Assert
    expect(result.errors).toEqual([]);
    expect(result.outputFiles[0]!.text).toContain('SchedulerClient');
  });

  it('runs `npx tasks --help` on a client-only install', async () => {
    const { stdout } = await run(npm, ['exec', '--offline', '--', 'tasks', '--help'], { cwd: project });

    expect(stdout).toMatch(/^Usage: tasks /m);
    expect(stdout).toContain('submit');
    expect(stdout).toMatch(/^ {2}dev /m);
  });
});

describe("the README's snippets, as written", () => {
  const readme = snippets('README.md');
  const taskTypesDoc = snippets('docs/task-types.md');

  it('inside this repository: the SDK snippet, and a task module run by npm start and submitted to', async () => {
    // Arrange: the files a reader would save, beside the sources (dist/ is what npm pack built).
    await mkdir(snippetsDir, { recursive: true });
    for (const name of ['sdk.mts', 'tasks.ts', 'submit.mts']) {
      expect(readme.has(name), name).toBe(true);
      await writeFile(join(snippetsDir, name), readme.get(name)!);
    }
    const local = started(
      spawn(
        process.execPath,
        [
          '--experimental-strip-types',
          '--experimental-sqlite',
          '--no-warnings',
          'bin/local.ts',
          '--task-types',
          '.snippets/tasks.ts',
          '--port',
          '0',
        ],
        {
          cwd: repo,
          env: { ...process.env, DATA_DIR: join(project, 'repo-data') },
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        },
      ),
    );
    const url = await local.url();

    // Act
    const sdk = await run(process.execPath, ['--no-warnings', join(snippetsDir, 'sdk.mts')], {
      cwd: repo,
      env: { ...process.env, SCHEDULER_ENDPOINT: server.url },
    });
    const submit = await run(process.execPath, ['--no-warnings', join(snippetsDir, 'submit.mts')], {
      cwd: repo,
      env: { ...process.env, SCHEDULER_ENDPOINT: url },
    });

    // Assert
    expect(sdk.stdout).toBe('SUCCEEDED { echo: { hi: 1 } }\n');
    expect(submit.stdout).toBe('{"invoiceId":"inv-1","totalCents":1649}\n');
    expect(await local.stop()).toMatch(/INFO {2}stopped$/m);
  }, 600_000);

  it('in a new project: `npx tasks dev --task-types` runs its modules (.ts and .mjs), the SDK submits to them', async () => {
    // Arrange: the README's module and submit script, and a JavaScript module of another type.
    for (const name of ['tasks.ts', 'submit.mts']) await writeFile(join(project, name), readme.get(name)!);
    await writeFile(join(project, 'invoices.ts'), taskTypesDoc.get('invoices.ts')!);
    await writeFile(
      join(project, 'greet.mjs'),
      `import { defineTaskType, z } from 'serverless-task-scheduler';
export default [defineTaskType({ type: 'user.greet', description: 'Greets', payload: z.object({ name: z.string() }), handler: async ({ name }) => 'hello ' + name })];
`,
    );
    await writeFile(
      join(project, 'greet-submit.mjs'),
      `import { SchedulerClient } from 'serverless-task-scheduler/client';
const client = new SchedulerClient({ endpoint: process.env.SCHEDULER_ENDPOINT });
const { taskId } = await client.submit({ tenantId: 'acme', type: 'user.greet', payload: { name: 'Ada' } });
console.log(JSON.stringify((await client.waitFor(taskId, { timeoutMs: 60000 })).result));
`,
    );
    const dev = started(
      spawn(
        npm,
        [
          ...['exec', '--', 'tasks', 'dev', '--port', '0'],
          ...['--task-types', './tasks.ts', '--task-types', './greet.mjs', '--task-types', './invoices.ts'],
        ],
        {
          cwd: project,
          env: { ...npmEnv, DATA_DIR: join(project, 'dev-data') },
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        },
      ),
    );
    const url = await dev.url();

    // Act
    const submit = await run(process.execPath, ['--no-warnings', 'submit.mts'], {
      cwd: project,
      env: { ...process.env, SCHEDULER_ENDPOINT: url },
    });
    const greet = await run(process.execPath, ['greet-submit.mjs'], {
      cwd: project,
      env: { ...process.env, SCHEDULER_ENDPOINT: url },
    });
    const invoice = (await (
      await fetch(`${url}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          tenantId: 'acme',
          type: 'billing.send-invoice',
          idempotencyKey: 'send-inv-1',
          payload: { invoiceId: 'inv-1', email: 'a@example.com' },
        }),
      })
    ).json()) as { taskId: string };
    let sent: { state: string; result?: unknown } = { state: 'QUEUED' };
    while (!['SUCCEEDED', 'FAILED'].includes(sent.state)) {
      await sleep(200);
      sent = (await (await fetch(`${url}/v1/tasks/${invoice.taskId}`)).json()) as typeof sent;
    }

    // Assert
    expect(dev.output()).toContain('tasks dev: installing what the local system needs, once: npm install --save-dev');
    expect(dev.output()).toContain('types=billing.invoice,user.greet,billing.send-invoice');
    expect(sent).toMatchObject({ state: 'SUCCEEDED', result: { messageId: 'msg-send-inv-1' } });
    expect(submit.stdout).toBe('{"invoiceId":"inv-1","totalCents":1649}\n');
    expect(greet.stdout).toBe('"hello Ada"\n');
    const devDependencies = Object.keys(
      (JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { devDependencies: object }).devDependencies,
    );
    expect(devDependencies).toEqual(
      expect.arrayContaining(['dynalite', 'fauxqs', 'level', '@aws-sdk/client-dynamodb']),
    );
    console.log(
      `after tasks dev's first run: ${(bytesOf(join(project, 'node_modules')) / 1e6).toFixed(1)} MB of node_modules`,
    );
    expect(await dev.stop()).toMatch(/INFO {2}stopped$/m);
  }, 900_000);
});
