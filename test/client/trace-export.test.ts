/**
 * `tasks trace export` against the local runtime over HTTP, and the round trip: the file it
 * writes replays (`npm run sim -- replay`) task for task.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SchedulerClient } from '../../client/sdk/client.ts';
import type { LocalServer } from '../../local/server.ts';
import { parseTraceFile } from '../../runtime/ops/trace-file.ts';
import { replay } from '../../sim/replay.ts';
import { cliAgainst, startQuietServer } from './local-server.ts';

let server: LocalServer;

beforeAll(async () => {
  server = await startQuietServer();
});
afterAll(async () => {
  await server.stop();
});

const cli = cliAgainst(() => server.url);

describe('Command: tasks trace export', () => {
  it('writes the tasks that ran as a trace that replays task for task', async () => {
    // Prepare: two tenants' tasks, run to the end
    const client = new SchedulerClient({ endpoint: server.url });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const tenantId = i % 2 ? 'export-b' : 'export-a';
      const task = await client.submit({
        tenantId,
        type: 'demo.sleep',
        payload: { ms: 50 },
        priority: i % 3 ? 'normal' : 'high',
      });
      ids.push(task.taskId);
    }
    for (const id of ids) await client.waitFor(id, { timeoutMs: 60_000 });
    await client.putTenant('export-b', { weight: 3, maxConcurrency: 4 });
    const out = join(mkdtempSync(join(tmpdir(), 'trace-')), 'trace.json');
    // Act
    const run = await cli([
      'trace',
      'export',
      '--tenants',
      'export-a,export-b,export-none',
      '--since',
      '10m',
      '--out',
      out,
    ]);
    // Assess: the file (a tenant with no task in it is not counted)
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/6 tasks of 2 tenants written to/);
    const trace = JSON.parse(readFileSync(out, 'utf8')) as {
      config: { policy: string };
      tenants: Record<string, unknown>;
      tasks: { id: string; tenantId: string; priority: string; submitSeconds: number; runSeconds: number }[];
    };
    expect(trace.tasks.map((task) => task.id).sort()).toEqual([...ids].sort());
    expect(trace.tenants['export-b']).toEqual({ weight: 3, maxConcurrency: 4 });
    expect(trace.config.policy).toBe('fair-share');
    expect(Math.min(...trace.tasks.map((task) => task.submitSeconds))).toBe(0);
    expect(trace.tasks.every((task) => task.runSeconds >= 0.04)).toBe(true);
    // ...and the round trip
    const replayed = replay(parseTraceFile(trace, out));
    expect(replayed.tasks.map((task) => task.id).sort()).toEqual([...ids].sort());
    expect(replayed.summary.started).toBe(6);
    expect(replayed.tasks.find((task) => task.id === trace.tasks[0]?.id)?.submitSeconds).toBe(0);
  }, 120_000);

  it('refuses a --since it cannot read, and asks for a subcommand', async () => {
    // Act
    const since = await cli(['trace', 'export', '--since', 'yesterday']);
    const none = await cli(['trace']);
    // Assess
    expect(since.code).toBe(2);
    expect(since.stderr).toMatch(/--since must be a duration/);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/Give a subcommand: export/);
  });
});
