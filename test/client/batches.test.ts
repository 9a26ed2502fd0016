/**
 * Batches from the tools (issue 25): SchedulerClient.submitBatch splits a large array into
 * requests and keeps the input order; `tasks submit --file tasks.ndjson` shows its progress
 * (a bar on a terminal, plain lines otherwise) and names refused lines.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { progressLine } from '../../client/cli/commands/submit-file.ts';
import { SchedulerClient } from '../../index.ts';
import type { LocalServer } from '../../local/server.ts';
import { cliAgainst, startQuietServer } from './local-server.ts';

let server: LocalServer;
let client: SchedulerClient;
beforeAll(async () => {
  server = await startQuietServer();
  client = new SchedulerClient({ endpoint: server.url });
});
afterAll(async () => {
  await server.stop();
});

const cli = cliAgainst(() => server.url);

describe('Method: submitBatch', () => {
  it('splits an array into requests and answers in input order, a bad item in its place', async () => {
    // Prepare: 7 tasks, requests of 3, the fifth refused
    const tasks = Array.from({ length: 7 }, (_, n) => ({ tenantId: 'sdk-batch', type: 'demo.echo', payload: { n } }));
    tasks[4] = { ...tasks[4]!, type: 'demo.nope' };
    const progress: number[] = [];

    // Act
    const result = await client.submitBatch(tasks, { chunkSize: 3, onProgress: (done) => progress.push(done) });
    const again = await client.submitBatch(tasks, { chunkSize: 3 });

    // Assess
    expect(result.batches.map(({ from, count }) => [from, count])).toEqual([
      [0, 3],
      [3, 3],
      [6, 1],
    ]);
    expect(result.results.map((item) => ('error' in item ? item.error.code : item.state))).toEqual([
      'QUEUED',
      'QUEUED',
      'QUEUED',
      'QUEUED',
      'unknown_task_type',
      'QUEUED',
      'QUEUED',
    ]);
    expect(progress.sort((a, b) => a - b)).toEqual([3, 6, 7]);
    const ids = (r: typeof result) => r.results.map((item) => ('taskId' in item ? item.taskId : item.error.code));
    expect(ids(again)).toEqual(ids(result));
    const batch = await client.getBatch(result.batches[1]!.batchId);
    expect(batch).toMatchObject({ tenantId: 'sdk-batch', total: 3 });
    expect(batch.counts?.excluded).toBe(1);
    const listed = await client.listBatches({ tenantId: 'sdk-batch' });
    expect(listed.items.map((b) => b.batchId).sort()).toEqual(result.batches.map((b) => b.batchId).sort());
  });

  it('answers each item of a request whose every item is refused, which makes no batch', async () => {
    // Prepare: requests of 2; the second holds only refused items.
    const tasks = [
      { tenantId: 'sdk-batch-3', type: 'demo.echo' },
      { tenantId: 'sdk-batch-3', type: 'demo.echo' },
      { tenantId: 'sdk-batch-3', type: 'demo.nope' },
      { tenantId: 'sdk-batch-3', type: 'demo.nope' },
    ];

    // Act
    const result = await client.submitBatch(tasks, { chunkSize: 2 });

    // Assess
    expect(result.results.map((item) => ('error' in item ? item.error.code : item.state))).toEqual([
      'QUEUED',
      'QUEUED',
      'unknown_task_type',
      'unknown_task_type',
    ]);
    expect(result.batches.map(({ from, count }) => [from, count])).toEqual([[0, 2]]);
    expect((await client.listBatches({ tenantId: 'sdk-batch-3' })).items).toHaveLength(1);
  });

  it('refuses a then-task for more tasks than one request holds, before sending anything', async () => {
    const tasks = Array.from({ length: 3 }, () => ({ tenantId: 'sdk-batch-2', type: 'demo.echo' }));
    await expect(
      client.submitBatch(tasks, { chunkSize: 2, thenTask: { tenantId: 'sdk-batch-2', type: 'demo.echo' } }),
    ).rejects.toThrow('A then-task needs all its tasks in one batch request');
    expect((await client.listBatches({ tenantId: 'sdk-batch-2' })).items).toEqual([]);
  });

  it("sends a traceparent with every request, as submit does, so the batch continues the caller's trace", async () => {
    // Prepare
    const sent: (string | null)[] = [];
    const spy: typeof fetch = async (input, init) => {
      sent.push(new Headers(init?.headers).get('traceparent'));
      return fetch(input, init);
    };
    const traced = new SchedulerClient({ endpoint: server.url, fetch: spy });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const tasks = Array.from({ length: 3 }, (_, n) => ({
      tenantId: 'sdk-batch-traced',
      type: 'demo.echo',
      payload: { n },
    }));

    // Act
    const { results } = await traced.submitBatch(tasks, { chunkSize: 2, traceparent });

    // Assess
    expect(results).toHaveLength(3);
    expect(sent).toEqual([traceparent, traceparent]);
  });

  it('refuses a then-task with no tasks, which no batch would ever run, before sending anything', async () => {
    // The API refuses a batch of no tasks (400); answering an empty result instead would leave
    // the caller waiting for a then-task that is never submitted.
    await expect(
      client.submitBatch([], { thenTask: { tenantId: 'sdk-batch-none', type: 'demo.echo' } }),
    ).rejects.toThrow('A then-task needs at least one task');
    expect((await client.listBatches({ tenantId: 'sdk-batch-none' })).items).toEqual([]);
    // Without a then-task, no tasks is simply nothing to submit.
    expect(await client.submitBatch([])).toEqual({ results: [], batches: [] });
  });
});

describe('Command: submit --file', () => {
  const file = [
    '{"type":"demo.echo","payload":{"n":1}}',
    '',
    '{"type":"demo.echo","payload":{"n":2},"priority":"urgent"}',
    '{"type":"demo.echo","payload":{"n":3}}',
  ].join('\n');
  const readFile = async (path: string) => (path === 'tasks.ndjson' ? file : Promise.reject(new Error('ENOENT')));

  it('submits every line in batches, prints progress lines off a terminal, and names refused lines', async () => {
    // Act
    const run = await cli(['submit', '--file', 'tasks.ndjson', '--tenant', 'cli-batch', '--chunk', '2'], { readFile });

    // Assess
    expect(run.code).toBe(1);
    // One line per request answered (two in flight: either may answer first), the last at 3/3
    expect(run.stderr).toMatch(/^submitted [12]\/3\nsubmitted 3\/3\n$/);
    expect(run.stdout).toMatch(
      /^Submitted 3 tasks in 2 batches \(bat_\S+, bat_\S+\): 2 created, 0 already there, 1 refused/,
    );
    expect(run.stdout).toContain('line 3: invalid_request');
  });

  it('says no batch was made, and names every line, when every line is refused', async () => {
    // Act
    const run = await cli(
      [
        'submit',
        '--file',
        'tasks.ndjson',
        '--tenant',
        'cli-batch-none',
        '--type',
        'demo.nope',
        '--then',
        '{"type":"demo.echo"}',
      ],
      { readFile: async () => '{}\n{}' },
    );

    // Assess
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /^No batch: all 2 tasks were refused, nothing was written \(--then not submitted\)\n {2}line 1: unknown_task_type: .*\n {2}line 2: unknown_task_type: /,
    );
  });

  it('draws a bar on a terminal', () => {
    expect(progressLine(3, 10, true)).toBe(`\r[${'#'.repeat(9)}${'.'.repeat(21)}]  3/10`);
    expect(progressLine(10, 10, true)).toBe(`\r[${'#'.repeat(30)}] 10/10`);
  });

  it('refuses a file that is not NDJSON, naming the line, before sending anything', async () => {
    const run = await cli(['submit', '--file', 'bad.ndjson', '--tenant', 'cli-batch'], {
      readFile: async () => '{"type":"demo.echo"}\n{nope',
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('bad.ndjson:2 is not valid JSON');
  });
});
