/**
 * Batched ingest against one-by-one (issue 25): the same N tasks (100,000 by default) submitted to
 * the local runtime over HTTP, once as 100 batches (N/100 tasks each, at most 1,000) through
 * POST /v1/tasks/batch, and once one POST /v1/tasks each, each mode
 * on a fresh runtime, in one run. Ingest is from the first request to the last answer; the tasks
 * are delayed an hour so that running them does not compete with the submits for the CPU. Prints
 * the ratio and the calls per task of each mode (the call counter of bench/metering), and the CPU
 * time of this process a task (client, API, runtime and emulators all run in it): on a shared
 * machine the wall-clock ratio also measures what the neighbours did during each mode, the CPU
 * ratio much less so. Both paths are warmed up first on a runtime of their own (1,000 tasks each,
 * or N), so neither mode pays the process's warm-up.
 *
 *   npm run bench -- batch-ingest [--quick] [--tasks N]
 */
import { MAX_BATCH_TASKS } from '../runtime/core/batch.ts';
import {
  type BenchOptions,
  benchConfig,
  fmt,
  isMain,
  machineLoad,
  type SubmitSpec,
  startCountedServer,
  submitAll,
  submitBatches,
} from './lib.ts';

export interface BatchIngestResult {
  readonly tasks: number;
  readonly oneByOnePerSecond: number;
  readonly batchedPerSecond: number;
  readonly ratio: number;
  /** CPU time of the process a task, one by one over batched. */
  readonly cpuRatio: number;
}

/** Requests in flight: the one-by-one client as bench/aws-calls.ts, the batch client as the SDK. */
const ONE_BY_ONE_CONCURRENCY = 16;
const BATCH_CONCURRENCY = 2;

/** Tasks each path submits before anything is measured. */
const WARM_UP_TASKS = 1_000;

async function warmUp(specs: readonly SubmitSpec[], batchSize: number): Promise<void> {
  const run = await startCountedServer(benchConfig());
  try {
    await submitAll(run.server.url, specs, ONE_BY_ONE_CONCURRENCY);
    await submitBatches(run.server.url, specs, Math.min(batchSize, Math.ceil(specs.length / 4)), BATCH_CONCURRENCY);
  } finally {
    await run.stop();
  }
}

export async function runBatchIngest(options: BenchOptions & { tasks?: number }): Promise<BatchIngestResult> {
  const n = options.tasks ?? (options.quick ? 5_000 : 100_000);
  const batchSize = Math.min(MAX_BATCH_TASKS, Math.max(1, Math.ceil(n / 100)));
  console.log(
    `\n## Batched ingest (${n} tasks: ${Math.ceil(n / batchSize)} batches of ${batchSize}, against one request a task; ${await machineLoad()})`,
  );
  const specs: SubmitSpec[] = Array.from({ length: n }, (_, i) => ({
    tenantId: 'ingest',
    payload: { i },
    delaySeconds: 3600,
  }));
  const measure = async (mode: 'batched' | 'one by one') => {
    const run = await startCountedServer(benchConfig());
    try {
      run.counter.reset();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      if (mode === 'batched') await submitBatches(run.server.url, specs, batchSize, BATCH_CONCURRENCY);
      else await submitAll(run.server.url, specs, ONE_BY_ONE_CONCURRENCY);
      const seconds = (performance.now() - t0) / 1000;
      const { user, system } = process.cpuUsage(cpu0);
      const cpuMs = (user + system) / 1000 / n;
      const calls = [...run.counter.snapshot().values()].reduce((sum, s) => sum + s.count, 0);
      console.log(
        `${mode.padEnd(11)} ${fmt(seconds)} s, ${fmt(n / seconds, 0)} tasks/s, ${fmt(calls / n, 2)} AWS calls a task, ${fmt(cpuMs, 2)} ms CPU a task`,
      );
      return { perSecond: n / seconds, cpuMs };
    } finally {
      await run.stop();
    }
  };
  // Warm both paths up first (the JIT, the SDK and HTTP clients) on a runtime of their own: each
  // mode then runs on a fresh runtime in a warm process. Without it the first mode measured (one
  // by one) also paid the process's warm-up, which the second did not: a bias towards batched.
  await warmUp(specs.slice(0, Math.min(n, WARM_UP_TASKS)), batchSize);
  const oneByOne = await measure('one by one');
  const batched = await measure('batched');
  const ratio = batched.perSecond / oneByOne.perSecond;
  const cpuRatio = oneByOne.cpuMs / batched.cpuMs;
  console.log(
    `batched ingest / one by one: ${fmt(batched.perSecond, 0)} / ${fmt(oneByOne.perSecond, 0)} tasks/s = ${fmt(ratio, 2)}× (CPU a task: ${fmt(oneByOne.cpuMs, 2)} / ${fmt(batched.cpuMs, 2)} ms = ${fmt(cpuRatio, 2)}×)`,
  );
  return {
    tasks: n,
    oneByOnePerSecond: oneByOne.perSecond,
    batchedPerSecond: batched.perSecond,
    ratio,
    cpuRatio,
  };
}

if (isMain(import.meta.url)) {
  const at = process.argv.indexOf('--tasks');
  await runBatchIngest({
    quick: process.argv.includes('--quick'),
    ...(at > 0 ? { tasks: Number(process.argv[at + 1]) } : {}),
  });
}
