/**
 * `npm run sim -- throughput`: how fast the production scheduler dispatches at AWS's latencies and
 * within DynamoDB's per-partition limits, with nothing else in the way.
 *
 * N no-op tasks are submitted through the production TaskService at R a second (uniformly at
 * random over N / R seconds) by T tenants, and run by the production scheduler Lambda (a new
 * invocation every minute, as deployed today) and Fargate-pool QueueWorkers, on the simulated
 * account (sim/aws: per-call latency, DynamoDB's 1,000 write and 3,000 read units a second per
 * partition key value, the SDK's retries), in virtual time. What could limit the rate besides the
 * scheduler and AWS is set above the load:
 * - every tenant's quota is 100,000 (the most the config allows) and the Fargate pool holds
 *   16,384 quarter-vCPU tasks; `peakLeased` and `peakLeasedPerTenant` say how close the run came
 *   (below both: no dispatch waited for quota or capacity);
 * - enough Fargate workers (one per 250 offered a second, 100 attempts each) and API
 *   environments (one per 30 a second, each with its own SDK clients and retry quota);
 * - no faults, no planned failures, no delays, no cancels, no reads of the tasks back;
 * - the scheduler's production settings (`bufferSize` 2,000, leases 120 s and 60 s).
 *
 * Measured as the client and DynamoDB see it: a task's wait is from the moment its client starts
 * the submit (a throttled submit's retries are part of the wait) to the first DISPATCHED write
 * DynamoDB applied. The rates are the main phase's: the tasks between the 10th and 90th
 * percentile of submit starts (offered) and of dispatches (dispatched), over the time they span,
 * so neither the start (an idle scheduler's first long poll, a cold pool) nor the tail (the last
 * stragglers) weighs on them.
 */
import type { ConfigInput, SchedulerMode } from '../../runtime/core/config.ts';
import { AWS_LATENCY, type LatencyModel } from '../aws/faults.ts';
import { DEFAULT_OPTIONS, NO_FAULTS, runChaos } from './run.ts';

export interface ThroughputOptions {
  readonly seed: number;
  readonly tasks: number;
  /** Offered submits per second. */
  readonly rate: number;
  readonly tenants: number;
  /** Scheduler shards (`scheduler.shards`). @default 1 */
  readonly shards?: number | undefined;
  /** Where the scheduler runs (`scheduler.mode`). @default 'lambda' */
  readonly mode?: SchedulerMode | undefined;
  readonly latency?: LatencyModel | undefined;
}

export interface ThroughputResult {
  readonly tasks: number;
  readonly tenants: number;
  readonly shards: number;
  readonly mode: SchedulerMode;
  /** Main phase: submits per second between the 10th and 90th percentile of submit times. */
  readonly offeredPerSecond: number;
  /** Main phase: dispatches per second between the 10th and 90th percentile of dispatch times. */
  readonly dispatchedPerSecond: number;
  readonly dispatchedOverOffered: number;
  /** Submit to DISPATCHED, seconds; a task never dispatched counts until the run ended. */
  readonly p50WaitSeconds: number;
  readonly p99WaitSeconds: number;
  readonly maxWaitSeconds: number;
  /**
   * DISPATCHED to RUNNING, 99th percentile: the scheduler's send of the worker message and the
   * workers' pick-up. Small: the workers kept up.
   */
  readonly p99DispatchToStartSeconds: number;
  /** Tasks submitted and never dispatched by the end of the run (their client may have given up). */
  readonly undispatched: number;
  /** Submits the client gave up on after its retries (5xx each time). */
  readonly unacknowledged: number;
  /** DynamoDB requests refused for a partition's throughput, each SDK attempt counted. */
  readonly throttledRequests: number;
  /** The partitions that refused most: table, index, read/write, key value, requests. */
  readonly throttledPartitions: readonly {
    table: string;
    index?: string;
    kind: string;
    key: string;
    requests: number;
  }[];
  /** DynamoDB units consumed per task (tasks table, its indexes and the control table). */
  readonly writeUnitsPerTask: number;
  readonly readUnitsPerTask: number;
  /** Most tasks DISPATCHED or RUNNING at once, and the pool's slots (below: capacity never bound). */
  readonly peakLeased: number;
  readonly poolSlots: number;
  /** Most of one tenant's tasks DISPATCHED or RUNNING at once, and the quota (below: it never bound). */
  readonly peakLeasedPerTenant: number;
  readonly tenantQuota: number;
  /** The account's Lambda concurrency (API and scheduler here): most in use, invocations throttled. */
  readonly lambdaPeakConcurrency: number;
  readonly lambdaThrottles: number;
  readonly schedulerInvocations: number;
  /**
   * Scheduler leases taken over the run: each a hand-over (a fresh scheduler resuming from
   * DynamoDB after the index settles), the first of each shard aside.
   */
  readonly leasesTaken: number;
  readonly simulatedSeconds: number;
}

