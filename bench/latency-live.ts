/**
 * The live local runtime at AWS's latencies (issue 24's done-when): the same no-op workload
 * (demo.echo) through the whole runtime over HTTP, once with the emulators answering in-process
 * and once with `SCHEDULER_FAULTS` adding `{"dynamodb":[5,15],"sqs":[10,30]}` ms to every call
 * (local/scheduler-faults.ts), one after the other in one run; the ratio of the two throughputs.
 *
 *   npm run bench -- latency-live [--quick]      (2,000 tasks a phase; --quick: 400)
 *
 * Each phase first runs 40 tasks outside its measured window, so that neither runs cold.
 * Throughput: tasks from the first submit to the last attempt finished, over that time; the
 * submits go out 32 at a time over 5 tenants whose quotas (100) and the Lambda pool (100 slots)
 * are above what the load holds, so capacity does not set the pace.
 */
import { SCHEDULER_FAULTS_ENV } from '../local/scheduler-faults.ts';
import {
  type BenchOptions,
  benchConfig,
  fmt,
  isMain,
  machineLoad,
  startCountedServer,
  submitAll,
  textTable,
} from './lib.ts';

/** The latency the issue names (milliseconds, uniform in each range). */
export const AWS_LIKE_LATENCY = '{"latencyMs":{"dynamodb":[5,15],"sqs":[10,30]}}';

const TENANTS = 5;
const SUBMIT_CONCURRENCY = 32;
/** Tasks each phase runs before its measured window. */
const WARM_UP_TASKS = 40;

export interface LatencyPhase {
  readonly latency: string;
  readonly tasks: number;
  readonly seconds: number;
  readonly tasksPerSecond: number;
}

async function phase(tasks: number, faults: string | undefined): Promise<LatencyPhase> {
  const previous = process.env[SCHEDULER_FAULTS_ENV];
  if (faults === undefined) delete process.env[SCHEDULER_FAULTS_ENV];
  else process.env[SCHEDULER_FAULTS_ENV] = faults;
  try {
    const counted = await startCountedServer(
      benchConfig({
        pools: { lambda: { concurrency: 100 }, fargate: { vcpu: 16, memoryMiB: 32768 } },
        tenantDefaults: { weight: 1, maxConcurrency: 100 },
      }),
    );
    try {
      // Warm up outside the measured window (the JIT, connections, the scheduler's lease), as
      // bench/local-e2e.ts does: without it the first phase ran cold and the second warm, which
      // flattered the phase with latency.
      const warm = counted.finished(WARM_UP_TASKS);
      await submitAll(
        counted.server.url,
        Array.from({ length: WARM_UP_TASKS }, (_, i) => ({ tenantId: `warm-up-${i % TENANTS}` })),
        SUBMIT_CONCURRENCY,
      );
      await warm;
      const specs = Array.from({ length: tasks }, (_, i) => ({ tenantId: `latency-${i % TENANTS}` }));
      const finished = counted.finished(tasks);
      const startedMs = performance.now();
      await submitAll(counted.server.url, specs, SUBMIT_CONCURRENCY);
      await finished;
      const seconds = (performance.now() - startedMs) / 1000;
      return { latency: faults ?? 'none', tasks, seconds, tasksPerSecond: tasks / seconds };
    } finally {
      await counted.stop();
    }
  } finally {
    if (previous === undefined) delete process.env[SCHEDULER_FAULTS_ENV];
    else process.env[SCHEDULER_FAULTS_ENV] = previous;
  }
}

export async function runLatencyLive({ quick }: BenchOptions): Promise<{ without: LatencyPhase; with: LatencyPhase }> {
  const tasks = quick ? 400 : 2_000;
  const without = await phase(tasks, undefined);
  const withLatency = await phase(tasks, AWS_LIKE_LATENCY);
  process.stdout.write(
    `${textTable([
      ['latency', 'tasks', 'seconds', 'tasks/s'],
      ...[without, withLatency].map((p) => [p.latency, String(p.tasks), fmt(p.seconds, 2), fmt(p.tasksPerSecond)]),
    ])}\n`,
  );
  process.stdout.write(
    `with latency / without: ${fmt(withLatency.tasksPerSecond / without.tasksPerSecond, 2)}x (${await machineLoad()})\n`,
  );
  return { without, with: withLatency };
}

if (isMain(import.meta.url)) await runLatencyLive({ quick: process.argv.includes('--quick') });
