/**
 * npm run sim -- throughput --json --rate R --tasks N --tenants T [--shards K] [--scheduler M] [--seed S] [--latency-ms JSON]
 * The production scheduler's dispatch rate at AWS's latencies and per-partition limits
 * (sim/chaos/throughput.ts).
 */
import { parseArgs } from 'node:util';
import { SCHEDULER_MODES, type SchedulerMode } from '../../runtime/core/config.ts';
import { MAX_SCHEDULER_SHARDS } from '../../runtime/core/shards.ts';
import { latencyRangesSchema, uniformLatency } from '../aws/faults.ts';
import { measureThroughput } from './throughput.ts';

const HELP = `Usage: npm run sim -- throughput [options]

N no-op tasks submitted at R a second over T tenants through the production API, scheduler
Lambda and workers, on the simulated AWS account in virtual time: every call takes AWS's
latency (DynamoDB 3-9 ms, SQS 6-16 ms), DynamoDB serves 1,000 write and 3,000 read units a
second per partition key value (table and indexes), the SDK retries what is throttled. Quotas
(100,000 per tenant) and the worker pool (16,384 Fargate slots) are above the load, so only the
scheduler and AWS limit the rate. Rates are the main phase's (10th to 90th percentile).

  --rate R          offered submits per second (default 100)
  --tasks N         tasks submitted (default 1000)
  --tenants T       tenants, each submitting an equal share at random (default 10)
  --shards K        scheduler shards (scheduler.shards, default 1): K schedulers, each owning
                    the tenants that hash to it
  --scheduler M     lambda (default: invocations of up to 5 minutes, each handing over to the
                    next) or service (scheduler.mode: one always-on task per shard)
  --seed S          PRNG seed (default 1); the same seed gives the same run
  --latency-ms JSON per-call latency ranges instead of AWS's, as SCHEDULER_FAULTS takes them:
                    '{"dynamodb":[5,15],"sqs":[10,30]}' (a service left out: no latency)
  --json            print one JSON object
  -h, --help        this help
`;

export async function runThroughputCommand(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      rate: { type: 'string', default: '100' },
      tasks: { type: 'string', default: '1000' },
      tenants: { type: 'string', default: '10' },
      seed: { type: 'string', default: '1' },
      shards: { type: 'string', default: '1' },
      scheduler: { type: 'string', default: 'lambda' },
      'latency-ms': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const int = (value: string, name: string, max: number) => {
    const parsed = Number(value.replaceAll('_', ''));
    if (!Number.isInteger(parsed) || parsed < 1 || parsed > max)
      throw new Error(`--${name} must be an integer in 1..${max}`);
    return parsed;
  };
  let latency: ReturnType<typeof uniformLatency> | undefined;
  if (values['latency-ms'] !== undefined) {
    let json: unknown;
    try {
      json = JSON.parse(values['latency-ms']);
    } catch {
      throw new Error('--latency-ms must be JSON, e.g. {"dynamodb":[5,15],"sqs":[10,30]}');
    }
    const parsed = latencyRangesSchema.safeParse(json);
    if (!parsed.success) {
      throw new Error(
        `--latency-ms: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'value'}: ${issue.message}`).join('; ')}`,
      );
    }
    latency = uniformLatency(parsed.data);
  }
  const result = await measureThroughput({
    rate: int(values.rate, 'rate', 100_000),
    tasks: int(values.tasks, 'tasks', 1_000_000),
    tenants: int(values.tenants, 'tenants', 10_000),
    seed: int(values.seed, 'seed', 2 ** 31),
    shards: int(values.shards, 'shards', MAX_SCHEDULER_SHARDS),
    mode: schedulerModeOption(values.scheduler),
    latency,
  });
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    const hottest = result.throttledPartitions
      .slice(0, 5)
      .map((p) => `    ${p.table}${p.index ? `/${p.index}` : ''} ${p.kind} ${p.key}: ${p.requests}`);
    process.stdout.write(
      [
        `throughput: ${result.tasks} tasks over ${result.tenants} tenants, ${result.shards} scheduler shard${result.shards === 1 ? '' : 's'}, ${result.simulatedSeconds} simulated s`,
        `  offered ${result.offeredPerSecond}/s, dispatched ${result.dispatchedPerSecond}/s (${result.dispatchedOverOffered}×)`,
        `  submit to dispatch: p50 ${result.p50WaitSeconds} s, p99 ${result.p99WaitSeconds} s, max ${result.maxWaitSeconds} s; ${result.undispatched} never dispatched, ${result.unacknowledged} submits given up`,
        `  dispatch to start p99 ${result.p99DispatchToStartSeconds} s`,
        `  DynamoDB: ${result.writeUnitsPerTask} write and ${result.readUnitsPerTask} read units per task; ${result.throttledRequests} requests throttled${hottest.length > 0 ? ', most on:' : ''}`,
        ...hottest,
        `  peak leased ${result.peakLeased} of ${result.poolSlots} slots, ${result.peakLeasedPerTenant} of one tenant's ${result.tenantQuota} quota; ${result.schedulerInvocations} scheduler invocations, ${result.leasesTaken} scheduler leases taken (${result.mode})`,
        `  Lambda account concurrency: ${result.lambdaPeakConcurrency} at most, ${result.lambdaThrottles} invocations throttled`,
        '',
      ].join('\n'),
    );
  }
  return 0;
}

/** `--scheduler lambda|service`: `scheduler.mode`. */
export function schedulerModeOption(value: string): SchedulerMode {
  if (!(SCHEDULER_MODES as readonly string[]).includes(value)) {
    throw new Error(`--scheduler must be one of ${SCHEDULER_MODES.join(', ')}, got "${value}"`);
  }
  return value as SchedulerMode;
}
