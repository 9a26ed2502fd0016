/**
 * Runs every benchmark in one process and prints its table. Claims in the docs come from here:
 * ratios measured within one run, never timed assertions in tests.
 *
 *   npm run bench [-- --quick]
 *   npm run bench -- <name> [--quick]   (one bench; `local-memory` and `intake-live` run only when named)
 *   npm run bench -- batch-ingest --tasks N   (batch-ingest's task count; the others ignore it)
 */
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
  readonly run: (options: { quick: boolean; tasks?: number }) => unknown;
  /** Long: runs only when asked for by name. */
  readonly onlyWhenNamed?: boolean;
}[] = [
  { name: 'policy', run: runPolicyBench },
  { name: 'local-e2e', run: runLocalE2E },
  { name: 'aws-calls', run: runAwsCalls },
  { name: 'batch-ingest', run: runBatchIngest },
  { name: 'bullmq', run: runBullmqComparison },
  { name: 'local-memory', run: runLocalMemory, onlyWhenNamed: true },
  { name: 'intake-live', run: runIntakeLive, onlyWhenNamed: true },
  { name: 'faults-live', run: runFaultsLiveBench, onlyWhenNamed: true },
  { name: 'rotation-live', run: runRotationLive, onlyWhenNamed: true },
  { name: 'latency-live', run: runLatencyLive, onlyWhenNamed: true },
  { name: 'dependency-cost', run: runDependencyCost, onlyWhenNamed: true },
];

const quick = process.argv.includes('--quick');
const tasksAt = process.argv.indexOf('--tasks');
const tasks = tasksAt > 0 ? Number(process.argv[tasksAt + 1]) : undefined;
if (tasks !== undefined && !(Number.isInteger(tasks) && tasks > 0)) {
  throw new Error(`--tasks wants a positive whole number, not ${process.argv[tasksAt + 1]}`);
}
const named = process.argv.slice(2).filter((arg) => BENCHES.some((bench) => bench.name === arg));
for (const bench of BENCHES) {
  if (named.length > 0 ? !named.includes(bench.name) : bench.onlyWhenNamed) continue;
  process.stdout.write(`== ${bench.name}${quick ? ' (quick)' : ''}\n`);
  await bench.run(tasks === undefined ? { quick } : { quick, tasks });
}
