/**
 * `npm run sim -- replay --trace FILE [--json] [--baseline NAME] [--config FILE]`: the arrivals of
 * a trace (runtime/ops/trace-file.ts) through the scheduling engine as the scheduler runs it (its
 * configuration: policy, pools, tenants, quotas; holds of timeout + leases; EASY reservations), or
 * through one of the peers' orderings, with what the API would have said of each task at submit.
 * With --config, a proposed configuration over the same traffic (what-if).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatTable } from '../report/table.ts';
import { holdSecondsOf, taskHoldSeconds } from '../runtime/core/policy/index.ts';
import { tierRank } from '../runtime/core/task.ts';
import { parseTraceFile, type TraceFile, TraceFileError } from '../runtime/ops/trace-file.ts';
import { BASELINE_NAMES, type BaselineName } from './baselines.ts';
import { simulate } from './engine.ts';
import { assumptionsHeld, waitStats } from './metrics.ts';
import { type Trace, TraceBuilder } from './trace.ts';

export interface ReplayedTask {
  readonly id: string;
  readonly tenantId: string;
  readonly submitSeconds: number;
  /** When it started (null: never, e.g. bigger than its pool). */
  readonly startSeconds: number | null;
  /** The maxWaitSeconds the API would have reported at submit, or null. */
  readonly boundSeconds: number | null;
}

export interface ReplayResult {
  readonly dispatcher: string;
  readonly policy: string;
  readonly tasks: ReplayedTask[];
  readonly summary: {
    readonly tasks: number;
    readonly started: number;
    readonly waitSeconds: { readonly p50: number; readonly p99: number; readonly max: number };
    readonly bounds: { readonly given: number; readonly brokenWhileTenantQuiet: number };
    readonly tenants: {
      readonly tenantId: string;
      readonly tasks: number;
      readonly waitSeconds: { readonly p50: number; readonly p99: number; readonly max: number };
    }[];
  };
}

/** Replay a parsed trace; `baseline` runs a peer's ordering instead of the engine. */
export function replay(file: TraceFile, baseline?: BaselineName): ReplayResult {
  const { config } = file;
  // Sorted by submit time (ties in file order): the simulator's trace is in arrival order.
  const order = file.tasks
    .map((_, i) => i)
    .sort((a, b) => {
      const ta = file.tasks[a]!;
      const tb = file.tasks[b]!;
      return ta.submitSeconds - tb.submitSeconds || a - b;
    });
  const tenantIds = [...new Set(file.tasks.map((task) => task.tenantId))];
  const tenantIndex = new Map(tenantIds.map((id, i) => [id, i]));
  const settingsOf = (tenantId: string) => file.tenants[tenantId] ?? config.tenantDefaults;
  const builder = new TraceBuilder(file.tasks.length);
  for (const i of order) {
    const task = file.tasks[i]!;
    builder.push({
      tenant: tenantIndex.get(task.tenantId) as number,
      tier: tierRank(task.priority),
      fargate: task.runtime === 'fargate',
      vcpu: task.resources.vcpu,
      memoryMiB: task.resources.memoryMiB,
      arriveMs: task.submitSeconds * 1000,
      // A task that would outrun its timeout is stopped there.
      holdMs: Math.min(task.runSeconds, task.timeoutSeconds) * 1000,
      timeoutMs: task.timeoutSeconds * 1000,
    });
  }
  const trace: Trace = builder.build({
    scenario: 'replay',
    description: 'a recorded or given trace',
    tenantIds,
    tenantSettings: tenantIds.map(settingsOf),
    pools: config.pools,
    agingSeconds: config.agingSeconds,
  });
  const name = baseline ?? config.policy;
  const run = simulate(trace, name, undefined, {
    apiBounds: true,
    config,
    engine: {
      policy: config.policy,
      agingSeconds: config.agingSeconds,
      pools: config.pools,
      tenantDefaults: config.tenantDefaults,
      tenants: Object.fromEntries(tenantIds.map((id) => [id, settingsOf(id)])),
      maxHoldSeconds: holdSecondsOf(config),
    },
    holdSeconds: (task) => taskHoldSeconds(config, (trace.timeoutMs[task] as number) / 1000),
  });
  const round = (seconds: number) => Math.round(seconds * 1000) / 1000;
  const tasks: ReplayedTask[] = order.map((original, i) => {
    const task = file.tasks[original]!;
    const waitMs = run.waitMs[i] as number;
    const boundMs = run.boundMs?.[i];
    return {
      id: task.id,
      tenantId: task.tenantId,
      submitSeconds: task.submitSeconds,
      startSeconds: Number.isNaN(waitMs) ? null : round(task.submitSeconds + waitMs / 1000),
      boundSeconds: boundMs === undefined || Number.isNaN(boundMs) ? null : round(boundMs / 1000),
    };
  });
  // A bound is checked while its tenant submitted nothing more before the task started (A1).
  let brokenWhileTenantQuiet = 0;
  const nextSubmit = new Map<number, number>();
  const lastOf = new Map<string, number>();
  for (let i = tasks.length - 1; i >= 0; i--) {
    const task = tasks[i]!;
    const later = lastOf.get(task.tenantId);
    if (later !== undefined) nextSubmit.set(i, tasks[later]!.submitSeconds);
    lastOf.set(task.tenantId, i);
  }
  tasks.forEach((task, i) => {
    if (task.boundSeconds === null || task.startSeconds === null) return;
    if ((nextSubmit.get(i) ?? Number.POSITIVE_INFINITY) < task.startSeconds) return;
    // A bound on the pool's pace is judged only while the pool kept that pace (its assumedFreed).
    if (task.startSeconds - task.submitSeconds > task.boundSeconds && assumptionsHeld(run, i)) brokenWhileTenantQuiet++;
  });
  const stats = (include: (i: number) => boolean) => {
    const s = waitStats(run.waitMs, include);
    return { p50: s.p50, p99: s.p99, max: s.max };
  };
  return {
    dispatcher: name,
    policy: config.policy,
    tasks,
    summary: {
      tasks: tasks.length,
      started: tasks.filter((task) => task.startSeconds !== null).length,
      waitSeconds: stats((i) => !Number.isNaN(run.waitMs[i] as number)),
      bounds: { given: tasks.filter((task) => task.boundSeconds !== null).length, brokenWhileTenantQuiet },
      tenants: tenantIds.map((tenantId, t) => ({
        tenantId,
        tasks: tasks.filter((task) => task.tenantId === tenantId).length,
        waitSeconds: stats((i) => trace.tenant[i] === t && !Number.isNaN(run.waitMs[i] as number)),
      })),
    },
  };
}

