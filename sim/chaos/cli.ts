/**
 * `npm run sim -- chaos`: run the production code on the simulated AWS account under faults and
 * check its guarantees. One seed, a range of seeds, or the long sweep.
 */
import { parseArgs } from 'node:util';
import { AWS_LATENCY, type LatencyModel } from '../aws/faults.ts';
import { checkHistory, type Violation } from './check.ts';
import { CHAOS_SCENARIOS, DEFAULT_OPTIONS, NO_FAULTS, runChaos } from './run.ts';
import { measureThroughput } from './throughput.ts';

export const CHAOS_HELP = `Usage: npm run sim -- chaos [options]

Runs the API service, the scheduler Lambda (a new invocation every minute), the workers and the
dead-letter redrive on an in-memory DynamoDB and SQS that behave as AWS documents (lost responses
retried by the SDK, throttling, duplicate and early deliveries, index lag, crashes), in virtual
time, and checks every guarantee over the recorded history.

Options:
  --seed N         one run (default 1); the same seed gives the same history
  --seeds A..B     one run per seed from A to B
  --long           the long sweep: seeds 1..1000 (unless --seeds is given)
  --tasks N        tasks submitted per run (default ${DEFAULT_OPTIONS.tasks})
  --tenants M      tenants, quotas 1, 2, 3, 1, ... (default ${DEFAULT_OPTIONS.tenants})
  --scenario NAME  mixed (default): short tasks over 3 quota-limited tenants;
                   backlog: one tenant at quota 1 with 30 min of work queued (tasks wait
                   past the 15-minute stale sweep); payloads: 150 KiB payloads and characters
                   SQS refuses raw (U+FFFE, U+FFFF) or above U+FFFF
  --no-faults      the same workload without any fault
  --throughput     one scheduler's dispatch ceiling under AWS-like call latencies (DynamoDB
                   3-9 ms, SQS 6-16 ms per call; no faults): dispatched/s at offered rates
                   given by --rates (default 20,50,100,200) with --tasks tasks each (default 600)
  --rates LIST     offered submits per second for --throughput
  --latency-scale X  multiply every simulated call latency by X (default 1; 0: no latency)
  --json           print one JSON object
  -h, --help       this help

Exit status 1 when any run has a violation.
`;

