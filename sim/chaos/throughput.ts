/**
 * One scheduler's throughput ceiling under AWS-like call latencies: the chaos run without faults,
 * a latency model on every DynamoDB and SQS call (virtual time), worker capacity and quotas far
 * above the load, and submits arriving at increasing offered rates. Dispatched per second tracks
 * the offered rate until the scheduler's own loop (receive → read → conditional writes → send →
 * delete, ten messages a receive per tier) saturates.
 */
import { AWS_LATENCY, type LatencyModel } from '../aws/faults.ts';
import { DEFAULT_OPTIONS, NO_FAULTS, runChaos } from './run.ts';

export interface ThroughputRow {
  readonly offeredPerSecond: number;
  readonly tasks: number;
  readonly dispatchedPerSecond: number;
  /** Submit to DISPATCHED, median and 95th percentile, seconds. */
  readonly p50WaitSeconds: number;
  readonly p95WaitSeconds: number;
}

export async function measureThroughput(options: {
  seed: number;
  tasks: number;
  offeredPerSecond: readonly number[];
  latency?: LatencyModel;
}): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  for (const offered of options.offeredPerSecond) {
    const history = await runChaos({
      ...DEFAULT_OPTIONS,
      seed: options.seed,
      tasks: options.tasks,
      tenants: 10,
      submitSeconds: options.tasks / offered,
      maxSimulatedSeconds: 3600,
      faults: NO_FAULTS,
      cancelRate: 0,
      operatorRetryRate: 0,
      workMs: [100, 100],
      fargateShare: 0,
      delayRate: 0,
      lambdaWorkers: 40,
      lambdaWorkerConcurrency: 25,
      latency: options.latency ?? AWS_LATENCY,
      config: {
        pools: { lambda: { concurrency: 1000 }, fargate: { vcpu: 2, memoryMiB: 4096 } },
        tenantDefaults: { weight: 1, maxConcurrency: 1000 },
        taskDefaults: { timeoutSeconds: 60, maxAttempts: 3 },
      },
    });
    const submitted = new Map<string, number>();
    const dispatched = new Map<string, number>();
    for (const { atMs, task } of history.writes) {
      if (!task) continue;
      if (!submitted.has(task.taskId)) submitted.set(task.taskId, atMs);
      if (task.state === 'DISPATCHED' && !dispatched.has(task.taskId)) dispatched.set(task.taskId, atMs);
    }
    const firstSubmit = Math.min(...submitted.values());
    const lastDispatch = Math.max(...dispatched.values());
    const waits = [...dispatched].map(([id, at]) => (at - submitted.get(id)!) / 1000).sort((a, b) => a - b);
    const pick = (q: number) => round(waits[Math.min(waits.length - 1, Math.floor(q * waits.length))] ?? 0);
    rows.push({
      offeredPerSecond: offered,
      tasks: dispatched.size,
      dispatchedPerSecond: round(dispatched.size / ((lastDispatch - firstSubmit) / 1000)),
      p50WaitSeconds: pick(0.5),
      p95WaitSeconds: pick(0.95),
    });
  }
  return rows;
}

const round = (value: number) => Math.round(value * 10) / 10;
