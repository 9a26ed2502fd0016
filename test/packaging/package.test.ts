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
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
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
/** The packed package (npm pack, once for this file): installed here and into examples/user-project. */
let tarball: string;
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
  const [packedName] = (await readdir(packed)).filter((name) => name.endsWith('.tgz'));
  tarball = join(packed, packedName!);
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
  );
  await run(npm, ['install', '--no-audit', '--no-fund', tarball], {
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

describe('examples/user-project, installed from the packed package (issue 28)', () => {
  let example: string;
  /** The example's own CDK app, as `npx cdk synth` runs it: offline, no Docker, telemetry off. */
  const cdkEnv = () => ({ ...npmEnv, CDK_DISABLE_CLI_TELEMETRY: 'true' });

  beforeAll(async () => {
    // A copy outside the repository, depending on the packed package instead of the registry's.
    example = join(project, 'user-project');
    await cp(join(repo, 'examples', 'user-project'), example, {
      recursive: true,
      filter: (source) => !/[\\/](node_modules|cdk\.out)$/.test(source),
    });
    const manifest = JSON.parse(readFileSync(join(example, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies)).toEqual(['serverless-task-scheduler']);
    manifest.dependencies['serverless-task-scheduler'] = `file:${tarball}`;
    await writeFile(join(example, 'package.json'), JSON.stringify(manifest, null, 2));
    await run(npm, ['install', '--no-audit', '--no-fund'], { cwd: example, env: npmEnv, maxBuffer: 16 * 1024 * 1024 });
  }, 900_000);

  it("keeps the repository's CDK feature flags, so its template is the one the stack tests check", () => {
    const context = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { context: object }).context;
    expect(context(join(repo, 'examples', 'user-project', 'cdk.json'))).toEqual(context(join(repo, 'cdk.json')));
  });

  it('`npx tasks dev --task-types ./tasks.mjs` runs its type, and submit.mjs prints the handler’s result', async () => {
    // Arrange
    const dev = started(
      spawn(
        npm,
        ['exec', '--', 'tasks', 'dev', '--task-types', './tasks.mjs', '--config', 'scheduler.json', '--port', '0'],
        {
          cwd: example,
          env: { ...npmEnv, DATA_DIR: join(example, '.data') },
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        },
      ),
    );
    const url = await dev.url();

    // Act
    const submit = await run(process.execPath, ['submit.mjs'], {
      cwd: example,
      env: { ...process.env, SCHEDULER_ENDPOINT: url },
    });

    // Assert: 3 × 450 + 1 × 1200 − 200, as the handler computes it.
    expect(JSON.parse(submit.stdout)).toEqual({
      state: 'SUCCEEDED',
      result: { orderId: 'o-1001', totalCents: 2350 },
    });
    // Everything tasks dev needs came with the example's own install.
    expect(dev.output()).not.toContain('installing what the local system needs');
    expect(dev.output()).toContain('types=shop.order-total');
    expect(await dev.stop()).toMatch(/INFO {2}stopped$/m);
  }, 600_000);

  it('`cdk synth` of its app: offline, nag-clean, the module in every function that builds a task-type registry and in the Fargate image', async () => {
    // Act
    const synth = await run(npm, ['exec', '--', 'cdk', 'synth', '--no-notices', '-q'], {
      cwd: example,
      env: cdkEnv(),
      maxBuffer: 64 * 1024 * 1024,
    });

    // Assert
    const out = join(example, 'cdk.out');
    const report = JSON.parse(readFileSync(join(out, 'validation-report.json'), 'utf8')) as {
      pluginReports: { violations: unknown[] }[];
    };
    expect(report.pluginReports.flatMap((plugin) => plugin.violations)).toEqual([]);
    expect(synth.stderr).not.toMatch(/AwsSolutions-/);
    const stack = 'ShopTaskScheduler';
    const assets = JSON.parse(readFileSync(join(out, `${stack}.assets.json`), 'utf8')) as {
      files: Record<string, { displayName?: string; source: { path: string } }>;
      dockerImages: Record<string, { displayName: string; source: { directory: string; dockerFile?: string } }>;
    };
    // Lambda bundles (identical bundles, as the two worker classes have, are one asset).
    const bundles = Object.values(assets.files)
      .filter((asset) => /\/Function\/Code$/.test(asset.displayName ?? ''))
      .map((asset) => ({
        name: asset.displayName!,
        code: readFileSync(join(out, asset.source.path, 'index.mjs'), 'utf8'),
      }));
    const withType = bundles.filter((bundle) => bundle.code.includes('shop.order-total')).map((b) => b.name);
    // The API validates payloads, the workers run it, the scheduler, redrive and event stream
    // build the registry with the services.
    for (const construct of ['Api/', 'Scheduler/', 'LambdaWorkers/', 'Redrive/', 'Events/Stream/']) {
      expect(
        withType.some((name) => name.startsWith(construct)),
        `${construct} in ${withType}`,
      ).toBe(true);
    }
    const images = Object.values(assets.dockerImages);
    expect(images.map((image) => image.displayName).sort()).toEqual([
      'FargateWorkers/Task/Worker/AssetImage',
      'TaskTypeWorkers/Service-shop_receipt/Task/Worker/AssetImage',
    ]);
    // The scheduler's worker image: its Dockerfile around the worker bundle, with the module in it.
    const pool = join(out, images.find((image) => image.displayName.startsWith('FargateWorkers/'))!.source.directory);
    expect(readdirSync(pool).sort()).toEqual(['Dockerfile', 'index.mjs', 'index.mjs.map', 'package.json']);
    expect(readFileSync(join(pool, 'index.mjs'), 'utf8')).toContain('shop.order-total');
    expect(readFileSync(join(pool, 'Dockerfile'), 'utf8')).toMatch(/CMD \["node", "index\.mjs"\]/);
    // The project's own image for shop.receipt: staged from the project with its Dockerfile, not built.
    const own = images.find((image) => image.displayName.startsWith('TaskTypeWorkers/'))!;
    expect(own.source.dockerFile).toBe('worker/Dockerfile');
    const ownContext = join(out, own.source.directory);
    expect(existsSync(join(ownContext, 'worker', 'worker.mjs'))).toBe(true);
    expect(existsSync(join(ownContext, 'tasks.mjs'))).toBe(true);
    expect(existsSync(join(ownContext, 'node_modules'))).toBe(false);
    // Its service polls the type's own queue; the scheduler dispatches shop.receipt there.
    const template = JSON.parse(readFileSync(join(out, `${stack}.template.json`), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const containers = Object.values(template.Resources)
      .filter((resource) => resource.Type === 'AWS::ECS::TaskDefinition')
      .flatMap(
        (resource) => resource.Properties.ContainerDefinitions as { Environment: { Name: string; Value: unknown }[] }[],
      );
    const queues = containers.map((container) => container.Environment.find((e) => e.Name === 'WORKER_QUEUE')?.Value);
    expect(queues).toContain('worker-type-shop_receipt');
    const scheduler = Object.values(template.Resources).find(
      (resource) =>
        resource.Type === 'AWS::Lambda::Function' && String(resource.Properties.FunctionName).endsWith('-scheduler'),
    )!;
    const variables = (scheduler.Properties.Environment as { Variables: Record<string, string> }).Variables;
    expect(Object.keys(JSON.parse(variables.TASK_TYPE_QUEUES!))).toEqual(['shop.receipt']);
  }, 900_000);

  it("cdk-nag is live in the example's app: a queue planted in its stack fails the synth, and nothing else is found", async () => {
    // Arrange: app.mjs with an unencrypted queue added to the scheduler's stack, bundling skipped.
    const app = readFileSync(join(example, 'app.mjs'), 'utf8');
    expect(app).toContain('new AwsSolutionsChecks(app)');
    await writeFile(
      join(example, 'nag-live.mjs'),
      `import * as sqs from 'aws-cdk-lib/aws-sqs';\n${app.replace(
        'app.synth();',
        "new sqs.Queue(app.node.findChild(config.deploy.stackName), 'Planted', { encryption: sqs.QueueEncryption.UNENCRYPTED, enforceSSL: true });\napp.synth();",
      )}`,
    );
    const cdkJson = JSON.parse(readFileSync(join(example, 'cdk.json'), 'utf8')) as { context: object };

    // Act
    const failed = await run(process.execPath, ['nag-live.mjs'], {
      cwd: example,
      env: {
        ...cdkEnv(),
        // Outside the project: the receipt worker's image is staged from the project directory.
        CDK_OUTDIR: join(project, 'nag-live.out'),
        CDK_CONTEXT_JSON: JSON.stringify({ ...cdkJson.context, 'aws:cdk:bundling-stacks': [] }),
      },
    }).then(
      () => undefined,
      (error: { stderr?: string; code?: number }) => error,
    );

    // Assert
    expect(failed?.code).not.toBe(0);
    const report = JSON.parse(readFileSync(join(project, 'nag-live.out', 'validation-report.json'), 'utf8')) as {
      pluginReports: { violations: { ruleName: string; violatingConstructs: { constructPath: string }[] }[] }[];
    };
    const violations = report.pluginReports.flatMap((plugin) => plugin.violations);
    expect(violations.map((violation) => violation.ruleName)).toContain('AwsSolutions-SQS2');
    // Every finding is the planted queue's (SQS2 unencrypted, SQS3 no dead-letter queue).
    const paths = violations.flatMap((violation) => violation.violatingConstructs.map((c) => c.constructPath));
    expect([...new Set(paths)]).toEqual(['ShopTaskScheduler/Planted/Resource']);
  }, 300_000);
});
