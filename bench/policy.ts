/**
 * Policy benchmark: scheduling decisions per second of the fair-share policy as the queue and
 * the tenant count grow. Each decision is the scheduler's steady state: one task finishes
 * (release), one arrives (add) and one is picked (next), with virtual time advancing so aging
 * timers fire. Printed as ratios against the smallest case: a logarithmic engine stays near 1.
 *
 *   node bench/policy.ts [--quick]
 */

import { formatTable } from '../report/table.ts';
import { SchedulingPolicy } from '../runtime/core/policy/policy.ts';
import type { Candidate } from '../runtime/core/policy/types.ts';
import { PRIORITY_TIERS } from '../runtime/core/task.ts';
import { Prng } from '../sim/prng.ts';

export interface PolicyBenchCase {
  readonly queued: number;
  readonly tenants: number;
  readonly decisionsPerSecond: number;
  readonly ratio: number;
}

const SLOTS = 1000;

function measure(queued: number, tenants: number, decisions: number): number {
  const rng = new Prng(queued ^ tenants);
  const policy = new SchedulingPolicy({
    policy: 'fair-share',
    agingSeconds: 60,
    pools: { lambda: { concurrency: SLOTS }, fargate: { vcpu: 256, memoryMiB: 524_288 } },
    tenantDefaults: { weight: 1, maxConcurrency: 100_000 },
  });
  let seq = 0;
  let nowMs = 0;
  const makeTask = (): Candidate => {
    const fargate = rng.next() < 0.1;
    return {
      taskId: `t${seq}`,
      tenantId: `tenant-${rng.int(tenants)}`,
      priority: PRIORITY_TIERS[rng.int(4)] ?? 'normal',
      runtime: fargate ? 'fargate' : 'lambda',
      resources: fargate
        ? { vcpu: 0.25 * (1 + rng.int(8)), memoryMiB: 512 * (1 + rng.int(8)) }
        : { vcpu: 0.25, memoryMiB: 512 },
      agingFromMs: nowMs - rng.int(300_000),
      runAtMs: nowMs,
      seq: seq++,
    };
  };
  // Fill: the pools full of running work, `queued` tasks waiting.
  const running: string[] = [];
  for (let i = 0; i < queued + SLOTS * 2; i++) policy.add(makeTask());
  for (let c = policy.next(nowMs); c; c = policy.next(nowMs)) running.push(c.taskId);
  const started = performance.now();
  for (let i = 0; i < decisions; i++) {
    nowMs += 5;
    const done = rng.int(running.length);
    policy.release(running[done] as string);
    policy.add(makeTask());
    const next = policy.next(nowMs);
    if (next) running[done] = next.taskId;
    else running.splice(done, 1);
  }
  const seconds = (performance.now() - started) / 1000;
  return decisions / seconds;
}

export function runPolicyBench(options: { quick: boolean }): PolicyBenchCase[] {
  const sizes = options.quick ? [1_000, 100_000] : [1_000, 100_000, 1_000_000];
  const tenantCounts = options.quick ? [10, 1_000] : [10, 1_000, 10_000];
  const decisions = options.quick ? 20_000 : 100_000;
  const cases: PolicyBenchCase[] = [];
  let baseline = 0;
  measure(1_000, 10, decisions); // warm the JIT before the first (reference) case
  for (const queued of sizes) {
    for (const tenants of tenantCounts) {
      // Best of two: one run absorbs a GC pause or a noisy neighbour on the machine.
      const rate = Math.max(measure(queued, tenants, decisions), measure(queued, tenants, decisions));
      if (baseline === 0) baseline = rate;
      cases.push({ queued, tenants, decisionsPerSecond: rate, ratio: rate / baseline });
    }
  }
  const rows = cases.map((c) => [
    c.queued.toLocaleString('en'),
    c.tenants.toLocaleString('en'),
    Math.round(c.decisionsPerSecond).toLocaleString('en'),
    c.ratio.toFixed(2),
  ]);
  process.stdout.write(
    `### policy: fair-share decisions per second (release + add + next)\n\n${formatTable(['queued', 'tenants', 'decisions/s', 'ratio vs smallest'], rows, { markdown: true })}\n\n`,
  );
  return cases;
}

if (import.meta.main) runPolicyBench({ quick: process.argv.includes('--quick') });