/** The most the config allows per tenant. */
const TENANT_QUOTA = 100_000;
const TASK_RESOURCES = { vcpu: 0.25, memoryMiB: 512 };
const FARGATE_POOL = { vcpu: 4096, memoryMiB: 30 * 1024 * 1024 };
const POOL_SLOTS = Math.min(
  Math.floor(FARGATE_POOL.vcpu / TASK_RESOURCES.vcpu),
  Math.floor(FARGATE_POOL.memoryMiB / TASK_RESOURCES.memoryMiB),
);
/** The scheduler's production settings (runtime/core/config.ts defaults). */
const PRODUCTION_SCHEDULER = { dispatchLeaseSeconds: 120, runLeaseSeconds: 60, bufferSize: 2000 };

export async function measureThroughput(options: ThroughputOptions): Promise<ThroughputResult> {
  const { tasks, rate, tenants } = options;
  const submittedAt = new Map<string, number>();
  const dispatchedAt = new Map<string, number>();
  const startedAt = new Map<string, number>();
  const leasedState = new Map<string, string>();
  const leasedByTenant = new Map<string, number>();
  let leased = 0;
  let peakLeased = 0;
  let peakLeasedPerTenant = 0;
  const config: ConfigInput = {
    pools: { lambda: { concurrency: 1000 }, fargate: FARGATE_POOL },
    tenantDefaults: { weight: 1, maxConcurrency: TENANT_QUOTA },
    taskDefaults: { timeoutSeconds: 60, maxAttempts: 3, ...TASK_RESOURCES },
    scheduler: { ...PRODUCTION_SCHEDULER, shards: options.shards ?? 1, mode: options.mode ?? 'lambda' },
  };
  const history = await runChaos({
    ...DEFAULT_OPTIONS,
    seed: options.seed,
    tasks,
    tenants,
    tenantSettings: { weight: 1, maxConcurrency: TENANT_QUOTA },
    submitSeconds: tasks / rate,
    maxSimulatedSeconds: tasks / rate + 3600,
    faults: NO_FAULTS,
    cancelRate: 0,
    operatorRetryRate: 0,
    plannedFailures: false,
    describe: false,
    delayRate: 0,
    workMs: [0, 0],
    fargateShare: 1,
    fargateWorkers: Math.ceil(rate / 250),
    fargateWorkerConcurrency: 100,
    lambdaWorkers: 1,
    apiEnvironments: Math.ceil(rate / 30),
    latency: options.latency ?? AWS_LATENCY,
    transport: 'direct',
    record: false,
    config,
    onSubmitStart: (taskId, atMs) => {
      if (!submittedAt.has(taskId)) submittedAt.set(taskId, atMs);
    },
    onTaskWrite: (atMs, item) => {
      const taskId = item?.taskId?.S;
      if (!item || typeof taskId !== 'string') return;
      const state = String(item.state?.S);
      if (state === 'DISPATCHED' && !dispatchedAt.has(taskId)) dispatchedAt.set(taskId, atMs);
      if (state === 'RUNNING' && !startedAt.has(taskId)) startedAt.set(taskId, atMs);
      // Tasks DISPATCHED or RUNNING, in all and per tenant, as DynamoDB records them.
      const wasLeased = leasedState.has(taskId);
      const isLeased = state === 'DISPATCHED' || state === 'RUNNING';
      if (wasLeased === isLeased) return;
      const tenantId = String(item.tenantId?.S);
      const delta = isLeased ? 1 : -1;
      if (isLeased) leasedState.set(taskId, state);
      else leasedState.delete(taskId);
      leased += delta;
      const ofTenant = (leasedByTenant.get(tenantId) ?? 0) + delta;
      leasedByTenant.set(tenantId, ofTenant);
      peakLeased = Math.max(peakLeased, leased);
      peakLeasedPerTenant = Math.max(peakLeasedPerTenant, ofTenant);
    },
  });

  const submits = [...submittedAt.values()].sort((a, b) => a - b);
  const dispatches = [...dispatchedAt.values()].sort((a, b) => a - b);
  const waits = [...submittedAt].map(([taskId, at]) => ((dispatchedAt.get(taskId) ?? history.endMs) - at) / 1000);
  waits.sort((a, b) => a - b);
  const pick = (q: number) => waits[Math.min(waits.length - 1, Math.floor(q * waits.length))] ?? 0;
  const startDelays = [...startedAt].map(([taskId, at]) => (at - dispatchedAt.get(taskId)!) / 1000);
  startDelays.sort((a, b) => a - b);
  const offeredPerSecond = mainPhaseRate(submits);
  const dispatchedPerSecond = mainPhaseRate(dispatches);
  const units = { read: 0, write: 0 };
  for (const consumed of history.throughput?.consumed() ?? []) {
    units.read += consumed.read;
    units.write += consumed.write;
  }
  return {
    tasks: submittedAt.size,
    tenants,
    shards: options.shards ?? 1,
    mode: options.mode ?? 'lambda',
    offeredPerSecond: round(offeredPerSecond, 1),
    dispatchedPerSecond: round(dispatchedPerSecond, 1),
    dispatchedOverOffered: offeredPerSecond > 0 ? round(dispatchedPerSecond / offeredPerSecond, 2) : 0,
    p50WaitSeconds: round(pick(0.5), 3),
    p99WaitSeconds: round(pick(0.99), 3),
    maxWaitSeconds: round(waits.at(-1) ?? 0, 3),
    p99DispatchToStartSeconds: round(startDelays[Math.floor(0.99 * (startDelays.length - 1))] ?? 0, 3),
    undispatched: submittedAt.size - dispatchedAt.size,
    unacknowledged: history.unacknowledged,
    throttledRequests: history.throughput?.throttledRequests ?? 0,
    throttledPartitions: (history.throughput?.throttles() ?? []).slice(0, 10),
    writeUnitsPerTask: round(units.write / Math.max(1, submittedAt.size), 2),
    readUnitsPerTask: round(units.read / Math.max(1, submittedAt.size), 2),
    peakLeased,
    poolSlots: POOL_SLOTS,
    peakLeasedPerTenant,
    tenantQuota: TENANT_QUOTA,
    lambdaPeakConcurrency: history.lambda?.peak ?? 0,
    lambdaThrottles: history.lambda?.throttles ?? 0,
    schedulerInvocations: history.schedulerInvocations,
    leasesTaken: history.leases.length,
    simulatedSeconds: round((history.endMs - history.startMs) / 1000, 1),
  };
}

/** Events per second between the 10th and 90th percentile of their (sorted) times, in ms. */
export function mainPhaseRate(sortedMs: readonly number[]): number {
  if (sortedMs.length < 2) return 0;
  const first = Math.floor(0.1 * (sortedMs.length - 1));
  const last = Math.ceil(0.9 * (sortedMs.length - 1));
  const spanMs = sortedMs[last]! - sortedMs[first]!;
  return spanMs > 0 ? ((last - first) / spanMs) * 1000 : Number.POSITIVE_INFINITY;
}

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;