export const REPLAY_HELP = `Usage: npm run sim -- replay --trace FILE [--json] [--baseline NAME] [--config FILE]

Runs the arrivals of FILE through the scheduling engine as the scheduler runs it (policy, pools,
tenants' weights and quotas, aging, reservations, each task's timeout + leases as its hold), and
says when each task started and what maxWaitSeconds the API would have reported at its submit.

FILE: {"config": {configuration file}, "tenants": {"id": {"weight", "maxConcurrency"}},
       "tasks": [{"id", "tenantId", "priority", "runtime", "resources", "submitSeconds",
                  "runSeconds", "timeoutSeconds"}]}
      (other keys ignored; missing priority, resources and timeout take the configuration's
      taskDefaults, a missing runtime is chosen as a submit chooses it). \`tasks trace export\`
      writes one from a running system's tasks.

Options:
  --trace FILE       the trace (required)
  --config FILE      replay under this configuration instead of the trace's (a what-if); its
                     tenants entries win over the trace's
  --baseline NAME    one of ${BASELINE_NAMES.join(', ')} instead of the engine (no bounds)
  --json             one JSON object: {"tasks": [{"id", "tenantId", "submitSeconds",
                     "startSeconds", "boundSeconds"}], "summary": {...}}
  -h, --help         this help
`;

/** The command; resolves with the exit code (2: usage or trace errors, told in one line each). */
export function runReplayCommand(argv: readonly string[], out: (text: string) => void): number {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      trace: { type: 'string' },
      config: { type: 'string' },
      baseline: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    out(REPLAY_HELP);
    return 0;
  }
  if (positionals.length > 0) throw new ReplayUsageError(`Unexpected argument "${positionals[0]}"`);
  if (!values.trace) throw new ReplayUsageError('--trace FILE is required');
  if (values.baseline !== undefined && !(BASELINE_NAMES as readonly string[]).includes(values.baseline)) {
    throw new ReplayUsageError(`--baseline must be one of ${BASELINE_NAMES.join(', ')}, got "${values.baseline}"`);
  }
  const trace = readJson(values.trace, '--trace');
  const config = values.config === undefined ? undefined : readJson(values.config, '--config');
  let file: TraceFile;
  try {
    file = parseTraceFile(trace, values.trace, config as Parameters<typeof parseTraceFile>[2]);
  } catch (error) {
    if (error instanceof TraceFileError || (error as Error).name === 'ConfigError') {
      throw new ReplayUsageError((error as Error).message);
    }
    throw error;
  }
  const result = replay(file, values.baseline as BaselineName | undefined);
  if (values.json) {
    out(`${JSON.stringify(result)}\n`);
    return 0;
  }
  const seconds = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(2));
  const { summary } = result;
  out(
    [
      `${summary.tasks} tasks of ${summary.tenants.length} tenants through ${result.dispatcher}${values.config ? ` (configuration ${values.config})` : ''}: ${summary.started} started; wait p50 ${seconds(summary.waitSeconds.p50)} s, p99 ${seconds(summary.waitSeconds.p99)} s, max ${seconds(summary.waitSeconds.max)} s; ${summary.bounds.given} wait bounds given at submit, ${summary.bounds.brokenWhileTenantQuiet} broken while their tenant submitted nothing more.`,
      '',
      formatTable(
        ['tenant', 'tasks', 'wait p50 s', 'p99 s', 'max s'],
        summary.tenants.map((t) => [
          t.tenantId,
          `${t.tasks}`,
          seconds(t.waitSeconds.p50),
          seconds(t.waitSeconds.p99),
          seconds(t.waitSeconds.max),
        ]),
        { markdown: true },
      ),
      '',
    ].join('\n'),
  );
  return 0;
}

export class ReplayUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReplayUsageError';
  }
}

function readJson(path: string, flag: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ReplayUsageError(`${flag}: cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ReplayUsageError(`${flag}: ${path} is not JSON: ${(error as Error).message}`);
  }
}
