/**
 * Prints the wait bound (runtime/core/policy/aging.ts) a waiting task is given in a configuration,
 * for a few tiers and counts of tasks ahead: what the bound means in numbers.
 *
 *   node --experimental-strip-types sim/bound-table.ts [config.json]
 */
import { readFileSync } from 'node:fs';
import { parseConfig } from '../runtime/core/config.ts';
import { holdSecondsOf, waitBound } from '../runtime/core/policy/index.ts';
import { PRIORITY_TIERS, type Runtime, tierRank } from '../runtime/core/task.ts';

const file = process.argv[2];
const config = parseConfig(file ? JSON.parse(readFileSync(file, 'utf8')) : {}, file ?? 'default configuration');
const hold = holdSecondsOf(config);
const hours = (seconds: number | null) =>
  seconds === null ? 'none' : `${seconds} s (${(seconds / 3600).toFixed(1)} h)`;
process.stdout.write(
  `policy ${config.policy}, agingSeconds ${config.agingSeconds}, τ lambda ${hold.lambda} s, τ fargate ${hold.fargate} s, ` +
    `maxConcurrency ${config.tenantDefaults.maxConcurrency}\n`,
);
process.stdout.write('| runtime | tier at submit | tasks ahead (k) | bound at submit |\n|---|---|---|---|\n');
for (const runtime of ['lambda', 'fargate'] as Runtime[]) {
  for (const tier of [PRIORITY_TIERS[0], PRIORITY_TIERS[2]] as const) {
    for (const aheadCount of [0, 10, 100]) {
      const bound = waitBound({
        policy: config.policy,
        runtime,
        baseRank: tierRank(tier),
        agingFromMs: 0,
        runAtMs: 0,
        nowMs: 0,
        agingSeconds: config.agingSeconds,
        aheadCount,
        lambdaConcurrency: config.pools.lambda.concurrency,
        maxConcurrency: config.tenantDefaults.maxConcurrency,
        poolHoldSeconds: hold[runtime],
        tenantHoldSeconds: Math.max(hold.lambda, hold.fargate),
        reservations: true,
        fitsPool: true,
      });
      process.stdout.write(`| ${runtime} | ${tier} | ${aheadCount} | ${hours(bound.seconds)} |\n`);
    }
  }
}
