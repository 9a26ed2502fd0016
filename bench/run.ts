/**
 * Runs every benchmark in one process and prints its table. Claims in the docs come from here:
 * ratios measured within one run, never timed assertions in tests.
 *
 *   npm run bench [-- --quick]
 */
import { runAwsCalls } from './aws-calls.ts';
import { runBullmqComparison } from './bullmq.ts';
import { runLocalE2E } from './local-e2e.ts';
import { runPolicyBench } from './policy.ts';

const BENCHES: { readonly name: string; readonly run: (options: { quick: boolean }) => unknown }[] = [
  { name: 'policy', run: runPolicyBench },
  { name: 'local-e2e', run: runLocalE2E },
  { name: 'aws-calls', run: runAwsCalls },
  { name: 'bullmq', run: runBullmqComparison },
];

const quick = process.argv.includes('--quick');
for (const bench of BENCHES) {
  process.stdout.write(`== ${bench.name}${quick ? ' (quick)' : ''}\n`);
  await bench.run({ quick });
}
