/**
 * `npm run sim -- replay` (sim/replay.ts) and its trace format (runtime/ops/trace-file.ts).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTraceFile, TraceFileError } from '../../runtime/ops/trace-file.ts';
import { ReplayUsageError, replay, runReplayCommand } from '../../sim/replay.ts';

/** 4 slots; 4 tenants queue 20 tasks of 2 s at 0; a quiet tenant submits one 1 s task at 10 s. */
const crowdTrace = () => ({
  config: { pools: { lambda: { concurrency: 4 }, fargate: { vcpu: 4, memoryMiB: 8192 } } },
  tenants: { quiet: { weight: 1, maxConcurrency: 5 } },
  tasks: [
    ...Array.from({ length: 80 }, (_, i) => ({
      id: `c${i}`,
      tenantId: `crowd-${i % 4}`,
      submitSeconds: 0,
      runSeconds: 2,
      timeoutSeconds: 10,
      note: 'other keys are ignored',
    })),
    { id: 'quiet', tenantId: 'quiet', submitSeconds: 10, runSeconds: 1, timeoutSeconds: 10 },
  ],
});

const write = (value: unknown) => {
  const dir = mkdtempSync(join(tmpdir(), 'replay-'));
  const file = join(dir, 'trace.json');
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
  return file;
};

describe('Function: parseTraceFile', () => {
  it('fills what a task leaves out from the configuration, as a submit would', () => {
    // Act
    const file = parseTraceFile(
      {
        config: { taskDefaults: { priority: 'high', timeoutSeconds: 60 } },
        tasks: [{ id: 'a', tenantId: 't', submitSeconds: 0, runSeconds: 1 }],
      },
      'test',
    );
    // Assess
    expect(file.tasks[0]).toEqual({
      id: 'a',
      tenantId: 't',
      priority: 'high',
      runtime: 'lambda',
      resources: { vcpu: 0.25, memoryMiB: 512 },
      submitSeconds: 0,
      runSeconds: 1,
      timeoutSeconds: 60,
    });
  });

  it('names every problem by its path, and refuses an id given twice', () => {
    // Act & Assess
    expect(() => parseTraceFile({ tasks: [{ id: 'x', runSeconds: -1 }] }, 'bad.json')).toThrow(
      /tasks\.0\.tenantId: .*\n {2}tasks\.0\.submitSeconds: .*\n {2}tasks\.0\.runSeconds: /,
    );
    expect(() => parseTraceFile({ tasks: {} }, 'bad.json')).toThrow(TraceFileError);
    const twice = { id: 'a', tenantId: 't', submitSeconds: 0, runSeconds: 1 };
    expect(() => parseTraceFile({ tasks: [twice, twice] }, 'bad.json')).toThrow(/tasks\.1\.id: "a" appears twice/);
    expect(() => parseTraceFile({ config: { policy: 'lottery' }, tasks: [] }, 'bad.json')).toThrow(/policy/);
  });

  it('takes a proposed configuration instead of the trace’s, its tenants winning over the trace’s', () => {
    // Act
    const file = parseTraceFile(crowdTrace(), 'test', { tenants: { quiet: { weight: 4, maxConcurrency: 2 } } });
    // Assess
    expect(file.config.pools.lambda.concurrency).toBe(50);
    expect(file.tenants.quiet).toEqual({ weight: 4, maxConcurrency: 2 });
  });
});

describe('Function: replay', () => {
  it('starts a quiet tenant’s task after one task of each backlogged tenant, within the bound the API would have given', () => {
    // Act
    const result = replay(parseTraceFile(crowdTrace(), 'test'));
    // Assess
    const quiet = result.tasks.find((task) => task.id === 'quiet');
    const startedBefore = result.tasks.filter(
      (task) => task.startSeconds !== null && task.startSeconds > 10 && task.startSeconds < (quiet?.startSeconds ?? 0),
    );
    expect(quiet?.boundSeconds).toBeGreaterThan(0);
    expect((quiet?.startSeconds as number) - 10).toBeLessThanOrEqual(quiet?.boundSeconds as number);
    expect(startedBefore.length).toBeLessThanOrEqual(4);
    expect(result.summary.bounds.brokenWhileTenantQuiet).toBe(0);
    expect(result.summary.started).toBe(81);
  });

  it('runs the round-robin baseline on the same arrivals, without bounds', () => {
    // Act
    const result = replay(parseTraceFile(crowdTrace(), 'test'), 'round-robin');
    // Assess
    expect(result.dispatcher).toBe('round-robin');
    expect(result.tasks.every((task) => task.boundSeconds === null)).toBe(true);
    expect(result.summary.started).toBe(81);
  });

  it('shows what a proposed configuration would change (what-if: a fifth slot)', () => {
    // Act
    const now = replay(parseTraceFile(crowdTrace(), 'test'));
    const proposed = replay(
      parseTraceFile(crowdTrace(), 'test', {
        pools: { lambda: { concurrency: 8 }, fargate: { vcpu: 4, memoryMiB: 8192 } },
      }),
    );
    // Assess: twice the slots, about half the crowd's wait
    expect(proposed.summary.waitSeconds.max).toBeLessThan(now.summary.waitSeconds.max * 0.6);
  });
});

describe('Function: runReplayCommand', () => {
  it('prints one JSON object with each task’s submit, start and bound', () => {
    // Prepare
    let out = '';
    // Act
    const code = runReplayCommand(['--trace', write(crowdTrace()), '--json'], (text) => {
      out += text;
    });
    // Assess
    const parsed = JSON.parse(out) as { tasks: Record<string, unknown>[] };
    expect(code).toBe(0);
    expect(parsed.tasks).toHaveLength(81);
    expect(Object.keys(parsed.tasks[0] ?? {}).sort()).toEqual([
      'boundSeconds',
      'id',
      'startSeconds',
      'submitSeconds',
      'tenantId',
    ]);
  });

  it('refuses what it cannot use, in one line each', () => {
    const run = (argv: string[]) => () => runReplayCommand(argv, () => {});
    expect(run([])).toThrow(ReplayUsageError);
    expect(run(['--trace', '/nonexistent/trace.json'])).toThrow(/--trace: cannot read/);
    expect(run(['--trace', write('{not json')])).toThrow(/is not JSON/);
    expect(run(['--trace', write({ tasks: 3 })])).toThrow(/Invalid trace .*\n {2}tasks:/);
    expect(run(['--trace', write(crowdTrace()), '--baseline', 'lottery'])).toThrow(/--baseline must be one of/);
    expect(
      run(['--trace', write(crowdTrace()), '--config', write({ pools: { lambda: { concurrency: -1 } } })]),
    ).toThrow(/pools\.lambda\.concurrency/);
  });
});
