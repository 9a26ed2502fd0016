/**
 * Runs every benchmark in one process and prints its table. Claims in the docs come from here:
 * ratios measured within one run, never timed assertions in tests.
 *
 *   npm run bench [-- --quick]
 *   npm run bench -- <name> [--quick]   (one bench; `local-memory` and `intake-live` run only when named)
 *   npm run bench -- batch-ingest --tasks N   (batch-ingest's task count; the others ignore it)
 *   npm run bench -- --help                   (the list; a name it lacks is refused, not ignored)
 */
import { parseBenchArgs } from './args.ts';
import { runAwsCalls } from './aws-calls.ts';
import { runBatchIngest } from './batch-ingest.ts';
import { runBullmqComparison } from './bullmq.ts';
import { runDependencyCost } from './dependency-cost.ts';
import { runFaultsLiveBench } from './faults-live.ts';
import { runIntakeLive } from './intake-live.ts';
import { runLatencyLive } from './latency-live.ts';
import { runLocalE2E } from './local-e2e.ts';
import { runLocalMemory } from './local-memory.ts';
import { runPolicyBench } from './policy.ts';
import { runRotationLive } from './rotation-live.ts';

const BENCHES: {
  readonly name: string;
  /** What it measures, for --help. */
  readonly about: string;
  readonly run: (options: { quick: boolean; tasks?: number }) => unknown;
  /** Long: runs only when asked for by name. */
  readonly onlyWhenNamed?: boolean;
}[] = [
  { name: 'policy', about: 'fair-share decisions/s as queue and tenants grow', run: runPolicyBench },
  { name: 'local-e2e', about: 'no-op tasks over HTTP vs the same AWS calls bare', run: runLocalE2E },
  { name: 'aws-calls', about: 'AWS calls and cost per task, vs Step Functions', run: runAwsCalls },
  { name: 'batch-ingest', about: 'batched submits vs one request a task', run: runBatchIngest },
  { name: 'bullmq', about: 'BullMQ on a local redis-server vs ours', run: runBullmqComparison },
  { name: 'local-memory', about: 'RSS and data folder over many tasks', run: runLocalMemory, onlyWhenNamed: true },
  { name: 'intake-live', about: 'a flood ahead of quiet tenants, live', run: runIntakeLive, onlyWhenNamed: true },
  { name: 'faults-live', about: 'the live stack under SCHEDULER_FAULTS', run: runFaultsLiveBench, onlyWhenNamed: true },
  { name: 'rotation-live', about: 'the rotation and a reservation, live', run: runRotationLive, onlyWhenNamed: true },
  {
    name: 'latency-live',
    about: 'throughput with AWS-like latency vs without',
    run: runLatencyLive,
    onlyWhenNamed: true,
  },
  {
    name: 'dependency-cost',
    about: 'units and messages a dependency edge costs',
    run: runDependencyCost,
    onlyWhenNamed: true,
  },
];

let args: ReturnType<typeof parseBenchArgs>;
try {
  args = parseBenchArgs(
    process.argv.slice(2),
    BENCHES.map((bench) => bench.name),
  );
} catch (error) {
  process.stderr.write(`${(error as Error).message} (npm run bench -- --help)\n`);
  process.exit(1);
}
const { help, quick, tasks, named } = args;
if (help) {
  process.stdout.write(
    'npm run bench [-- --quick] [-- NAME... [--quick] [--tasks N]]\n' +
      'Without a name: every benchmark not marked (named only). Each also runs alone: node bench/NAME.ts\n\n' +
      BENCHES.map(
        (bench) => `  ${bench.name.padEnd(16)}${bench.about}${bench.onlyWhenNamed ? ' (named only)' : ''}`,
      ).join('\n') +
      '\n\nAlso alone: node bench/idle-cost.ts (the idle month of the default stack).\n',
  );
  process.exit(0);
}
for (const bench of BENCHES) {
  if (named.length > 0 ? !named.includes(bench.name) : bench.onlyWhenNamed) continue;
  process.stdout.write(`== ${bench.name}${quick ? ' (quick)' : ''}\n`);
  await bench.run(tasks === undefined ? { quick } : { quick, tasks });
}