export async function runChaosCommand(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      seed: { type: 'string' },
      seeds: { type: 'string' },
      long: { type: 'boolean', default: false },
      tasks: { type: 'string' },
      tenants: { type: 'string' },
      scenario: { type: 'string', default: 'mixed' },
      'no-faults': { type: 'boolean', default: false },
      throughput: { type: 'boolean', default: false },
      rates: { type: 'string', default: '20,50,100,200' },
      'latency-scale': { type: 'string', default: '1' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(CHAOS_HELP);
    return 0;
  }
  const int = (value: string, name: string, max: number) => {
    const parsed = Number(value.replaceAll('_', ''));
    if (!Number.isInteger(parsed) || parsed < 0 || parsed > max)
      throw new Error(`--${name} must be an integer in 0..${max}`);
    return parsed;
  };
  if (values.throughput) {
    const rates = values.rates.split(',').map((rate) => int(rate, 'rates', 100_000));
    const rows = await measureThroughput({
      seed: int(values.seed ?? '1', 'seed', 2 ** 31),
      tasks: values.tasks ? int(values.tasks, 'tasks', 100_000) : 600,
      offeredPerSecond: rates,
      latency: scaledLatency(Number(values['latency-scale'])),
    });
    if (values.json) process.stdout.write(`${JSON.stringify({ throughput: rows })}\n`);
    else {
      process.stdout.write('offered/s  dispatched/s  tasks  p50 wait s  p95 wait s\n');
      for (const row of rows) {
        process.stdout.write(
          `${String(row.offeredPerSecond).padStart(9)}  ${String(row.dispatchedPerSecond).padStart(12)}  ${String(row.tasks).padStart(5)}  ${String(row.p50WaitSeconds).padStart(10)}  ${String(row.p95WaitSeconds).padStart(10)}\n`,
        );
      }
    }
    return 0;
  }
  let seeds: number[];
  if (values.seeds) {
    const match = /^(\d+)\.\.(\d+)$/.exec(values.seeds);
    if (!match) throw new Error('--seeds must look like A..B');
    const [from, to] = [int(match[1]!, 'seeds', 2 ** 31), int(match[2]!, 'seeds', 2 ** 31)];
    if (to < from) throw new Error('--seeds A..B needs A <= B');
    seeds = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  } else if (values.long) {
    seeds = Array.from({ length: 1000 }, (_, i) => i + 1);
  } else {
    seeds = [int(values.seed ?? '1', 'seed', 2 ** 31)];
  }
  const scenario = CHAOS_SCENARIOS[values.scenario as keyof typeof CHAOS_SCENARIOS];
  if (!scenario)
    throw new Error(`Unknown --scenario "${values.scenario}" (${Object.keys(CHAOS_SCENARIOS).join(', ')})`);
  const options = {
    ...DEFAULT_OPTIONS,
    ...scenario,
    ...(values.tasks ? { tasks: int(values.tasks, 'tasks', 10_000) } : {}),
    ...(values.tenants ? { tenants: Math.max(1, int(values.tenants, 'tenants', 1000)) } : {}),
    ...(values['no-faults'] ? { faults: NO_FAULTS } : {}),
  };

  const results = [];
  for (const seed of seeds) {
    const history = await runChaos({ ...options, seed });
    const { violations, stats } = checkHistory(history);
    const result = {
      seed,
      tasks: stats.accepted,
      simulatedSeconds: Math.round((history.endMs - history.startMs) / 1000),
      violations,
      stats,
      calls: history.calls,
      schedulerInvocations: history.schedulerInvocations,
      crashes: history.deaths.length,
    };
    results.push(result);
    if (!values.json) process.stdout.write(`${describe(result)}\n`);
  }

  const violations = results.flatMap((r) => r.violations.map((v) => ({ seed: r.seed, ...v })));
  if (values.json) {
    const single = results.length === 1 ? results[0]! : undefined;
    const output = single ?? {
      seeds: [seeds[0], seeds.at(-1)],
      runs: results.length,
      tasks: results.reduce((sum, r) => sum + r.tasks, 0),
      simulatedSeconds: results.reduce((sum, r) => sum + r.simulatedSeconds, 0),
      seedsWithViolations: results.filter((r) => r.violations.length > 0).map((r) => r.seed),
      violations,
    };
    process.stdout.write(`${JSON.stringify(output)}\n`);
  } else if (results.length > 1) {
    const failing = results.filter((r) => r.violations.length > 0);
    process.stdout.write(
      `${results.length} runs, ${violations.length} violations in ${failing.length} of them${failing.length > 0 ? ` (seeds ${failing.map((r) => r.seed).join(', ')})` : ''}\n`,
    );
  }
  return violations.length > 0 ? 1 : 0;
}

function describe(result: {
  seed: number;
  tasks: number;
  simulatedSeconds: number;
  violations: Violation[];
  calls: { ok: number; lost: number; throttled: number };
  crashes: number;
}): string {
  const head = `seed ${result.seed}: ${result.tasks} tasks, ${result.simulatedSeconds} s simulated, ${result.calls.lost} lost responses, ${result.calls.throttled} throttled, ${result.crashes} crashes: ${result.violations.length} violations`;
  const lines = result.violations.map(
    (v) =>
      `  ${v.invariant} ${v.taskId ?? ''} at ${v.atSeconds}s: ${v.detail}${v.trace ? `\n    ${v.trace.join('\n    ')}` : ''}`,
  );
  return [head, ...lines].join('\n');
}

function scaledLatency(scale: number): LatencyModel {
  if (!Number.isFinite(scale) || scale < 0) throw new Error('--latency-scale must be a number >= 0');
  return (service, operation, random) => scale * AWS_LATENCY(service, operation, random);
}
