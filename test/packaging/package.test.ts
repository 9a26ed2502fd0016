/**
 * The package as a user installs it: `npm pack` (which builds dist/ through prepack), the tarball
 * installed into a new project, then the client imported from plain Node against a local
 * stack, type-checked by TypeScript, bundled by esbuild, and `npx tasks --help`.
 * (A browser bundle is not claimed: the signer loads the AWS SDK's Node credential chain.)
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../local/server.ts';
import { startQuietServer } from '../client/local-server.ts';

const run = promisify(execFile);
const repo = resolve('.');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let project: string;
let server: LocalServer;

beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), 'package-consumer-'));
  const packed = join(project, 'packed');
  await mkdir(packed);
  await run(npm, ['pack', '--silent', '--pack-destination', packed], { cwd: repo, maxBuffer: 16 * 1024 * 1024 });
  const [tarball] = (await readdir(packed)).filter((name) => name.endsWith('.tgz'));
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
  );
  await run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', join(packed, tarball!)], {
    cwd: project,
    maxBuffer: 16 * 1024 * 1024,
  });
  server = await startQuietServer();
}, 600_000);

afterAll(async () => {
  await server?.stop();
  if (project) await rm(project, { recursive: true, force: true });
});

describe('the packed package, installed into a new project', () => {
  it('ships JavaScript and declarations, and leaves the emulators and the CDK out of a client install', () => {
    const installed = join(project, 'node_modules');
    const dist = join(installed, 'serverless-task-scheduler', 'dist');

    expect(existsSync(join(dist, 'client', 'sdk', 'index.js'))).toBe(true);
    expect(existsSync(join(dist, 'client', 'sdk', 'index.d.ts'))).toBe(true);
    expect(existsSync(join(dist, 'bin', 'cli.js'))).toBe(true);
    for (const serverOnly of ['dynalite', 'fauxqs', 'aws-cdk-lib', 'level']) {
      expect(existsSync(join(installed, serverOnly)), serverOnly).toBe(false);
    }
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

  it('type-checks a TypeScript caller against the declarations (and refuses a wrong priority)', async () => {
    // Arrange
    await writeFile(
      join(project, 'caller.ts'),
      `import { SchedulerClient, type Task } from 'serverless-task-scheduler/client';
import { defineTaskType } from 'serverless-task-scheduler';
declare const endpoint: string;
const client = new SchedulerClient({ endpoint });
const { taskId } = await client.submit({ tenantId: 'acme', type: 'demo.echo', priority: 'high' });
const task: Task = await client.waitFor(taskId);
export const state: string = task.state;
// @ts-expect-error 'urgent' is not a priority tier
await client.submit({ tenantId: 'acme', type: 'demo.echo', priority: 'urgent' });
export const typeName: string = typeof defineTaskType;
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

  it('runs `npx tasks --help`', async () => {
    const { stdout } = await run(npm, ['exec', '--offline', '--', 'tasks', '--help'], { cwd: project });

    expect(stdout).toMatch(/^Usage: tasks /m);
    expect(stdout).toContain('submit');
  });
});
