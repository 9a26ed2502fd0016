/**
 * npm run sim -- flood [--tasks N] [--tenants M] [--seed S] [--json]
 * The flood scenario on the production front end (sim/flood/run.ts).
 */
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { getHeapStatistics } from 'node:v8';
import { DEFAULT_FLOOD, runFlood } from './run.ts';

const HELP = `Usage: npm run sim -- flood [options]

One tenant's backlog queued ahead of quiet tenants that keep submitting, through the production
submit path, scheduler (restarted every 60 s) and workers over the simulated SQS and DynamoDB,
beside the same trace through the engine alone.

  --tasks N      the flooding tenant's queued tasks (default ${DEFAULT_FLOOD.tasks})
  --tenants M    quiet tenants, ${DEFAULT_FLOOD.tasksPerQuietTenant} tasks each over ${DEFAULT_FLOOD.quietSeconds} s (default ${DEFAULT_FLOOD.quietTenants})
  --seed S       PRNG seed (default 1)
  --transport T  direct (default): commands go straight to the simulated account; sdk: through
                 the full AWS SDK stack (slower; the backlog is loaded directly either way)
  --json         print one JSON object
  -h, --help     this help
`;

export async function runFloodCommand(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      tasks: { type: 'string' },
      tenants: { type: 'string' },
      seed: { type: 'string' },
      transport: { type: 'string', default: DEFAULT_FLOOD.transport },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const int = (value: string | undefined, name: string, fallback: number, max: number) => {
    if (value === undefined) return fallback;
    const parsed = Number(value.replaceAll('_', ''));
    if (!Number.isInteger(parsed) || parsed < 1 || parsed > max)
      throw new Error(`--${name} must be an integer in 1..${max}`);
    return parsed;
  };
  if (values.transport !== 'direct' && values.transport !== 'sdk') throw new Error('--transport must be direct or sdk');
  const tasks = int(values.tasks, 'tasks', DEFAULT_FLOOD.tasks, 1_000_000);
  // A million queued tasks need more heap than Node's default (~4.5 GB here): run again with
  // room for about 8 KB a task (what the simulated account holds per queued task, with margin).
  const neededMiB = Math.ceil(1024 + (tasks * 8) / 1024);
  if (getHeapStatistics().heap_size_limit < neededMiB * 1024 * 1024 && !process.env.SIM_FLOOD_HEAP_RAISED) {
    const child = spawnSync(
      process.execPath,
      [...process.execArgv, `--max-old-space-size=${neededMiB}`, process.argv[1]!, 'flood', ...argv],
      { stdio: 'inherit', env: { ...process.env, SIM_FLOOD_HEAP_RAISED: '1' } },
    );
    return child.status ?? 1;
  }
  const result = await runFlood({
    ...DEFAULT_FLOOD,
    transport: values.transport,
    tasks,
    quietTenants: int(values.tenants, 'tenants', DEFAULT_FLOOD.quietTenants, 10_000),
    seed: int(values.seed, 'seed', 1, 2 ** 31),
  });
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    const w = (s: { p50: number; p99: number; max: number }) => `p50 ${s.p50} s, p99 ${s.p99} s, max ${s.max} s`;
    process.stdout.write(
      [
        `flood: ${result.tasks} queued for one tenant, ${result.quietTenants} quiet tenants (${result.quietTasks} tasks)`,
        `  quiet wait, production front end: ${w(result.quietWaitSeconds)} (${result.quietUndispatched} not dispatched)`,
        `  quiet wait, engine alone:          ${w(result.engineOnlyQuietWaitSeconds)}`,
        `  max receives per tier message: ${result.maxReceivesPerMessage}; tier dead letters: ${result.deadLettered}`,
        `  announcements sent: ${result.announcementsSent}; tier receives: ${result.announcementsReceived}`,
        `  flood dispatched: ${result.floodDispatched}; ${result.simulatedSeconds} simulated s in ${result.wallSeconds.toFixed(1)} s`,
        '',
      ].join('\n'),
    );
  }
  return 0;
}
