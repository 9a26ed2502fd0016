/**
 * `npm start` against an AWS-compatible endpoint (issue 23): with AWS_ENDPOINT_URL set, the whole
 * local system keeps its tables, queues and the examples' bucket at that endpoint instead of the
 * embedded emulators, creating them where missing, and says so at start. Run against moto_server
 * where it is installed (pyenv's Python on CI's machines and this project's); elsewhere one line
 * says it did not run. The settings themselves are checked everywhere.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { ListQueuesCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { describeExternalAws, externalAwsFromEnvironment } from '../../local/external-aws.ts';
import { createAwsClients } from '../../runtime/adapters/aws-clients.ts';
import { QUEUES, TASKS_TABLE } from '../../runtime/infra/resources.ts';
import { createTableInput } from '../../runtime/infra/table-input.ts';
import { findMotoServer, MOTO_CREDENTIALS, type MotoServer, startMotoServer } from '../helpers/moto-server.ts';
import { notRunLine } from '../helpers/python-tools.ts';
import { type LocalProcess, listeningSockets, startLocal } from './local-process.ts';

describe('externalAwsFromEnvironment', () => {
  it('is off without endpoint variables, and when the SDK is told to ignore them', () => {
    expect(externalAwsFromEnvironment({})).toBeUndefined();
    expect(
      externalAwsFromEnvironment({
        AWS_ENDPOINT_URL: 'http://localhost:5000',
        AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true',
      }),
    ).toBeUndefined();
  });

  it('takes each service from its own variable over AWS_ENDPOINT_URL, the region, and dummy credentials only when none are set', () => {
    const external = externalAwsFromEnvironment({
      AWS_ENDPOINT_URL: 'http://localhost:4566',
      AWS_ENDPOINT_URL_S3: 'http://s3.localhost.localstack.cloud:4566',
      AWS_REGION: 'eu-west-1',
    });
    expect(external).toEqual({
      dynamodb: 'http://localhost:4566',
      sqs: 'http://localhost:4566',
      s3: 'http://s3.localhost.localstack.cloud:4566',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      variables: ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3'],
    });
    expect(describeExternalAws(external!)).toBe(
      "AWS endpoint DynamoDB http://localhost:4566, SQS http://localhost:4566, S3 http://s3.localhost.localstack.cloud:4566 (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3), region eu-west-1, dummy credentials (none set): tables, queues and the examples' bucket live there, created where missing; the embedded emulators are not started",
    );
    const withProfile = externalAwsFromEnvironment({ AWS_ENDPOINT_URL: 'http://localhost:4566', AWS_PROFILE: 'dev' });
    expect(withProfile?.credentials).toBeUndefined();
    expect(withProfile?.region).toBe('us-east-1');
  });

  it('refuses a partial set of services, naming what is missing, and an endpoint that is no URL', () => {
    expect(() =>
      externalAwsFromEnvironment({
        AWS_ENDPOINT_URL_DYNAMODB: 'http://localhost:8000',
        AWS_ENDPOINT_URL_SQS: 'http://localhost:9324',
      }),
    ).toThrow(
      'npm start runs DynamoDB, SQS and S3 at one place: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS is set but not AWS_ENDPOINT_URL_S3 (set AWS_ENDPOINT_URL for all of them)',
    );
    expect(() => externalAwsFromEnvironment({ AWS_ENDPOINT_URL: 'localhost:4566' })).toThrow(
      'AWS_ENDPOINT_URL must be an http(s) URL, got "localhost:4566"',
    );
  });
});

const moto = findMotoServer();

describe('npm start with AWS_ENDPOINT_URL (moto_server)', () => {
  if (!moto.found) {
    console.log(notRunLine('npm start against moto_server', moto));
    it('moto_server is not installed here, and the reason is one the locator gives', () => {
      expect(moto.reason).toMatch(/no moto_server on PATH|failed \(/);
    });
    return;
  }
  const command = moto.command;
  const root = mkdtempSync(join(tmpdir(), 'external-endpoint-'));
  const started: LocalProcess[] = [];
  let server: MotoServer | undefined;
  afterAll(async () => {
    for (const local of started) local.kill('SIGKILL');
    await Promise.all(started.map((local) => local.exited));
    await server?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  // Two starts and a dozen tasks: minutes on a loaded machine.
  it('serves the API and runs tasks to SUCCEEDED exactly once with the tables and queues at the endpoint, and a restart finds them there', {
    timeout: 20 * 60_000,
  }, async () => {
    // Prepare: moto on loopback, named by IP as a user would type it.
    server = await startMotoServer(command);
    const endpoint = `http://127.0.0.1:${server.port}`;
    const env: Record<string, string> = {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: 'eu-west-1',
      DATA_DIR: join(root, 'data'),
      // The check below counts each attempt's RUNNING line, logged at debug since issue 28.
      LOG_LEVEL: 'debug',
    };
    // No credentials of the machine's own: the start supplies dummy ones.
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'])
      env[name] = '';

    // A task table written by an older version, one index short: the start must add it.
    const setup = createAwsClients({
      region: 'eu-west-1',
      credentials: {
        accessKeyId: MOTO_CREDENTIALS.AWS_ACCESS_KEY_ID,
        secretAccessKey: MOTO_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
      },
      dynamodb: endpoint,
      sqs: endpoint,
      s3: endpoint,
    });
    const full = createTableInput(TASKS_TABLE, 'scheduler-tasks');
    const older = createTableInput({ ...TASKS_TABLE, indexes: TASKS_TABLE.indexes.slice(0, -1) }, 'scheduler-tasks');
    await setup.dynamodb.send(new CreateTableCommand(older));

    // Act: start, then tasks through every path (Lambda pool and its 2,048 MB class, Fargate
    // pool, a retry, an example writing S3).
    const local = await startLocal({ env, startTimeoutMs: 5 * 60_000 });
    started.push(local);
    const specs = [
      ...Array.from({ length: 6 }, (_, i) => ({
        tenantId: i % 2 ? 'acme' : 'globex',
        type: 'demo.echo',
        payload: { i },
      })),
      { tenantId: 'acme', type: 'demo.sleep', payload: { ms: 100 }, resources: { memoryMiB: 1536 } },
      { tenantId: 'globex', type: 'demo.echo', payload: { pool: 'fargate' }, runtime: 'fargate' },
      { tenantId: 'acme', type: 'demo.fail', payload: { failTimes: 1 }, maxAttempts: 3 },
      {
        tenantId: 'acme',
        type: 'examples.weekly-sales-report',
        payload: { restaurantId: 'r-001', weekStart: '2026-11-23' },
      },
    ];
    const ids: string[] = [];
    for (const spec of specs) {
      const response = await fetch(`${local.url}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(spec),
      });
      expect(response.status).toBe(202);
      ids.push(((await response.json()) as { taskId: string }).taskId);
    }
    const settled = await Promise.all(ids.map((id) => waitSettled(local.url, id)));

    // Assess: said so at start; no emulator listens (only the HTTP API).
    expect(local.output()).toContain(
      `AWS endpoint ${endpoint} (AWS_ENDPOINT_URL), region eu-west-1, dummy credentials (none set): tables, queues and the examples' bucket live there, created where missing; the embedded emulators are not started`,
    );
    const apiPort = Number(new URL(local.url).port);
    expect(listeningSockets(local.child.pid!).map((socket) => socket.port)).toEqual([apiPort]);
    // Every task SUCCEEDED, its handler started once per attempt (twice for the retried one).
    expect(settled.map((task) => task.state)).toEqual(specs.map(() => 'SUCCEEDED'));
    expect(settled.map((task) => task.attempts)).toEqual(specs.map((spec) => (spec.type === 'demo.fail' ? 2 : 1)));
    for (const [index, id] of ids.entries()) {
      const runs = local
        .output()
        .split('\n')
        .filter((line) => line.includes('task RUNNING') && line.includes(`taskId=${id}`));
      expect(runs, id).toHaveLength(settled[index]!.attempts);
    }
    // A batch (issue 25): moto's PartiQL cannot parse the parameterised INSERT a batch's creates
    // are sent as, so they go one conditional PutItem each (docs/deploy.md); the same batch again
    // finds them, and each runs once.
    const batchBody = JSON.stringify({
      tasks: [0, 1, 2].map((i) => ({ tenantId: 'acme', type: 'demo.echo', payload: { batch: i } })),
    });
    const submitBatch = async () => {
      const response = await fetch(`${local.url}/v1/tasks/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: batchBody,
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { results: { taskId: string; created: boolean }[] }).results;
    };
    const batchFirst = await submitBatch();
    const batchAgain = await submitBatch();
    expect(batchFirst.map((result) => result.created)).toEqual([true, true, true]);
    expect(batchAgain.map((result) => [result.taskId, result.created])).toEqual(
      batchFirst.map((result) => [result.taskId, false]),
    );
    const batchSettled = await Promise.all(batchFirst.map((result) => waitSettled(local.url, result.taskId)));
    expect(batchSettled.map((task) => [task.state, task.attempts])).toEqual(batchFirst.map(() => ['SUCCEEDED', 1]));

    // The tables (the older one with the index it lacked), queues and objects are at the endpoint,
    // in the region asked for.
    const clients = setup;
    const table = await clients.dynamodb.send(new DescribeTableCommand({ TableName: 'scheduler-tasks' }));
    expect((table.Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName).sort()).toEqual(
      full.GlobalSecondaryIndexes!.map((index) => index.IndexName).sort(),
    );
    expect(local.output()).not.toContain('Cannot set up');
    const item = await clients.documents.send(
      new GetCommand({ TableName: 'scheduler-tasks', Key: { taskId: ids[0] }, ConsistentRead: true }),
    );
    expect(item.Item?.state).toBe('SUCCEEDED');
    const queues = (await clients.sqs.send(new ListQueuesCommand({}))).QueueUrls ?? [];
    for (const queue of QUEUES)
      expect(
        queues.some((url) => url.endsWith(`/${queue.id}`)),
        queue.id,
      ).toBe(true);
    const report = settled.at(-1)!.result as { bucket: string; key: string };
    const object = await clients.s3.send(new GetObjectCommand({ Bucket: report.bucket, Key: report.key }));
    expect(JSON.parse(await object.Body!.transformToString())).toMatchObject({ restaurantId: 'r-001' });

    // A stop and a second start against the same endpoint: the tables are found, not remade.
    local.kill('SIGTERM');
    expect(await local.exited).toBe(0);
    const again = await startLocal({ env, startTimeoutMs: 5 * 60_000 });
    started.push(again);
    const first = await (await fetch(`${again.url}/v1/tasks/${ids[0]}`)).json();
    expect(first).toMatchObject({ taskId: ids[0], state: 'SUCCEEDED' });
    again.kill('SIGTERM');
    expect(await again.exited).toBe(0);
    clients.dynamodb.destroy();
    clients.sqs.destroy();
    clients.s3.destroy();
  });
});

async function waitSettled(url: string, taskId: string): Promise<{ state: string; attempts: number; result: unknown }> {
  for (;;) {
    const task = (await (await fetch(`${url}/v1/tasks/${taskId}`)).json()) as {
      state: string;
      attempts: number;
      result: unknown;
    };
    if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(task.state)) return task;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
