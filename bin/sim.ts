#!/usr/bin/env node
/**
 * npm run sim -- <scenario> [--tasks N] [--tenants M] [--seed S] [--dispatchers a,b] [--out DIR]
 * npm run sim -- chaos [--seed N | --seeds A..B | --long] [--json]   (sim/chaos/cli.ts)
 * npm run sim -- flood [--tasks N] [--tenants M] [--json]            (sim/flood/cli.ts)
 * npm run sim -- throughput --rate R --tasks N --tenants T [--json]  (sim/chaos/throughput-cli.ts)
 * npm run sim -- replay --trace FILE [--json] [--baseline B] [--config FILE]   (sim/replay.ts)
 * Replays a deterministic workload through our policies and peers' orderings; prints tables and
 * writes SVG charts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runChaosCommand } from '../sim/chaos/cli.ts';
import { runThroughputCommand } from '../sim/chaos/throughput-cli.ts';
import { DISPATCHER_NAMES, type DispatcherName, simulate } from '../sim/engine.ts';
import { runFloodCommand } from '../sim/flood/cli.ts';
import { summarize } from '../sim/metrics.ts';
import { runReplayCommand } from '../sim/replay.ts';
import { renderCharts, renderText } from '../sim/report.ts';
import { buildScenario, SCENARIO_NAMES, SCENARIOS } from '../sim/scenarios.ts';

const DEFAULT_DISPATCHERS: DispatcherName[] = [
  'fair-share',
  'priority',
  'strict-priority',
  'round-robin',
  'fifo-queue',
];

const HELP = `Usage: npm run sim -- <scenario|all> [options]

  npm run sim -- chaos --help   the production code under AWS's failure modes (sim/chaos)
  npm run sim -- flood --help   one tenant's backlog ahead of quiet tenants, production front end (sim/flood)
  npm run sim -- throughput --help   the production scheduler's dispatch rate at AWS's latencies and limits
  npm run sim -- replay --help  a trace's arrivals (yours: tasks trace export) through the engine (sim/replay.ts)

Scenarios:
${SCENARIO_NAMES.map((name) => `  ${name.padEnd(16)} ${SCENARIOS[name]?.description}`).join('\n')}

Options:
  --tasks N            number of tasks (default per scenario, up to 1,000,000)
  --tenants M          number of tenants (default per scenario, up to 10,000)
  --seed S             PRNG seed (default 1); same seed, same trace, same results
  --dispatchers LIST   comma-separated, from: ${DISPATCHER_NAMES.join(', ')}
                       (default ${DEFAULT_DISPATCHERS.join(',')}); fair-share, priority and fifo are our
                       SchedulingPolicy, the others are peers' orderings (sim/baselines.ts)
  --bounds             also compute, for fair-share, the wait bound the API would give at each
                       submit (app/wait.ts over a snapshot up to 2 s old) and report it against the waits
  --out DIR            where to write SVG charts and a Markdown report (default $DATA_DIR/sim,
                       i.e. .data/sim; docs/sim holds the published run: --out docs/sim)
  --no-write           print only
  -h, --help           this help
`;

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      tasks: { type: 'string' },
      tenants: { type: 'string' },
      seed: { type: 'string' },
      dispatchers: { type: 'string' },
      // Under the data directory, not docs/: a trial run must not overwrite the published figures.
      out: { type: 'string', default: join(process.env.DATA_DIR || '.data', 'sim') },
      'no-write': { type: 'boolean', default: false },
      bounds: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const scenario = positionals[0];
  if (values.help || !scenario) {
    process.stdout.write(HELP);
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  const int = (value: string | undefined, name: string, max: number) => {
    if (value === undefined) return undefined;
    const parsed = Number(value.replaceAll('_', ''));
    if (!Number.isInteger(parsed) || parsed < 1 || parsed > max)
      throw new Error(`--${name} must be an integer in 1..${max}`);
    return parsed;
  };
  const dispatchers = (values.dispatchers?.split(',') ?? DEFAULT_DISPATCHERS) as DispatcherName[];
  for (const name of dispatchers) {
    if (!(DISPATCHER_NAMES as readonly string[]).includes(name)) throw new Error(`Unknown dispatcher "${name}"`);
  }
  const names = scenario === 'all' ? SCENARIO_NAMES : [scenario];
  const reports: string[] = [];
  for (const name of names) {
    const trace = buildScenario(name, {
      tasks: int(values.tasks, 'tasks', 1_000_000),
      tenants: int(values.tenants, 'tenants', 10_000),
      seed: int(values.seed, 'seed', 2 ** 31),
    });
    const runs = dispatchers.map((dispatcher) => {
      const run = simulate(trace, dispatcher, undefined, { apiBounds: values.bounds });
      return { run, summary: summarize(trace, run) };
    });
    const text = renderText(trace, runs);
    process.stdout.write(`${text}\n`);
    reports.push(text);
    if (!values['no-write']) {
      mkdirSync(values.out, { recursive: true });
      for (const [file, svg] of Object.entries(renderCharts(trace, runs))) writeFileSync(join(values.out, file), svg);
    }
  }
  if (!values['no-write']) {
    const file = scenario === 'all' ? 'results.md' : `${scenario}.md`;
    writeFileSync(join(values.out, file), `# Simulator results\n\n${reports.join('\n')}`);
    process.stdout.write(`Charts and report written to ${values.out}/\n`);
  }
}

const fail = (error: unknown) => {
  process.stderr.write(`sim: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 2;
};
if (process.argv[2] === 'flood') {
  runFloodCommand(process.argv.slice(3)).then((code) => {
    process.exitCode = code;
  }, fail);
} else if (process.argv[2] === 'throughput') {
  runThroughputCommand(process.argv.slice(3)).then((code) => {
    process.exitCode = code;
  }, fail);
} else if (process.argv[2] === 'replay') {
  try {
    process.exitCode = runReplayCommand(process.argv.slice(3), (text) => process.stdout.write(text));
  } catch (error) {
    fail(error);
  }
} else if (process.argv[2] === 'chaos') {
  runChaosCommand(process.argv.slice(3)).then((code) => {
    process.exitCode = code;
  }, fail);
} else {
  try {
    main();
  } catch (error) {
    fail(error);
  }
}
