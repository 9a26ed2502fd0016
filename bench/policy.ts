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

/**
 * Decisions per second behind `backlogged` tenants with work queued (100 slots), each decision
 * with a task of a new one-shot tenant (`churn`: the summed weight of the tenants with work, so
 * every fair share, moves at every decision) or of a backlogged one (steady).
 */
function measureChurn(backlogged: number, decisions: number, churn: boolean): number {
  const policy = new SchedulingPolicy({
    policy: 'fair-share',
    agingSeconds: 60,
    pools: { lambda: { concurrency: 100 }, fargate: { vcpu: 16, memoryMiB: 32_768 } },
    tenantDefaults: { weight: 1, maxConcurrency: 100_000 },
  });
  let seq = 0;
  const task = (tenantId: string, nowMs: number): Candidate => ({
    taskId: `t${seq}`,
    tenantId,
    priority: 'normal',
    runtime: 'lambda',
    resources: { vcpu: 0.25, memoryMiB: 512 },
    agingFromMs: nowMs,
    runAtMs: nowMs,
    seq: seq++,
  });
  for (let t = 0; t < backlogged; t++) for (let i = 0; i < 30; i++) policy.add(task(`backlogged-${t}`, 0));
  const running: string[] = [];
  for (let c = policy.next(0); c; c = policy.next(0)) running.push(c.taskId);
  let nowMs = 0;
  const started = performance.now();
  for (let i = 0; i < decisions; i++) {
    nowMs += 10;
    policy.release(running.shift() as string, nowMs);
    policy.add(task(churn ? `one-shot-${i}` : `backlogged-${i % backlogged}`, nowMs));
    for (let c = policy.next(nowMs); c; c = policy.next(nowMs)) running.push(c.taskId);
  }
  return decisions / ((performance.now() - started) / 1000);
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
  // Fair shares move with every tenant that arrives or leaves: what that costs a decision.
  const churnRows: string[][] = [];
  for (const backlogged of options.quick ? [2_000] : [2_000, 10_000]) {
    const best = (churn: boolean) =>
      Math.max(measureChurn(backlogged, decisions / 5, churn), measureChurn(backlogged, decisions / 5, churn));
    const steady = best(false);
    const churn = best(true);
    churnRows.push([
      backlogged.toLocaleString('en'),
      Math.round(steady).toLocaleString('en'),
      Math.round(churn).toLocaleString('en'),
      (churn / steady).toFixed(2),
    ]);
  }
  process.stdout.write(
    `### policy: a new tenant at every decision (every fair share moves) vs a backlogged tenant's task\n\n${formatTable(['tenants backlogged', 'steady decisions/s', 'churn decisions/s', 'churn / steady'], churnRows, { markdown: true })}\n\n`,
  );
  return cases;
}

if (import.meta.main) runPolicyBench({ quick: process.argv.includes('--quick') });
