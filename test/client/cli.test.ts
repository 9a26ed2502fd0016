import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../client/cli/run.ts';
import { startEmulators } from '../../local/emulators.ts';
import type { LocalServer } from '../../local/server.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { cliAgainst, startQuietServer } from './local-server.ts';

let server: LocalServer;

beforeAll(async () => {
  server = await startQuietServer();
});
afterAll(async () => {
  await server.stop();
});

const cli = cliAgainst(() => server.url);

describe('Function: runCli', () => {
  describe('Help and usage errors', () => {
    it('lists every command with --help and exits 0', async () => {
      // Act
      const run = await cli(['--help']);

      // Assess
      expect(run.code).toBe(0);
      for (const command of ['submit', 'get', 'list', 'cancel', 'retry', 'tenants', 'redrive', 'watch']) {
        expect(run.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
      }
    });

    it.each(['submit', 'get', 'list', 'cancel', 'retry', 'tenants', 'redrive', 'watch'])(
      'prints usage for "%s --help" and exits 0',
      async (command) => {
        // Act
        const run = await cli([command, '--help']);

        // Assess
        expect(run.code).toBe(0);
        expect(run.stdout).toMatch(new RegExp(`^Usage: tasks ${command}`));
        expect(run.stdout).toContain('--endpoint URL');
      },
    );

    it.each([
      [[], 'Usage: tasks <command>'],
      [['frobnicate'], 'Unknown command "frobnicate"'],
      [['submit', '--type', 'demo.echo'], '--tenant is required'],
      [['submit', '--tenant', 'a', '--type', 'demo.echo', '--priority', 'urgent'], '--priority must be one of'],
      [['submit', '--tenant', 'a', '--type', 'demo.echo', '--payload', '{nope'], '--payload is not valid JSON'],
      [['submit', '--tenant', 'a', '--type', 'demo.echo', '--delay', 'soon'], '--delay must be an integer'],
      [['list', '--tenant', 'a', '--limit', '500'], '--limit must be an integer 1-100'],
      [['get'], 'TASK_ID is required'],
      [['get', '--bogus'], "Unknown option '--bogus'"],
      [['tenants', 'set', 'a', '--weight', '2'], 'tenants set needs --weight and --max-concurrency'],
      [['tenants', 'delete', 'a'], 'Give a subcommand: get, set, pause, resume or reset'],
      [['tenants', 'pause', 'a', '--weight', '2'], '--weight goes with "tenants set"'],
      [
        ['tenants', 'set', 'a', '--weight', '2', '--max-concurrency', '2', '--burst', '3'],
        '--burst goes with --max-starts-per-second',
      ],
      [['types', 'stop', 'demo.echo'], 'Give a subcommand: list, pause or resume'],
      [['types', 'pause'], 'types pause needs a task type'],
      [['list', '--tenant', 'a', '--endpoint', 'not a url'], 'Invalid endpoint "not a url"'],
    ])('exits 2 on %j', async (argv, message) => {
      // Act
      const run = await cli(argv);

      // Assess
      expect(run.code).toBe(2);
      expect(run.stdout + run.stderr).toContain(message);
    });
  });

  describe('Command: submit', () => {
    it('submits and prints the task as JSON with --json', async () => {
      // Act
      const run = await cli([
        'submit',
        '--tenant',
        'cli-a',
        '--type',
        'demo.echo',
        '--payload',
        '{"hello":"world"}',
        '--priority',
        'high',
        '--idempotency-key',
        'cli-key-1',
        '--delay',
        '3600',
        '--json',
      ]);

      // Assess
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({
        tenantId: 'cli-a',
        type: 'demo.echo',
        priority: 'high',
        state: 'QUEUED',
        payload: { hello: 'world' },
        idempotencyKey: 'cli-key-1',
      });
    });

    it('reads the payload from @file and waits for the result with --wait', async () => {
      // Prepare
      const readFile = async (path: string) =>
        path === 'payload.json' ? '{"n":42}' : Promise.reject(new Error('ENOENT'));

      // Act
      const run = await cli(
        ['submit', '--tenant', 'cli-a', '--type', 'demo.echo', '--payload', '@payload.json', '--wait'],
        {
          readFile,
        },
      );

      // Assess
      expect(run.code).toBe(0);
      expect(run.stderr).toMatch(/^Submitted tsk_\w+; waiting for it to finish/);
      expect(run.stdout).toMatch(/^state\s+SUCCEEDED$/m);
      expect(run.stdout).toMatch(/^result\s+\{"echo":\{"n":42\}\}$/m);
    });

    it('exits 1 with the API code and message when the API refuses', async () => {
      // Act
      const run = await cli(['submit', '--tenant', 'cli-a', '--type', 'no.such-type']);

      // Assess
      expect(run.code).toBe(1);
      expect(run.stderr).toBe('error: unknown_task_type: Unknown task type "no.such-type"\n');
    });

    it('prints the error as JSON on stderr with --json', async () => {
      // Act
      const run = await cli(['get', 'tsk_missing', '--json']);

      // Assess
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(JSON.parse(run.stderr)).toEqual({
        error: {
          status: 404,
          code: 'task_not_found',
          message: 'No task with id tsk_missing',
          details: { taskId: 'tsk_missing' },
        },
      });
    });

    it('exits 1 when the scheduler cannot be reached', async () => {
      // Act
      const run = await cli(['get', 'tsk_1', '--endpoint', 'http://127.0.0.1:9']);

      // Assess
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('Cannot reach the scheduler at http://127.0.0.1:9');
    });
  });

  describe('Finding the local runtime (issue 28)', () => {
    it('talks to the runtime running on DATA_DIR, whatever its port, with no --endpoint', async () => {
      // Prepare: what a runtime on another port writes to DATA_DIR/runtime.json while it runs.
      const dataDir = mkdtempSync(join(tmpdir(), 'cli-runtime-'));
      writeFileSync(join(dataDir, 'runtime.json'), JSON.stringify({ pid: process.pid, url: server.url }));
      const { taskId } = JSON.parse(
        (await cli(['submit', '--tenant', 'acme', '--type', 'demo.echo', '--json'])).stdout,
      ) as { taskId: string };

      // Act
      const run = await cli(['get', taskId, '--json'], {
        env: { DATA_DIR: dataDir },
        defaultEndpoint: 'http://127.0.0.1:9',
      });

      // Assess
      expect(run.code).toBe(0);
      expect((JSON.parse(run.stdout) as { taskId: string }).taskId).toBe(taskId);
      rmSync(dataDir, { recursive: true, force: true });
    });

    it("lists and fires the running runtime's schedules, not config/default.json's", async () => {
      // Prepare: a runtime started with --config of its own (one schedule, hourly-echo) on DATA_DIR.
      const dataDir = mkdtempSync(join(tmpdir(), 'cli-runtime-'));
      const config = parseConfig({
        schedules: [
          {
            name: 'hourly-echo',
            cron: 'cron(0 * * * ? *)',
            timezone: 'UTC',
            task: { tenantId: 'ops', type: 'demo.echo', payload: { at: '{{date}}' } },
          },
        ],
      });
      writeFileSync(join(dataDir, 'runtime.json'), JSON.stringify({ pid: process.pid, url: server.url, config }));
      const local = { env: { DATA_DIR: dataDir }, defaultEndpoint: 'http://127.0.0.1:9' };

      // Act
      const list = await cli(['schedules', 'list', '--json'], local);
      const run = await cli(['schedules', 'run', 'hourly-echo', '--json'], local);
      const other = await cli(['schedules', 'run', 'nightly-payments-reconciliation'], local);
      const given = await cli(['schedules', 'list', '--json', '--config', 'config/default.json'], local);

      // Assess
      expect(list.stderr).toBe('');
      expect((JSON.parse(list.stdout) as { name: string }[]).map((row) => row.name)).toEqual(['hourly-echo']);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ tenantId: 'ops', type: 'demo.echo' });
      expect(other.code).toBe(2);
      expect(other.stderr).toContain('No schedule "nightly-payments-reconciliation"');
      expect((JSON.parse(given.stdout) as { name: string }[]).map((row) => row.name)).toEqual([
        'nightly-payments-reconciliation',
      ]);
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('takes a --config it cannot read as a usage error (exit 2), as --payload @file does', async () => {
      // Act
      const missing = await cli(['schedules', 'list', '--config', 'no/such/config.json']);
      // Assess
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/Cannot read configuration file .*no\/such\/config\.json/);
      expect(missing.stderr).toMatch(/tasks schedules --help/);
    });

    it('says how to point it when no runtime is found and nothing answers on the default port', async () => {
      // Prepare: runtime.json left by a runtime that was killed (its pid is gone).
      const dataDir = mkdtempSync(join(tmpdir(), 'cli-runtime-'));
      writeFileSync(join(dataDir, 'runtime.json'), JSON.stringify({ pid: 2 ** 22 + 1, url: server.url }));

      // Act
      const run = await cli(['watch', '--once'], { env: { DATA_DIR: dataDir }, defaultEndpoint: 'http://127.0.0.1:9' });
      const get = await cli(['get', 'tsk_1'], { env: { DATA_DIR: dataDir }, defaultEndpoint: 'http://127.0.0.1:9' });
      const given = await cli(['get', 'tsk_1', '--endpoint', 'http://127.0.0.1:9']);

      // Assess
      expect(run.code).toBe(1);
      expect(run.stdout).toContain('Cannot reach the scheduler at http://127.0.0.1:9');
      expect(run.stdout).toContain(
        `No local runtime found at ${join(dataDir, 'runtime.json')} and none answers on http://127.0.0.1:9: start one (npm start, or tasks dev), run this where it runs (or with its DATA_DIR), or point the CLI at the API: --endpoint URL or SCHEDULER_ENDPOINT=URL.`,
      );
      expect(get.code).toBe(1);
      expect(get.stderr).toContain(`No local runtime found at ${join(dataDir, 'runtime.json')}`);
      expect(given.stderr).not.toContain('No local runtime found');
      rmSync(dataDir, { recursive: true, force: true });
    });
  });

  describe('The process (bin/cli.ts)', () => {
    it('ends quietly when the reader of its output goes away (`tasks list --all --json | head`, issue 28)', async () => {
      // Prepare: tasks to list, and a reader that has closed its end before the first write.
      for (let i = 0; i < 3; i++) await cli(['submit', '--tenant', 'piped', '--type', 'demo.echo']);
      const child = spawn(
        process.execPath,
        ['--experimental-strip-types', '--no-warnings', 'bin/cli.ts', 'list', '--tenant', 'piped', '--all', '--json'],
        { env: { ...process.env, SCHEDULER_ENDPOINT: server.url }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });

      // Act
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

      // Assess
      expect(stderr).toBe('');
      expect(code).toBe(0);
    });
  });

  describe('Commands: get, list, cancel, retry', () => {
    it('follows a task through get, cancel and retry', async () => {
      // Prepare
      const submitted = JSON.parse(
        (await cli(['submit', '--tenant', 'cli-b', '--type', 'demo.echo', '--delay', '3600', '--json'])).stdout,
      ) as { taskId: string };

      // Act
      const got = await cli(['get', submitted.taskId]);
      const cancelled = await cli(['cancel', submitted.taskId]);
      const retried = await cli(['retry', submitted.taskId, '--json']);

      // Assess
      expect(got.code).toBe(0);
      expect(got.stdout).toMatch(/^state\s+QUEUED$/m);
      expect(got.stdout).toMatch(/^waiting\s+delayed: Not eligible before /m);
      expect(cancelled).toMatchObject({ code: 0, stdout: `Cancelled ${submitted.taskId}\n` });
      expect(retried.code).toBe(0);
      expect(JSON.parse(retried.stdout)).toMatchObject({ taskId: submitted.taskId, state: 'QUEUED' });
    });

    it('lists one page, or every page with --all', async () => {
      // Prepare
      for (let i = 0; i < 3; i++)
        await cli(['submit', '--tenant', 'cli-list', '--type', 'demo.echo', '--delay', '3600']);

      // Act
      const page = await cli(['list', '--tenant', 'cli-list', '--limit', '2', '--json']);
      const all = await cli(['list', '--tenant', 'cli-list', '--limit', '2', '--all', '--json']);
      const human = await cli(['list', '--tenant', 'cli-list', '--limit', '2']);

      // Assess
      const first = JSON.parse(page.stdout) as { items: unknown[]; nextCursor?: string };
      expect(first.items).toHaveLength(2);
      expect(first.nextCursor).toEqual(expect.any(String));
      expect((JSON.parse(all.stdout) as { items: unknown[] }).items).toHaveLength(3);
      expect(human.stdout).toMatch(/^TASK\s+STATE\s+TYPE\s+PRIORITY\s+ATTEMPTS\s+SUBMITTED$/m);
      expect(human.stdout).toContain('(more: use --all, or a larger --limit)');
    });
  });

  describe('Command: tenants', () => {
    it('sets and gets a tenant', async () => {
      // Act
      const set = await cli(['tenants', 'set', 'cli-t', '--weight', '2.5', '--max-concurrency', '4']);
      const got = await cli(['tenants', 'get', 'cli-t', '--json']);

      // Assess
      expect(set.code).toBe(0);
      expect(set.stdout).toMatch(/^weight\s+2\.5$/m);
      expect(JSON.parse(got.stdout)).toMatchObject({
        tenantId: 'cli-t',
        weight: 2.5,
        maxConcurrency: 4,
        source: 'stored',
      });
    });

    it('sets a start-rate limit, pauses and resumes a tenant, and shows them in get', async () => {
      // Act
      await cli([
        'tenants',
        'set',
        'cli-p',
        '--weight',
        '1',
        '--max-concurrency',
        '4',
        '--max-starts-per-second',
        '4',
        '--burst',
        '4',
      ]);
      const paused = await cli(['tenants', 'pause', 'cli-p']);
      const reset = await cli([
        'tenants',
        'set',
        'cli-p',
        '--weight',
        '2',
        '--max-concurrency',
        '4',
        '--max-starts-per-second',
        '4',
      ]);
      const got = await cli(['tenants', 'get', 'cli-p']);
      const resumed = await cli(['tenants', 'resume', 'cli-p', '--json']);

      // Assess: the pause survives a set (it has its own subcommands); the limit shows in get
      expect(paused.code).toBe(0);
      expect(paused.stdout).toMatch(/^paused\s+yes, by local at /m);
      expect(reset.stdout).toMatch(/^paused\s+yes/m);
      expect(got.stdout).toMatch(/^start rate\s+4 starts\/s, burst 4$/m);
      expect(got.stdout).toMatch(/^paused\s+yes, by local/m);
      expect(JSON.parse(resumed.stdout)).toMatchObject({
        tenantId: 'cli-p',
        weight: 2,
        maxStartsPerSecond: 4,
        paused: false,
      });
    });

    it('resets a tenant paused from the configuration: its stored settings go, and it follows the file again', async () => {
      // Act
      await cli(['tenants', 'pause', 'cli-r']);
      const stored = await cli(['tenants', 'get', 'cli-r', '--json']);
      const reset = await cli(['tenants', 'reset', 'cli-r', '--json']);
      // Assess
      expect(JSON.parse(stored.stdout)).toMatchObject({ source: 'stored', paused: true });
      expect(reset.code).toBe(0);
      expect(JSON.parse(reset.stdout)).toMatchObject({ tenantId: 'cli-r', source: 'default' });
      expect(JSON.parse(reset.stdout)).not.toHaveProperty('paused');
    });
  });

  describe('Command: types', () => {
    it('pauses, lists and resumes a task type', async () => {
      // Act
      const paused = await cli(['types', 'pause', 'demo.sleep']);
      const listed = await cli(['types', 'list', '--json']);
      const resumed = await cli(['types', 'resume', 'demo.sleep']);

      // Assess
      expect(paused.code).toBe(0);
      expect(paused.stdout).toMatch(/^demo\.sleep\s+yes\s+local\s+/m);
      const sleep = (JSON.parse(listed.stdout) as { type: string; paused: boolean }[]).find(
        (t) => t.type === 'demo.sleep',
      );
      expect(sleep).toMatchObject({ paused: true, pausedBy: 'local' });
      expect(resumed.stdout).toMatch(/^demo\.sleep\s+no\s+/m);
    });
  });

  describe('Command: redrive', () => {
    it('exits 2 naming the resource variables it needs', async () => {
      // Act
      const run = await cli(['redrive', '--mode', 'settle']);

      // Assess
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('Set QUEUE_URLS, TASKS_TABLE, CONTROL_TABLE');
    });

    it('names the source queue ids it takes when --queues names another (a dead-letter queue, a typo)', async () => {
      // Act
      const run = await cli(['redrive', '--queues', 'worker-lambda-dlq'], {
        env: { QUEUE_URLS: JSON.stringify({ 'worker-lambda': 'http://127.0.0.1:1/q' }) },
      });

      // Assess
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        'No dead-letter queue for: worker-lambda-dlq (--queues takes source queue ids: tier-critical, tier-high, tier-normal, tier-low, worker-lambda, worker-fargate)',
      );
    });

    it('moves dead letters back to their source queue', async () => {
      // Prepare
      const emulators = await startEmulators();
      try {
        await emulators.clients.sqs.send(
          new SendMessageCommand({
            QueueUrl: emulators.queueUrls['tier-normal-dlq'],
            MessageBody: '{"taskId":"tsk_x"}',
          }),
        );

        // The AWS settings reach the SDK's default chain through the process environment, as a user's would.
        vi.stubEnv('AWS_ENDPOINT_URL_SQS', emulators.sqsUrl);
        vi.stubEnv('AWS_REGION', 'us-east-1');
        vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
        vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');

        // Act
        const run = await cli(['redrive', '--queues', 'tier-normal', '--json'], {
          env: { QUEUE_URLS: JSON.stringify(emulators.queueUrls) },
        });

        // Assess
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        const report = JSON.parse(run.stdout) as { mode: string; queues: { sourceQueueId: string; errors: number }[] };
        expect(report).toMatchObject({ mode: 'move', queues: [{ sourceQueueId: 'tier-normal', errors: 0 }] });
      } finally {
        vi.unstubAllEnvs();
        await emulators.stop();
      }
    });
  });

  describe('Command: redrive, a sharded stack', () => {
    it("redrives every shard's dead-letter queues from a function's environment (QUEUE_URL_PREFIX)", async () => {
      // Prepare: two scheduler shards; a function's environment names shard 0's queues and the
      // prefix of the others' (lib/task-scheduler-stack.ts: they would not fit Lambda's 4 KB).
      const emulators = await startEmulators({ shards: 2 });
      try {
        await emulators.clients.sqs.send(
          new SendMessageCommand({
            QueueUrl: emulators.queueUrls['tier-normal-s1-dlq'],
            MessageBody: '{"taskId":"tsk_x"}',
          }),
        );
        const normalDlq = emulators.queueUrls['tier-normal-dlq']!;
        const env = {
          QUEUE_URLS: JSON.stringify(
            Object.fromEntries(Object.entries(emulators.queueUrls).filter(([id]) => !/-s\d+(-dlq)?$/.test(id))),
          ),
          QUEUE_URL_PREFIX: normalDlq.slice(0, normalDlq.length - 'tier-normal-dlq'.length),
          SCHEDULER_CONFIG_JSON: JSON.stringify({ scheduler: { shards: 2 } }),
          TASKS_TABLE: emulators.tables.tasks!,
          CONTROL_TABLE: emulators.tables.control!,
        };
        vi.stubEnv('AWS_ENDPOINT_URL_SQS', emulators.sqsUrl);
        vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', emulators.dynamodbUrl);
        vi.stubEnv('AWS_REGION', 'us-east-1');
        vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
        vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');

        // Act
        const moved = await cli(['redrive', '--json'], { env });
        const settled = await cli(['redrive', '--mode', 'settle', '--json'], { env });

        // Assess: shard 1's dead letter moved back; settle reaches shard 1's queues too (it
        // stopped at "No URL for queue tier-critical-s1-dlq" before).
        expect(moved.stderr).toBe('');
        expect(moved.code).toBe(0);
        const ids = (run: { stdout: string }) =>
          (JSON.parse(run.stdout) as { queues: { sourceQueueId: string }[] }).queues.map((q) => q.sourceQueueId);
        expect(ids(moved)).toContain('tier-normal-s1');
        expect(JSON.parse(moved.stdout).queues).toContainEqual(
          expect.objectContaining({ sourceQueueId: 'tier-normal-s1', moved: 1, errors: 0 }),
        );
        expect(settled.stderr).toBe('');
        expect(settled.code).toBe(0);
        expect(ids(settled)).toContain('tier-critical-s1');
      } finally {
        vi.unstubAllEnvs();
        await emulators.stop();
      }
    });
  });

  describe('Command: watch', () => {
    it('prints one frame of tiers, pools, tenants and recent tasks with --once', async () => {
      // Act
      const run = await cli(['watch', '--once', '--tenants', 'cli-list']);

      // Assess
      expect(run.code).toBe(0);
      expect(run.stdout).not.toContain('\x1b[');
      expect(run.stdout).toMatch(/^TIERS\s+WAITING\s+HELD\s+OLDEST WAIT$/m);
      expect(run.stdout).toMatch(/^critical\s+\d+/m);
      expect(run.stdout).toMatch(/^lambda\s+\[.*\] \d+\/\d+ slots$/m);
      expect(run.stdout).toMatch(/^cli-list\s+\[/m);
      expect(run.stdout).toMatch(/^tsk_\w+\s+cli-list\s+demo\.echo\s+QUEUED\s+normal\s+delayed: /m);
    });

    it('prints the status object with --once --json', async () => {
      // Act
      const run = await cli(['watch', '--once', '--json']);

      // Assess
      expect(run.code).toBe(0);
      const status = JSON.parse(run.stdout) as { tiers: unknown[]; tenants: unknown[] };
      expect(status.tiers).toHaveLength(4);
    });

    it('cuts no line when its output is a pipe or a file (`tasks watch --once > status.txt`)', async () => {
      // Prepare: a queued task whose wait line is longer than a terminal's 100 columns.
      await cli(['submit', '--tenant', 'watch-piped-tenant-with-a-long-name', '--type', 'demo.echo', '--delay', '600']);
      const child = spawn(
        process.execPath,
        [
          '--experimental-strip-types',
          '--no-warnings',
          'bin/cli.ts',
          'watch',
          '--once',
          '--tenants',
          'watch-piped-tenant-with-a-long-name',
        ],
        { env: { ...process.env, SCHEDULER_ENDPOINT: server.url }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });

      // Act
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

      // Assess: the tenants' header and the task's wait are whole (they were cut at 100 columns).
      expect(code).toBe(0);
      expect(stdout).toMatch(/^TENANTS .* DONE 15 MIN$/m);
      const line = stdout.split('\n').find((l) => l.startsWith('tsk_')) ?? '';
      expect(line).toMatch(/delayed: Not eligible before \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(line.length).toBeGreaterThan(100);
    });

    it('redraws in place on a terminal until the signal stops it', async () => {
      // Prepare
      const controller = new AbortController();
      let frames = 0;
      let stdout = '';

      // Act
      const code = await runCli(['watch', '--interval', '0.2'], {
        stdout: (text) => {
          stdout += text;
          if (text.startsWith('\x1b[H\x1b[2J') && ++frames === 2) controller.abort();
        },
        stderr: () => {},
        env: { SCHEDULER_ENDPOINT: server.url },
        isTTY: true,
        columns: () => 80,
        signal: controller.signal,
      });

      // Assess
      expect(code).toBe(0);
      expect(frames).toBe(2);
      expect(stdout.startsWith('\x1b[?25l')).toBe(true);
      expect(stdout.endsWith('\x1b[?25h')).toBe(true);
    });
  });

  describe('Dependencies (issue 25)', () => {
    it('submits with --depends-on and shows the hold in get', async () => {
      // Prepare: a dependency that runs a while.
      const dependency = JSON.parse(
        (await cli(['submit', '--tenant', 'cli-deps', '--type', 'demo.sleep', '--payload', '{"ms":60000}', '--json']))
          .stdout,
      ) as { taskId: string };

      // Act
      const submitted = await cli([
        'submit',
        '--tenant',
        'cli-deps',
        '--type',
        'demo.echo',
        '--depends-on',
        dependency.taskId,
        '--json',
      ]);
      const { taskId } = JSON.parse(submitted.stdout) as { taskId: string };
      const run = await cli(['get', taskId]);
      await cli(['cancel', dependency.taskId]);

      // Assess
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`depends on  ${dependency.taskId}`);
      expect(run.stdout).toContain(`held on     ${dependency.taskId} (not yet SUCCEEDED)`);
      expect(run.stdout).toContain('waiting     dependencies: Held until its dependency');
    });
  });
});
