/**
 * `npm run sim -- chaos`: run the production code on the simulated AWS account under faults and
 * check its guarantees. One seed, a range of seeds, or the long sweep.
 */
import { fork } from 'node:child_process';
import { parseArgs } from 'node:util';
import { MAX_SCHEDULER_SHARDS } from '../../runtime/core/shards.ts';
import { checkHistory, type DueStartStats, medianAndMax, type Violation } from './check.ts';
import { type History, historyDigest } from './history.ts';
import { CHAOS_SCENARIOS, type ChaosOptions, DEFAULT_OPTIONS, NO_FAULTS, runChaos } from './run.ts';
import { schedulerModeOption } from './throughput-cli.ts';

export const CHAOS_HELP = `Usage: npm run sim -- chaos [options]

Runs the API service, the scheduler Lambda (a new invocation every minute), the workers and the
dead-letter redrive on an in-memory DynamoDB and SQS that behave as AWS documents (lost responses
retried by the SDK, throttling, duplicate and early deliveries, index lag, crashes), in virtual
time, and checks every guarantee over the recorded history.

Options:
  --seed N         one run (default 1); the same seed gives the same history
  --seeds A..B     one run per seed from A to B
  --long           the long sweep: seeds 1..1000 (unless --seeds is given) of the short
                   scenario (unless --scenario is given)
  --jobs N         run seeds in N worker processes (default 1); each seed's history is the
                   same whichever process runs it (compare historyDigest)
  --tasks N        tasks submitted per run (default ${DEFAULT_OPTIONS.tasks})
  --tenants M      tenants, quotas 1, 2, 3, 1, ... (default ${DEFAULT_OPTIONS.tenants})
  --scenario NAME  mixed (default): short tasks over 3 quota-limited tenants, a quarter of
                   them depending on earlier tasks of their tenant (chains), and 2 batches
                   of 4-12 tasks with a then-task;
                   short: mixed with 20 tasks submitted over 30 s, delays up to 60 s, one
                   batch of 3-6 (the long sweep's runs, about 1 s of CPU each);
                   backlog: one tenant at quota 1 with 30 min of work queued (tasks wait
                   past the backstop's 15-minute mark); payloads: 150 KiB payloads and characters
                   SQS refuses raw (U+FFFE, U+FFFF) or above U+FFFF; hot: one tenant (quota
                   50) submitting 2,500 short tasks within half a second, over DynamoDB's
                   per-partition limit for its index keys; rotation: 4 tenants queue a backlog in
                   20 s while 60 one-task tenants submit over 120 s (fair share's rotation and the
                   wait bound, asked at submit and again 3-8 s later); flow: start-rate limits
                   (1/s burst 2, 2/s burst 3), concurrency keys on 70 % of the tasks (limits 1
                   and 2), two task types, an operator pausing and resuming a tenant or a type
                   every 5-15 s (the rate, key-limit and pause invariants); bounds: 60
                   steady tenants each keeping one task waiting at a time for 10 min (asked
                   for every 4-12 s while it waits), beside 3 tenants queueing 240 tasks in
                   30 s; Lambda and Fargate (whole-pool tasks too), timeouts 15-120 s (the
                   wait bound given and checked thousands of times over a few seeds);
                   delayed: a tenant's 3,000 tasks due tomorrow, and 16 one-task tenants
                   submitting tasks delayed 2-20 min (some retried after a backoff) while
                   the scheduler idles (the due-start invariant)
  --no-faults      the same workload without any fault
  --stalls MS      every scheduler invocation stalls once, at a random moment, for up to MS:
                   its calls are held, then land late, even after it died (default: 10 % of
                   invocations, up to 11,000, inside the lease fence's 12 s window)
  --shards K       K scheduler shards (scheduler.shards), each owning the tenants that hash
                   to it, the pools shared among them
  --scheduler M    lambda (default) or service (scheduler.mode): per shard an always-on task
                   holds the lease, dying as often as a Lambda invocation crashes and replaced
                   10-60 s later, the Lambda standing in meanwhile
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
      jobs: { type: 'string', default: '1' },
      serve: { type: 'boolean', default: false },
      tasks: { type: 'string' },
      tenants: { type: 'string' },
      scenario: { type: 'string' },
      'no-faults': { type: 'boolean', default: false },
      stalls: { type: 'string' },
      shards: { type: 'string' },
      scheduler: { type: 'string' },
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
  const scenarioName = values.scenario ?? (values.long ? 'short' : 'mixed');
  const scenario = CHAOS_SCENARIOS[scenarioName as keyof typeof CHAOS_SCENARIOS];
  if (!scenario) throw new Error(`Unknown --scenario "${scenarioName}" (${Object.keys(CHAOS_SCENARIOS).join(', ')})`);
  const base = {
    ...DEFAULT_OPTIONS,
    ...scenario,
    ...(values.tasks ? { tasks: int(values.tasks, 'tasks', 10_000) } : {}),
    ...(values.tenants ? { tenants: Math.max(1, int(values.tenants, 'tenants', 1000)) } : {}),
    ...(values['no-faults'] ? { faults: NO_FAULTS } : {}),
  };
  if (values.shards !== undefined) {
    const shards = int(values.shards, 'shards', MAX_SCHEDULER_SHARDS);
    base.config = { ...base.config, scheduler: { ...base.config?.scheduler, shards } };
  }
  if (values.scheduler !== undefined) {
    const mode = schedulerModeOption(values.scheduler);
    base.config = { ...base.config, scheduler: { ...base.config?.scheduler, mode } };
  }
  // Every invocation stalls once, for up to this long (beyond the fence's 12 s window if asked).
  const options =
    values.stalls === undefined
      ? base
      : {
          ...base,
          faults: { ...base.faults, schedulerStallRate: 1, schedulerStallMaxMs: int(values.stalls, 'stalls', 600_000) },
        };

  if (values.serve) return serveSeeds(options);
  const jobs = Math.max(1, Math.min(int(values.jobs, 'jobs', 64), seeds.length));
  const startedAt = performance.now();
  const results: SeedResult[] = [];
  const onResult = (result: SeedResult) => {
    results.push(result);
    if (!values.json) process.stdout.write(`${describe(result)}\n`);
  };
  if (jobs === 1) for (const seed of seeds) onResult(await runSeed(seed, options));
  else await runInWorkers(seeds, jobs, argv, onResult);
  results.sort((a, b) => a.seed - b.seed);
  const wallSeconds = Math.round((performance.now() - startedAt) / 100) / 10;

  const violations = results.flatMap((r) => r.violations.map((v) => ({ seed: r.seed, ...v })));
  if (values.json) {
    const single = results.length === 1 ? withoutRatios(results[0]!) : undefined;
    const output = single ?? {
      seeds: [seeds[0], seeds.at(-1)],
      runs: results.length,
      tasks: results.reduce((sum, r) => sum + r.tasks, 0),
      simulatedSeconds: results.reduce((sum, r) => sum + r.simulatedSeconds, 0),
      schedulerLeases: results.reduce((sum, r) => sum + r.schedulerLeases, 0),
      seedsWithViolations: results.filter((r) => r.violations.length > 0).map((r) => r.seed),
      waitBounds: sumBounds(results),
      dueStarts: sumDueStarts(results),
      violations,
      jobs,
      wallSeconds,
    };
    process.stdout.write(`${JSON.stringify(output)}\n`);
  } else if (results.length > 1) {
    const failing = results.filter((r) => r.violations.length > 0);
    const tasks = results.reduce((sum, r) => sum + r.tasks, 0);
    const simulated = results.reduce((sum, r) => sum + r.simulatedSeconds, 0);
    const bounds = sumBounds(results);
    const dueStarts = sumDueStarts(results);
    process.stdout.write(
      `${results.length} runs (seeds ${seeds[0]}..${seeds.at(-1)}, scenario ${scenarioName}), ${tasks} tasks, ${simulated} s simulated, ${violations.length} violations in ${failing.length} of them${failing.length > 0 ? ` (seeds ${failing.map((r) => r.seed).join(', ')})` : ''}; wait bounds: ${bounds.given} given, ${bounds.checked} checked (for ${bounds.checkedTasks} tasks; ${bounds.onPace} of them on the Lambda pool's pace, ${bounds.onHeadroom} on its headroom), ${bounds.broken} broken (not checked: ${bounds.assumptionBroken} with an assumption broken before the start: their tenant submitting more, or ${bounds.paceNotKept} the pool freeing fewer slots than assumed, or ${bounds.headroomNotKept} the pool filling when assumed to keep room, or ${bounds.runningNotSeen} their tenant running a task they did not count, or ${bounds.joinsExceeded} more tenants joining than counted, or ${bounds.busyWeightExceeded} the tenants with work weighing more than assumed, or ${bounds.reportLost} a report of an end the scheduler learned of late; ${bounds.cancelledWaiting} cancelled while waiting, ${bounds.unresolved} still waiting at the run's end before their deadline), bound / wait median ${bounds.ratio?.median ?? '-'} (at submit ${bounds.ratioAtSubmit?.median ?? '-'}, asked again ${bounds.ratioLater?.median ?? '-'}), ${bounds.none} answers without one; rotation: ${bounds.rotationChecked} one-task tenants checked, at most ${bounds.mostStartsOfOneTenantAhead} start of another tenant ahead of one; due starts: ${dueStarts.checked} checked, ${dueStarts.late} late (most ${dueStarts.mostLateSeconds} s after due), ${dueStarts.unresolved} unresolved, excused ${JSON.stringify(dueStarts.excused)}; ${wallSeconds} s wall with ${jobs} job${jobs === 1 ? '' : 's'}\n`,
    );
  }
  return violations.length > 0 ? 1 : 0;
}

/** The due-start invariant's counts over the runs (the most late: the largest of any run). */
function sumDueStarts(results: readonly SeedResult[]): DueStartStats {
  const sum = (pick: (stats: DueStartStats) => number) =>
    results.reduce((total, r) => total + pick(r.stats.dueStarts), 0);
  return {
    checked: sum((d) => d.checked),
    late: sum((d) => d.late),
    excused: {
      unannounced: sum((d) => d.excused.unannounced),
      atQuota: sum((d) => d.excused.atQuota),
      poolFull: sum((d) => d.excused.poolFull),
      flowHeld: sum((d) => d.excused.flowHeld),
    },
    unresolved: sum((d) => d.unresolved),
    mostLateSeconds: Math.max(0, ...results.map((r) => r.stats.dueStarts.mostLateSeconds)),
  };
}

interface SeedResult {
  readonly seed: number;
  readonly tasks: number;
  readonly simulatedSeconds: number;
  readonly violations: Violation[];
  readonly stats: ReturnType<typeof checkHistory>['stats'];
  readonly calls: History['calls'];
  /** DynamoDB requests refused for a partition's throughput (sim/aws/capacity.ts), each attempt counted. */
  readonly partitionThrottles: number;
  readonly schedulerInvocations: number;
  readonly scheduler: History['scheduler'];
  readonly crashes: number;
  /** Scheduler leases taken: each shard's first, then one per hand-over or takeover. */
  readonly schedulerLeases: number;
  /** SHA-256 of what DynamoDB applied and SQS delivered: equal digests, equal histories. */
  readonly historyDigest: string;
}

async function runSeed(seed: number, options: Omit<ChaosOptions, 'seed'>): Promise<SeedResult> {
  const history = await runChaos({ ...options, seed });
  const { violations, stats } = checkHistory(history);
  return {
    seed,
    tasks: stats.accepted,
    simulatedSeconds: Math.round((history.endMs - history.startMs) / 1000),
    violations,
    stats,
    calls: history.calls,
    partitionThrottles: history.throughput?.throttledRequests ?? 0,
    schedulerInvocations: history.schedulerInvocations,
    scheduler: history.scheduler,
    crashes: history.deaths.length,
    schedulerLeases: history.leases.length,
    historyDigest: historyDigest(history),
  };
}

/**
 * Seeds handed out one at a time to `jobs` child processes (this same command with `--serve`),
 * so a slow seed does not hold up a fixed share. Each child runs its seeds one after another,
 * each under its own virtual clock, exactly as a single process would.
 */
async function runInWorkers(
  seeds: readonly number[],
  jobs: number,
  argv: readonly string[],
  onResult: (result: SeedResult) => void,
): Promise<void> {
  const queue = [...seeds];
  const childArgs = ['chaos', ...withoutOptions(argv, ['--jobs', '--seed', '--seeds', '--json']), '--serve'];
  const jobsDone = Array.from({ length: jobs }, async () => {
    const child = fork(process.argv[1]!, childArgs, {
      execArgv: process.execArgv,
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    try {
      for (let seed = queue.shift(); seed !== undefined; seed = queue.shift()) {
        const result = await new Promise<SeedResult>((resolve, reject) => {
          const onExit = (code: number | null) =>
            reject(new Error(`chaos worker exited (${code}) running seed ${seed}`));
          child.once('exit', onExit);
          child.once('message', (message) => {
            child.off('exit', onExit);
            resolve(message as SeedResult);
          });
          child.send({ seed });
        });
        onResult(result);
      }
    } finally {
      child.disconnect();
    }
  });
  await Promise.all(jobsDone);
}

/** The child side of --jobs: run each seed the parent sends and answer with its result. */
function serveSeeds(options: Omit<ChaosOptions, 'seed'>): Promise<number> {
  return new Promise((resolve) => {
    let chain = Promise.resolve();
    process.on('message', (message: { seed: number }) => {
      chain = chain.then(async () => {
        process.send?.(await runSeed(message.seed, options));
      });
    });
    process.on('disconnect', () => resolve(0));
  });
}

/** argv without the given options and their values (`--jobs 2` or `--jobs=2`). */
function withoutOptions(argv: readonly string[], names: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const name = names.find((n) => arg === n || arg.startsWith(`${n}=`));
    if (name === undefined) kept.push(arg);
    else if (arg === name && name !== '--json' && !argv[i + 1]?.startsWith('--')) i++;
  }
  return kept;
}

/** A seed's result as printed: its bound / wait ratios summed up (median and max), not listed. */
function withoutRatios(result: SeedResult): SeedResult {
  const waitBounds = { ...result.stats.waitBounds, ratios: [], ratiosAtSubmit: [], ratiosLater: [] };
  return { ...result, stats: { ...result.stats, waitBounds } };
}

/** The wait-bound and rotation checks of many runs, added up. */
function sumBounds(results: readonly SeedResult[]) {
  const sum = (pick: (r: SeedResult) => number) => results.reduce((total, r) => total + pick(r), 0);
  const noneBy: Record<string, number> = {};
  for (const r of results) {
    for (const [code, n] of Object.entries(r.stats.waitBounds.noneBy)) noneBy[code] = (noneBy[code] ?? 0) + n;
  }
  const merged = (pick: (r: SeedResult) => readonly number[]) =>
    medianAndMax(results.flatMap(pick).sort((a, b) => a - b));
  return {
    given: sum((r) => r.stats.waitBounds.given),
    checked: sum((r) => r.stats.waitBounds.checked),
    checkedTasks: sum((r) => r.stats.waitBounds.checkedTasks),
    broken: sum((r) => r.stats.waitBounds.broken),
    assumptionBroken: sum((r) => r.stats.waitBounds.assumptionBroken),
    onPace: sum((r) => r.stats.waitBounds.onPace),
    onHeadroom: sum((r) => r.stats.waitBounds.onHeadroom),
    headroomNotKept: sum((r) => r.stats.waitBounds.headroomNotKept),
    runningNotSeen: sum((r) => r.stats.waitBounds.runningNotSeen),
    paceNotKept: sum((r) => r.stats.waitBounds.paceNotKept),
    intakeNotKept: sum((r) => r.stats.waitBounds.intakeNotKept),
    notOnlyWaitingLate: sum((r) => r.stats.waitBounds.notOnlyWaitingLate),
    joinsExceeded: sum((r) => r.stats.waitBounds.joinsExceeded),
    busyWeightExceeded: sum((r) => r.stats.waitBounds.busyWeightExceeded),
    reportLost: sum((r) => r.stats.waitBounds.reportLost),
    cancelledWaiting: sum((r) => r.stats.waitBounds.cancelledWaiting),
    unresolved: sum((r) => r.stats.waitBounds.unresolved),
    ratio: merged((r) => r.stats.waitBounds.ratios),
    ratioAtSubmit: merged((r) => r.stats.waitBounds.ratiosAtSubmit),
    ratioLater: merged((r) => r.stats.waitBounds.ratiosLater),
    none: sum((r) => r.stats.waitBounds.none),
    noneBy,
    rotationChecked: sum((r) => r.stats.rotation.checked),
    mostStartsOfOneTenantAhead: Math.max(0, ...results.map((r) => r.stats.rotation.mostStartsOfOneTenantAhead)),
  };
}

function describe(result: SeedResult): string {
  const { waitBounds, rotation } = result.stats;
  const head = `seed ${result.seed}: ${result.tasks} tasks, ${result.simulatedSeconds} s simulated, ${result.calls.lost} lost responses, ${result.calls.throttled} throttled, ${result.partitionThrottles} over a partition's limit, ${result.crashes} crashes, ${result.schedulerLeases} scheduler leases taken, ${waitBounds.checked} of ${waitBounds.given} wait bounds checked (${waitBounds.broken} broken), ${rotation.checked} rotations checked, ${result.stats.dueStarts.checked} due starts checked (${result.stats.dueStarts.late} late), history ${result.historyDigest}: ${result.violations.length} violations`;
  const lines = result.violations.map(
    (v) =>
      `  ${v.invariant} ${v.taskId ?? ''} at ${v.atSeconds}s: ${v.detail}${v.trace ? `\n    ${v.trace.join('\n    ')}` : ''}`,
  );
  return [head, ...lines].join('\n');
}
