/**
 * One chaos run: the production code on the simulated AWS account, under virtual time, with
 * faults drawn from one seed.
 *
 * - API: TaskService.submit (idempotency key per request, retried by the "client" on a 5xx),
 *   describe (the wait bound it gives), cancel and operator retry; some submits crash between
 *   the task's write and its announcement, and their client gives up (the registry backstop's case).
 * - Scheduler: the deployed handler (runtime/handlers/scheduler.ts) on a simulated Lambda
 *   function (sim/aws/lambda.ts: 5-minute timeout, asynchronous invokes, the account's
 *   concurrency): woken by the API, workers and redrive when they announce work and no lease is
 *   live, ticked every minute as the safety net, stopping when idle, handing over to a fresh
 *   invocation before its timeout; no reserved concurrency, so invocations may overlap and the
 *   lease decides. Some invocations crash at a random moment (the Lambda then times out).
 * - Lambda: the account's concurrency shared by the API's submits, the scheduler and the Lambda
 *   pool, whose event source mapping scales its environments with the queue.
 * - Workers: QueueWorkers running runAttempt on both pools; each worker process dies at a
 *   random moment (its in-flight calls never answered) and is replaced.
 * - Dead letters: the dead-letter consumer settling worker dead letters (redriveDeadLetter).
 * Every component has its own SDK clients whose transport loses responses and throttles.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { startDeadLetterConsumer } from '../../local/dead-letter-consumer.ts';
import { isDependentsKey } from '../../runtime/adapters/dependents-store.ts';
import { checkDependencies, DependencyService } from '../../runtime/app/dependencies.ts';
import { runSchedulerService } from '../../runtime/app/scheduler-service.ts';
import { idempotentTaskId } from '../../runtime/app/task-service.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { thenTaskKey } from '../../runtime/core/batch.ts';
import { type ConfigInput, parseConfig } from '../../runtime/core/config.ts';
import { holdOnDependencies } from '../../runtime/core/dependencies.ts';
import { NonRetryableError } from '../../runtime/core/errors.ts';
import { createTask } from '../../runtime/core/lifecycle.ts';
import type { TaskLogger } from '../../runtime/core/logger.ts';
import { seededRandom } from '../../runtime/core/random.ts';
import { shardIndexes } from '../../runtime/core/shards.ts';
import type { PriorityTier, Task, TaskState, TenantSettings } from '../../runtime/core/task.ts';
import {
  type SchedulerHandlerLogger,
  type SchedulerHandlerMetrics,
  schedulerHandler,
} from '../../runtime/handlers/scheduler.ts';
import { queuesFor, workerQueue } from '../../runtime/infra/resources.ts';
import type { SchedulerEvent } from '../../runtime/scheduler/activation.ts';
import type { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { QueueWorker } from '../../runtime/worker/queue-worker.ts';
import type { PartitionLimits } from '../aws/capacity.ts';
import type { AttributeMap } from '../aws/dynamodb.ts';
import { type CallRecord, type LatencyModel, NO_TRANSPORT_FAULTS, type TransportFaults } from '../aws/faults.ts';
import { LambdaAccount, type MappedEnvironment, SimulatedFunction, SqsEventSourceMapping } from '../aws/lambda.ts';
import { installVirtualClock } from '../aws/virtual-clock.ts';
import { type Component, SimulatedAws } from '../aws/world.ts';
import type { History } from './history.ts';

export interface ChaosFaults extends TransportFaults {
  readonly duplicateDeliveryRate: number;
  readonly earlyRedeliveryRate: number;
  readonly shortPollMissRate: number;
  readonly batchEntryFailureRate: number;
  readonly indexLagMs: number;
  readonly eventualLagMs: number;
  readonly unprocessedRate: number;
  /** Chance that a scheduler invocation crashes at a random moment of its run. */
  readonly schedulerCrashRate: number;
  /** Mean life of a worker process, seconds (0: workers never crash). */
  readonly workerMeanLifeSeconds: number;
  /**
   * Chance that a submit's API process dies between the task's write and its announcement, and
   * its client gives up: a stored task nobody announced (runtime/scheduler/backstop.ts).
   */
  readonly submitCrashRate: number;
  /**
   * Chance that a scheduler invocation stalls once, at a random moment, for up to
   * `schedulerStallMaxMs`: its calls are held, then land late (a paused holder's dispatch writes
   * landing after its lease ran out). docs/failure-handling.md's fence guarantee holds for writes
   * that land within margin + settle (12 s) of their issue; the default stays inside that.
   */
  readonly schedulerStallRate: number;
  readonly schedulerStallMaxMs: number;
}

export const DEFAULT_FAULTS: ChaosFaults = {
  lostResponseRate: 0.02,
  throttleRate: 0.02,
  duplicateDeliveryRate: 0.05,
  earlyRedeliveryRate: 0.02,
  shortPollMissRate: 0.2,
  batchEntryFailureRate: 0.01,
  indexLagMs: 300,
  eventualLagMs: 1000,
  unprocessedRate: 0.1,
  schedulerCrashRate: 0.1,
  workerMeanLifeSeconds: 600,
  submitCrashRate: 0.02,
  schedulerStallRate: 0.1,
  schedulerStallMaxMs: 11_000,
};

export const NO_FAULTS: ChaosFaults = {
  ...NO_TRANSPORT_FAULTS,
  duplicateDeliveryRate: 0,
  earlyRedeliveryRate: 0,
  shortPollMissRate: 0,
  batchEntryFailureRate: 0,
  indexLagMs: 0,
  eventualLagMs: 0,
  unprocessedRate: 0,
  schedulerCrashRate: 0,
  workerMeanLifeSeconds: 0,
  submitCrashRate: 0,
  schedulerStallRate: 0,
  schedulerStallMaxMs: 0,
};

export interface ChaosOptions {
  readonly seed: number;
  readonly tasks: number;
  /** Tenants, each with its own quota (maxConcurrency 1..3). */
  readonly tenants: number;
  /** Submits are spread over this many simulated seconds. */
  readonly submitSeconds: number;
  /** The run stops here even if tasks are unfinished (they are then reported). */
  readonly maxSimulatedSeconds: number;
  readonly faults: ChaosFaults;
  /** Chance that a task is cancelled at some point, and that a cancelled or failed one is retried. */
  readonly cancelRate: number;
  readonly operatorRetryRate: number;
  /** Handler run time of each task, ms: uniform in [min, max]. */
  readonly workMs?: readonly [number, number];
  /** Chance that a payload carries 150 KiB of padding (SQS's 1 MiB batches, 256 KiB messages). */
  readonly largePayloadRate?: number;
  /** Chance that a payload holds characters SQS refuses raw (U+FFFE, U+FFFF) or above U+FFFF. */
  readonly oddCharacterRate?: number;
  readonly latency?: LatencyModel;
  readonly config?: ConfigInput;
  /**
   * MaximumConcurrency of the Lambda pool's event source mapping (default: the pool's
   * concurrency, as the stack sets it); the mapping scales its environments up to it
   * (sim/aws/lambda.ts).
   */
  readonly lambdaWorkers?: number;
  /** The account's Lambda concurrency, shared by API, scheduler and worker invocations (default 1,000). */
  readonly lambdaAccountConcurrency?: number;
  /** Attempts one Lambda-pool worker runs at once (default 1, as one Lambda invocation). */
  readonly lambdaWorkerConcurrency?: number;
  /** Fraction of tasks submitted with a delay (default 0.1), of up to this many seconds (default 300). */
  readonly delayRate?: number;
  readonly maxDelaySeconds?: number;
  /** Fraction of tasks sent to the Fargate pool (default 0.25). */
  readonly fargateShare?: number;
  /** Fargate worker processes (default 1) and attempts each runs at once (default 4). */
  readonly fargateWorkers?: number;
  readonly fargateWorkerConcurrency?: number;
  /**
   * How components reach the simulated account: `sdk` (default), the SDK's whole stack over the
   * transport that injects the faults; `direct`, commands handed to the account with the SDK's
   * retries kept (sim/aws/direct.ts), for runs without transport faults that need the CPU.
   */
  readonly transport?: 'sdk' | 'direct';
  /** Told of every AWS call a component makes (by its name: `scheduler-3`, `service-0-1`, …). */
  readonly onCall?: ((component: string, call: CallRecord) => void) | undefined;
  /** Every tenant's settings (default: weights and quotas 1, 2, 3, 1, ... by tenant). */
  readonly tenantSettings?: TenantSettings;
  /** Whether some tasks are planned to fail (15 % retried, 3 % permanently; default true). */
  readonly plannedFailures?: boolean;
  /** Whether the client reads each accepted task back for its wait bound (default true). */
  readonly describe?: boolean;
  /**
   * API Lambda environments the submits are spread over (default 1), each with its own SDK
   * clients (and so its own retry quota), as concurrent API invocations have.
   */
  readonly apiEnvironments?: number;
  /**
   * DynamoDB's per-partition limits for the run (default AWS's 1,000 write and 3,000 read units a
   * second per key value): lower ones make a small run as hot as a large one.
   */
  readonly partitionLimits?: PartitionLimits;
  /**
   * Keep every task write and the final items in the history (default true; the checker reads
   * them). A long measurement turns it off and watches the writes through `onTaskWrite`.
   */
  readonly record?: boolean;
  readonly onTaskWrite?: (atMs: number, item: AttributeMap | undefined) => void;
  /** Told when a client starts submitting a task (before any retry), with the task's id. */
  readonly onSubmitStart?: (taskId: string, atMs: number) => void;
  /**
   * Fraction of tasks each submitted by a tenant of its own (`solo-<i>`, one task ever: its only
   * waiting task, which the API gives a wait bound), spread over the submit window; the others
   * go to the regular tenants, within `crowdSubmitSeconds` when set (a backlog). Default 0.
   */
  readonly soloShare?: number;
  readonly crowdSubmitSeconds?: number;
  /** Ask for each waiting task again 3–8 s after its submit, as a polling client would. */
  readonly describeAgain?: boolean;
  /**
   * Flow control (issue 26): tenants with start-rate limits, tasks of two types with concurrency
   * keys, and an operator pausing and resuming a tenant or a type every few seconds.
   */
  readonly flow?: boolean;
  /**
   * Task dependencies (issue 25): the chance that a submit depends on one or two tasks its tenant
   * submitted before (chains form), settled by the task table's stream function (default 0).
   */
  readonly dependencyRate?: number;
  /**
   * Batches (POST /v1/tasks/batch) submitted beside the single tasks, each of `batchSize` tasks
   * of one tenant and a then-task (`batchSize` default 4-12); members are neither cancelled nor
   * retried by the operator, so each ends once and the then-task's counts are the checker's.
   * Default 0; the mixed and short scenarios (the CLI's default, the long sweep's) have some.
   */
  readonly batches?: number;
  readonly batchSize?: readonly [number, number];
  /**
   * Steady tenants (`steady-<i>`, the bounds scenario), beside the regular ones: each keeps one
   * task waiting at a time until the submit window ends. It submits a task and asks for it every
   * 4-12 s while it waits, as a polling client does (every answer a wait bound, or why none); it
   * submits its next 0-5 s after the previous one started (even-numbered tenants: one task running
   * while the next waits) or ended (odd-numbered: running nothing then). Quotas 1 and 2, weights
   * 1-3; no cancels or operator retries. Default 0.
   */
  readonly steadyTenants?: number;
  /** Each task's timeoutSeconds, drawn from its pool's list (default: taskDefaults' 60 s). */
  readonly timeouts?: { readonly lambda: readonly number[]; readonly fargate: readonly number[] };
  /** A Fargate task's vCPU, drawn from this list, with 2 GiB a vCPU (default: taskDefaults'). */
  readonly fargateVcpus?: readonly number[];
  /**
   * Delayed work while the system idles (the delayed scenario): `indexTasks` tasks of tenant
   * `archive`, due a day after the run starts, stored before it (submitted earlier, their
   * announcements long taken in, the tenant-tier registered): a large `byTenantQueue` index.
   * Then `submits` one-task tenants (`late-<i>`, quota 1), one about every `spacingSeconds`, each
   * submitting a task with a delay drawn from `delaySeconds`; `retriedShare` of them fail their
   * first attempt and wait out the retry backoff. Default: none.
   */
  readonly delayedWork?: {
    readonly indexTasks: number;
    readonly submits: number;
    readonly spacingSeconds: number;
    readonly delaySeconds: readonly [number, number];
    readonly retriedShare: number;
  };
}

export const DEFAULT_OPTIONS: Omit<ChaosOptions, 'seed'> = {
  tasks: 40,
  tenants: 3,
  submitSeconds: 120,
  maxSimulatedSeconds: 3 * 3600,
  faults: DEFAULT_FAULTS,
  cancelRate: 0.1,
  operatorRetryRate: 0.5,
};

/** Workloads on top of DEFAULT_OPTIONS (`--scenario`). */
export const CHAOS_SCENARIOS = {
  /** With dependency chains (a quarter of the submits depend on earlier tasks of their tenant) and 2 batches. */
  mixed: { dependencyRate: 0.25, batches: 2 },
  /** The long sweep's runs: the mixed workload compressed so a run settles in 1-3 simulated minutes. */
  short: { tasks: 20, submitSeconds: 30, maxDelaySeconds: 60, batches: 1, batchSize: [3, 6] as const },
  backlog: { tasks: 60, tenants: 1, submitSeconds: 60, workMs: [20_000, 40_000] as const, cancelRate: 0 },
  payloads: { largePayloadRate: 0.3, oddCharacterRate: 0.3 },
  /**
   * One tenant submitting 2,500 short tasks within half a second (through 20 API environments),
   * with DynamoDB's per-partition limits at a tenth of AWS's (100 write and 300 read units a
   * second per key value): its index keys, 8 shards each (runtime/adapters/index-keys.ts), take
   * about 300 writes each in that half second, so submits and dispatches are throttled for real
   * (sim/aws/capacity.ts) on top of the faults, as 10 times the load would be at AWS's limits.
   * (At AWS's limits the sharded keys take 2,500 tasks in half a second without a throttle.)
   */
  hot: {
    partitionLimits: { writeUnitsPerSecond: 100, readUnitsPerSecond: 300 },
    tasks: 2500,
    tenants: 1,
    submitSeconds: 0.5,
    apiEnvironments: 20,
    tenantSettings: { weight: 1, maxConcurrency: 50 },
    workMs: [0, 200] as const,
    delayRate: 0,
  },
  /**
   * Fair share's rotation and the wait bound under faults and restarts (issue 22): 4 tenants queue
   * a backlog in the first 20 s; 60 one-task tenants submit over 120 s beside it, each given a
   * bound (and asked again later); Lambda only, no delays, so the bounds are the checker's.
   */
  rotation: {
    tasks: 100,
    tenants: 4,
    soloShare: 0.6,
    crowdSubmitSeconds: 20,
    delayRate: 0,
    fargateShare: 0,
    describeAgain: true,
    cancelRate: 0,
  },
  /**
   * The wait bound checked thousands of times (issue 22): 60 steady tenants each keep one task
   * waiting at a time (a polling client asking every 4-12 s) for 10 minutes, beside 3 regular
   * tenants (quotas 1, 2, 3) that queue 240 tasks in the first 30 s; a quarter of the tasks on
   * Fargate (0.25-2 vCPU of 2: whole-pool tasks reserve it), timeouts of 15-60 s (Lambda, cap 60 s)
   * and 15-120 s (Fargate, cap 120 s). Every fault of the default sweep.
   */
  bounds: {
    tasks: 240,
    tenants: 3,
    submitSeconds: 600,
    crowdSubmitSeconds: 30,
    steadyTenants: 60,
    timeouts: { lambda: [15, 30, 60], fargate: [15, 60, 120] },
    fargateVcpus: [0.25, 0.5, 1, 2],
    config: {
      pools: {
        lambda: { concurrency: 6, maxTimeoutSeconds: 60 },
        fargate: { vcpu: 2, memoryMiB: 4096, maxTimeoutSeconds: 120 },
      },
    } as ConfigInput,
  },
  /**
   * The bounds scenario at light load: 15 steady tenants and 3 regular ones on a Lambda pool of
   * 100 slots that never comes near full, so answers rest on the pool's headroom (the pace is
   * none: the pool is idle in some 10 s). Every fault of the default sweep.
   */
  quiet: {
    tasks: 40,
    tenants: 3,
    submitSeconds: 600,
    steadyTenants: 15,
    timeouts: { lambda: [15, 30, 60], fargate: [15, 60, 120] },
    fargateVcpus: [0.25, 0.5, 1],
    config: {
      pools: {
        lambda: { concurrency: 100, maxTimeoutSeconds: 60 },
        fargate: { vcpu: 2, memoryMiB: 4096, maxTimeoutSeconds: 120 },
      },
    } as ConfigInput,
  },
  /**
   * Flow control under every fault (issue 26): start-rate limits (tenant-0 1/s burst 2, tenant-1
   * 2/s burst 3), concurrency keys (3 keys a tenant, limits 1 and 2) on 70 % of the tasks, two
   * task types, and an operator pausing and resuming a tenant or a type every 5-15 s.
   */
  flow: {
    tasks: 60,
    tenants: 3,
    submitSeconds: 60,
    flow: true,
    workMs: [200, 4000] as const,
    maxDelaySeconds: 60,
  },
  /**
   * Scale to zero with a large index (runtime/scheduler/activation.ts): 3,000 tasks of tenant
   * `archive` due tomorrow (its tenant-tier registered: 6 pages of the backstop's Scan), and 16
   * one-task tenants submitting one
   * task each about every 150 s, delayed 2-20 minutes (beyond the 90 s horizon, some beyond SQS's
   * 15-minute DelaySeconds cap), a quarter of them failing once and retried after a backoff of up
   * to 4 minutes: short work, so the scheduler stops between them and the minute tick must start
   * one when each falls due (the due-start invariant). Every fault of the default sweep.
   */
  delayed: {
    tasks: 0,
    tenants: 0,
    submitSeconds: 2400,
    maxSimulatedSeconds: 4200,
    cancelRate: 0,
    operatorRetryRate: 0,
    workMs: [200, 2000] as const,
    delayedWork: { indexTasks: 3000, submits: 16, spacingSeconds: 150, delaySeconds: [120, 1200], retriedShare: 0.25 },
    config: { retry: { baseDelaySeconds: 240, maxDelaySeconds: 900 } } as ConfigInput,
  },
} satisfies Record<string, Partial<ChaosOptions>>;

/** The flow scenario's start-rate limits, by tenant index. */
const FLOW_RATES: readonly ({ maxStartsPerSecond: number; burst: number } | undefined)[] = [
  { maxStartsPerSecond: 1, burst: 2 },
  { maxStartsPerSecond: 2, burst: 3 },
];

const START_MS = Date.parse('2026-01-05T00:00:00.000Z');
/** The delayed scenario's tenant whose far-future tasks make the large index. */
const DELAYED_INDEX_TENANT = 'archive';
const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
/** The task table's stream function's timeout, as lib/task-events.ts deploys it. */
const STREAM_FUNCTION_TIMEOUT_MS = 60_000;
/** The scheduler Lambda's safety-net tick (EventBridge Scheduler, rate 1 minute). */
const TICK_EVERY_MS = 60_000;
/** The scheduler function's timeout and maximum event age, as lib/scheduler-loop.ts deploys it. */
export const SCHEDULER_TIMEOUT_MS = 300_000;
const SCHEDULER_MAX_EVENT_AGE_MS = 60_000;

const silent: TaskLogger = { info() {}, warn() {}, error() {} };
/** Powertools' logger and metrics as the scheduler handler uses them, saying nothing. */
const silentHandlerLogger: SchedulerHandlerLogger = { addContext() {}, info() {}, warn() {} };
const silentMetrics: SchedulerHandlerMetrics = {
  addMetric() {},
  singleMetric: () => ({ addDimension() {}, addDimensions() {}, addMetric() {} }),
  publishStoredMetrics() {},
};

const workPayload = z.strictObject({
  ms: z.number().int().min(0),
  pad: z.string().optional(),
  failTimes: z.number().int().min(0),
  permanent: z.boolean(),
  /** A batch's then-task gets its batch's counts here (core/batch.ts). */
  batch: z.unknown().optional(),
});

export async function runChaos(options: ChaosOptions): Promise<History> {
  await warmUp();
  const clock = installVirtualClock({ startMs: START_MS, seed: options.seed });
  try {
    return await simulate(options, clock);
  } finally {
    clock.uninstall();
  }
}

let warm = false;

/**
 * The AWS SDK loads parts of itself on a client's first call; under the virtual clock that real
 * I/O would let simulated time run on while it loads (the first run in a process, or in vitest,
 * then starts its calls late and follows another history). One call of each kind, on real
 * time, before the first run keeps one seed to one history.
 */
async function warmUp(): Promise<void> {
  if (warm) return;
  const world = new SimulatedAws({
    seed: 0,
    now: () => Date.now(),
    indexLagMs: 0,
    eventualLagMs: 0,
    unprocessedRate: 0,
    sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
  });
  const { clients } = world.component('warm-up', NO_TRANSPORT_FAULTS);
  await clients.documents.send(
    new GetCommand({ TableName: world.resources.tables.tasks!, Key: { taskId: 'warm-up' } }),
  );
  await clients.sqs.send(
    new ReceiveMessageCommand({ QueueUrl: Object.values(world.resources.queueUrls)[0]!, WaitTimeSeconds: 0 }),
  );
  warm = true;
}

async function simulate(options: ChaosOptions, clock: ReturnType<typeof installVirtualClock>): Promise<History> {
  const { seed, faults } = options;
  const random = seededRandom(seed);
  const world = new SimulatedAws({
    queues: queuesFor(options.config?.scheduler?.shards ?? 1),
    seed,
    now: () => Date.now(),
    ...(options.partitionLimits ? { partitionLimits: options.partitionLimits } : {}),
    indexLagMs: faults.indexLagMs,
    eventualLagMs: faults.eventualLagMs,
    unprocessedRate: faults.unprocessedRate,
    sqs: {
      duplicateDeliveryRate: faults.duplicateDeliveryRate,
      earlyRedeliveryRate: faults.earlyRedeliveryRate,
      shortPollMissRate: faults.shortPollMissRate,
      batchEntryFailureRate: faults.batchEntryFailureRate,
    },
  });
  const tenants = Array.from({ length: options.tenants }, (_, i) => `tenant-${i}`);
  const steadyTenants = Array.from({ length: options.steadyTenants ?? 0 }, (_, i) => `steady-${i}`);
  const quotas = Object.fromEntries([
    ...tenants.map((t, i) => [
      t,
      options.tenantSettings ?? {
        weight: 1 + (i % 3),
        maxConcurrency: options.flow ? 3 + (i % 3) : 1 + (i % 3),
        ...(options.flow ? FLOW_RATES[i] : {}),
      },
    ]),
    ...steadyTenants.map((t, i) => [t, { weight: 1 + (i % 3), maxConcurrency: 1 + (i % 2) }]),
    ...(options.delayedWork
      ? [
          [DELAYED_INDEX_TENANT, { weight: 1, maxConcurrency: 1 }],
          ...Array.from({ length: options.delayedWork.submits }, (_, i) => [
            `late-${i}`,
            { weight: 1, maxConcurrency: 1 },
          ]),
        ]
      : []),
  ]);
  const tasksTable = world.resources.tables.tasks!;
  if (options.record === false) world.dynamodb.recordTables.delete(tasksTable);
  // The task table's stream (NEW_AND_OLD_IMAGES): what the stream function reads, below.
  const streamed: { taskId: string; event: { state: TaskState; previousState: TaskState | null } }[] = [];
  const streamedState = new Map<string, TaskState>();
  let onStreamed = () => {};
  const observe = options.onTaskWrite;
  world.dynamodb.onWrite = (tableName, atMs, item) => {
    if (tableName !== tasksTable) return;
    observe?.(atMs, item);
    if (!item?.taskId || !item.state) return;
    const after = unmarshallTask(item) as Task;
    const before = streamedState.get(after.taskId);
    streamedState.set(after.taskId, after.state);
    if (before === after.state) return;
    const event = { state: after.state, previousState: before ?? null };
    if (DependencyService.concerns(after, event)) {
      streamed.push({ taskId: after.taskId, event });
      onStreamed();
    }
  };
  const config = parseConfig(
    {
      pools: { lambda: { concurrency: 6 }, fargate: { vcpu: 2, memoryMiB: 4096 } },
      tenants: quotas,
      taskDefaults: { timeoutSeconds: 60, maxAttempts: 3 },
      ...options.config,
      // The run's scheduler settings, with whatever the options set on top (e.g. `shards`).
      scheduler: { dispatchLeaseSeconds: 120, runLeaseSeconds: 30, bufferSize: 200, ...options.config?.scheduler },
    },
    'chaos configuration',
  );

  const acknowledgedBatches: NonNullable<History['batches']>[number][] = [];
  const history: History = {
    seed,
    startMs: START_MS,
    endMs: START_MS,
    tenants: quotas,
    accepted: [],
    batches: acknowledgedBatches,
    bounds: [],
    admitted: new Map(),
    admissions: new Map(),
    leases: [],
    stalls: [],
    pauses: [],
    dependsOn: new Map(),
    runs: [],
    starts: [],
    deaths: [],
    unacknowledged: 0,
    writes: [],
    receives: world.sqs.receives,
    sends: world.sqs.sends,
    deadLettered: world.sqs.deadLettered,
    finalTasks: [],
    schedulerInvocations: 0,
    scheduler: { invoked: {}, ended: {} },
    calls: { ok: 0, lost: 0, throttled: 0 },
    pools: { lambdaSlots: config.pools.lambda.concurrency, fargateVcpu: config.pools.fargate.vcpu },
  };
  const componentFaults: TransportFaults = {
    lostResponseRate: faults.lostResponseRate,
    throttleRate: faults.throttleRate,
  };
  /** Component per RUNNING write (taskId#fence), to excuse attempts whose worker died. */
  const startedBy = new Map<string, string>();
  const component = (name: string): Component =>
    world.component(name, componentFaults, {
      direct: options.transport === 'direct',
      latency: options.latency,
      onCall: (call) => {
        history.calls[call.outcome]++;
        options.onCall?.(name, call);
      },
      onRequest: {
        operations: new Set(['PutItem']),
        listener: (_operation, body) => {
          const item = (body as { Item?: Record<string, Record<string, string>> }).Item;
          if (item?.state?.S === 'RUNNING' && item.taskId?.S) {
            const key = `${item.taskId.S}#${item.fence?.N}`;
            if (!startedBy.has(key)) startedBy.set(key, name);
          }
        },
      },
    });
  /**
   * A component's services. `wakes`: what announces work wakes the scheduler function when no
   * scheduler holds the lease (the stack sets SCHEDULER_FUNCTION on every function but the
   * scheduler's own).
   */
  const servicesFor = (part: Component, wakes = true): Services =>
    buildServices({
      config,
      clients: part.clients,
      resources: world.resources,
      registry,
      ...(wakes
        ? {
            wakeScheduler: async (shard: number) =>
              schedulerFunction.invokeAsync(shard === 0 ? { reason: 'wake' } : { reason: 'wake', shard }),
            logger: silent,
          }
        : {}),
    });

  const simWork = (type: string) =>
    defineTaskType({
      type,
      description: 'Simulated work: records each run, sleeps, fails on request.',
      payload: workPayload,
      async handler(payload, ctx) {
        history.runs.push({ taskId: ctx.taskId, fence: ctx.fence, attempt: ctx.attempt, atMs: Date.now() });
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, payload.ms);
          ctx.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            reject(ctx.signal.reason);
          });
        });
        if (payload.permanent) throw new NonRetryableError('planned permanent failure');
        if (ctx.attempt <= payload.failTimes) throw new Error(`planned failure ${ctx.attempt}`);
        return { attempt: ctx.attempt };
      },
    });
  const registry = new TaskTypeRegistry([simWork('sim.work'), simWork('sim.other')]);

  // --- API -------------------------------------------------------------------------------
  const lambda = new LambdaAccount(options.lambdaAccountConcurrency ?? 1000);
  history.lambda = lambda;
  const apiEnvironments = Array.from({ length: Math.max(1, options.apiEnvironments ?? 1) }, (_, i) =>
    servicesFor(component(i === 0 ? 'api' : `api-${i}`)),
  );
  const api = apiEnvironments[0]!;
  const priorities: PriorityTier[] = ['critical', 'high', 'normal', 'low'];
  const pending = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    pending.add(work);
    work.finally(() => pending.delete(work));
  };
  const submitAt = Array.from({ length: options.tasks }, () => START_MS + random() * options.submitSeconds * 1000).sort(
    (a, b) => a - b,
  );
  // Its own stream, so adding the fault left every other draw of a seed where it was.
  const submitCrashRandom = seededRandom(seed * 7919 + 17);
  const stallRandom = seededRandom(seed * 7919 + 29);
  // The same for the rotation scenario's draws (one-task tenants, a backlog, asking again).
  const rotationRandom = seededRandom(seed * 7919 + 43);
  // And the flow scenario's (types, keys, the operator's pauses).
  const flowRandom = seededRandom(seed * 7919 + 61);
  // And the dependencies' (which submits depend on earlier tasks, and on which).
  const dependencyRandom = seededRandom(seed * 7919 + 83);
  // And the tasks' timeouts and Fargate sizes, when the scenario sets them.
  const shapeRandom = seededRandom(seed * 7919 + 101);
  /** A task's timeout and Fargate size, drawn from the scenario's lists (none: the defaults). */
  const shapeOf = (runtime: 'lambda' | 'fargate', draw: () => number) => {
    const pick = <T>(list: readonly T[]) => list[Math.floor(draw() * list.length)]!;
    const vcpu = runtime === 'fargate' && options.fargateVcpus ? pick(options.fargateVcpus) : undefined;
    return {
      ...(options.timeouts ? { timeoutSeconds: pick(options.timeouts[runtime]) } : {}),
      ...(vcpu === undefined ? {} : { resources: { vcpu, memoryMiB: vcpu * 2048 } }),
    };
  };
  let solos = 0;
  /** The task the API accepted, with the bound its first answer gave (null: none, or not asked). */
  const recordAccepted = (
    task: { readonly taskId: string; readonly maxAttempts: number },
    tenantId: string,
    described: { readonly wait?: { readonly maxWaitSeconds: number | null } | undefined } | undefined,
  ) => {
    const atMs = Date.now();
    history.accepted.push({
      taskId: task.taskId,
      tenantId,
      atMs,
      maxAttempts: task.maxAttempts,
      maxWaitSeconds: described?.wait?.maxWaitSeconds ?? null,
      boundAtMs: atMs,
    });
  };
  /** GET the task (undefined: the call failed) and record the wait bound of its answer, if it waits. */
  const describeAndRecord = async (environment: Services, taskId: string, tenantId: string) => {
    const askedAtMs = Date.now();
    const described = await environment.tasks.describe(taskId).catch(() => undefined);
    if (!described?.wait) return described;
    history.bounds.push({
      taskId,
      tenantId,
      atMs: Date.now(),
      askedAtMs,
      maxWaitSeconds: described.wait.maxWaitSeconds,
      noBound: described.wait.noBound?.code,
      ...(described.wait.asOf ? { asOfMs: Date.parse(described.wait.asOf) } : {}),
      ...(described.wait.assumedBusyWeight
        ? {
            assumedBusyWeight: {
              atMost: described.wait.assumedBusyWeight.atMost,
              fromMs: Date.parse(described.wait.assumedBusyWeight.from),
              byMs: Date.parse(described.wait.assumedBusyWeight.by),
            },
          }
        : {}),
      ...(described.wait.assumedJoins
        ? {
            assumedJoins: {
              atMost: described.wait.assumedJoins.atMost,
              fromMs: Date.parse(described.wait.assumedJoins.from),
              byMs: Date.parse(described.wait.assumedJoins.by),
            },
          }
        : {}),
      ...(described.wait.assumedHeadroom
        ? {
            assumedHeadroom: {
              slots: described.wait.assumedHeadroom.slots,
              fromMs: Date.parse(described.wait.assumedHeadroom.from),
              byMs: Date.parse(described.wait.assumedHeadroom.by),
            },
          }
        : {}),
      ...(described.wait.assumedFreed
        ? {
            assumedFreed: {
              slots: described.wait.assumedFreed.slots,
              fromMs: Date.parse(described.wait.assumedFreed.from),
              byMs: Date.parse(described.wait.assumedFreed.by),
              ...(described.wait.assumedFreed.tenantFreeBy
                ? { tenantFreeByMs: Date.parse(described.wait.assumedFreed.tenantFreeBy) }
                : {}),
            },
          }
        : {}),
    });
    return described;
  };
  submitAt.forEach((submitMs, i) => {
    const crashesAfterWrite = submitCrashRandom() < (faults.submitCrashRate ?? 0);
    const regularTenant = tenants[Math.floor(random() * tenants.length)]!;
    const solo = (options.soloShare ?? 0) > 0 && rotationRandom() < (options.soloShare ?? 0);
    const tenantId = solo ? `solo-${solos++}` : regularTenant;
    const atMs =
      !solo && options.crowdSubmitSeconds !== undefined
        ? START_MS + ((submitMs - START_MS) * options.crowdSubmitSeconds) / options.submitSeconds
        : submitMs;
    const roll = random();
    const [minMs, maxMs] = options.workMs ?? [200, 8200];
    const pad =
      random() < (options.largePayloadRate ?? 0)
        ? 'p'.repeat(150 * 1024)
        : random() < (options.oddCharacterRate ?? 0)
          ? 'odd \uFFFE \uFFFF \u{1F600} end'
          : undefined;
    const payload = {
      ms: Math.floor(minMs + random() * (maxMs - minMs)),
      ...(pad === undefined ? {} : { pad }),
      failTimes: roll < 0.15 && options.plannedFailures !== false ? 1 + Math.floor(random() * 3) : 0,
      permanent: roll > 0.97 && options.plannedFailures !== false,
    };
    const keyIndex = options.flow && flowRandom() < 0.7 ? Math.floor(flowRandom() * 3) : undefined;
    const input = {
      tenantId,
      type: options.flow && flowRandom() < 0.5 ? 'sim.other' : 'sim.work',
      payload,
      ...(keyIndex === undefined
        ? {}
        : { concurrencyKey: `key-${keyIndex}`, concurrencyLimit: keyIndex === 2 ? 2 : 1 }),
      priority: priorities[Math.floor(random() * priorities.length)]!,
      idempotencyKey: `chaos-${i}`,
      runtime: random() < (options.fargateShare ?? 0.25) ? ('fargate' as const) : ('lambda' as const),
      ...(random() < (options.delayRate ?? 0.1)
        ? { delaySeconds: Math.floor(random() * (options.maxDelaySeconds ?? 300)) }
        : {}),
    };
    let cancelAfterMs = random() < options.cancelRate ? random() * 30_000 : undefined;
    const retryAfterMs = random() < options.operatorRetryRate ? 1000 + random() * 30_000 : undefined;
    const environment = apiEnvironments[i % apiEnvironments.length]!;
    const dependencyPicks =
      dependencyRandom() < (options.dependencyRate ?? 0)
        ? Array.from({ length: 1 + Math.floor(dependencyRandom() * 2) }, () => dependencyRandom())
        : [];
    // A dependent is left alone by the operator (its dependencies are cancelled and retried).
    if (dependencyPicks.length > 0) cancelAfterMs = undefined;
    if (options.timeouts || options.fargateVcpus) Object.assign(input, shapeOf(input.runtime, shapeRandom));
    setTimeout(() => {
      // Tasks its tenant had accepted by now, the most recent most likely: chains form.
      const earlier = history.accepted.filter((accepted) => accepted.tenantId === tenantId).map((a) => a.taskId);
      const dependsOn = [
        ...new Set(dependencyPicks.map((pick) => earlier[Math.floor(earlier.length * Math.sqrt(pick))]!)),
      ].filter((id) => id !== undefined);
      if (dependsOn.length > 0) Object.assign(input, { dependsOn });
      options.onSubmitStart?.(idempotentTaskId(input.tenantId, input.idempotencyKey), Date.now());
      track(
        (async () => {
          if (crashesAfterWrite) {
            const written = await writeWithoutAnnouncing(environment, input);
            // Stored, so it must run, though its client never heard of it (and gives no wait bound).
            if (written) {
              if (written.dependsOn) history.dependsOn!.set(written.taskId, written.dependsOn);
              const atMs = Date.now();
              history.accepted.push({
                taskId: written.taskId,
                tenantId,
                atMs,
                maxAttempts: written.maxAttempts,
                maxWaitSeconds: null,
                boundAtMs: atMs,
              });
            }
            return;
          }
          const task = await submitWithRetries(environment, input, lambda);
          if (!task) {
            history.unacknowledged++;
            return;
          }
          if (task.dependsOn) history.dependsOn!.set(task.taskId, task.dependsOn);
          const described =
            options.describe === false ? undefined : await describeAndRecord(environment, task.taskId, tenantId);
          recordAccepted(task, tenantId, described);
          if (options.describeAgain) {
            const againMs = 3_000 + rotationRandom() * 5_000;
            track(sleep(againMs).then(() => describeAndRecord(environment, task.taskId, tenantId)));
          }
          if (cancelAfterMs === undefined) return;
          await sleep(cancelAfterMs);
          const cancelled = await api.tasks.cancel(task.taskId).catch(() => undefined);
          if (!cancelled || retryAfterMs === undefined) return;
          await sleep(retryAfterMs);
          await api.tasks.retry(task.taskId).catch(() => undefined);
        })(),
      );
    }, atMs - START_MS);
  });

  // --- Steady tenants (bounds scenario): each keeps one task waiting at a time ---
  // Each its own stream of draws, so the tenants' timing does not move each other's draws.
  const submitEndMs = START_MS + options.submitSeconds * 1000;
  steadyTenants.forEach((tenantId, s) => {
    const draw = seededRandom(seed * 7919 + 1_109 + 1_000 * s);
    const nextAfterStart = s % 2 === 0;
    const environment = apiEnvironments[s % apiEnvironments.length]!;
    const [minMs, maxMs] = options.workMs ?? [200, 8200];
    const steady = async () => {
      await sleep(draw() * 20_000);
      for (let n = 0; Date.now() < submitEndMs; n++) {
        const runtime = draw() < (options.fargateShare ?? 0.25) ? ('fargate' as const) : ('lambda' as const);
        const roll = draw();
        const input = {
          tenantId,
          type: 'sim.work',
          payload: {
            ms: Math.floor(minMs + draw() * (maxMs - minMs)),
            failTimes: roll < 0.15 && options.plannedFailures !== false ? 1 + Math.floor(draw() * 3) : 0,
            permanent: roll > 0.97 && options.plannedFailures !== false,
          },
          priority: priorities[Math.floor(draw() * priorities.length)]!,
          idempotencyKey: `chaos-${tenantId}-${n}`,
          runtime,
          ...shapeOf(runtime, draw),
        };
        options.onSubmitStart?.(idempotentTaskId(tenantId, input.idempotencyKey), Date.now());
        const task = await submitWithRetries(environment, input, lambda);
        if (!task) {
          history.unacknowledged++;
        } else {
          // Asked for while it waits: every answer while it is QUEUED is recorded (a bound, or why none).
          let described = await describeAndRecord(environment, task.taskId, tenantId);
          recordAccepted(task, tenantId, described);
          for (;;) {
            const state = described?.task.state;
            if (state !== undefined && (TERMINAL_STATES.has(state) || (nextAfterStart && state !== 'QUEUED'))) break;
            await sleep(4_000 + draw() * 8_000);
            described = await describeAndRecord(environment, task.taskId, tenantId);
          }
        }
        await sleep(draw() * 5_000);
      }
    };
    track(steady());
  });

  // --- Delayed work while idle (delayed scenario): a large index, then one-task tenants ---
  /** The index's far-future tasks: not the run's to finish (the run settles without them). */
  const background = new Set<string>();
  const delayedWork = options.delayedWork;
  if (delayedWork) {
    const delayedRandom = seededRandom(seed * 7919 + 127);
    // Stored before the run, as an earlier day's submits left them: no faults (the run's faults
    // start with it), their announcements long taken in and the tenant-tier registered.
    const loader = buildServices({
      config,
      clients: world.component('index-loader', NO_TRANSPORT_FAULTS, { direct: options.transport === 'direct' }).clients,
      resources: world.resources,
      registry,
    });
    track(
      (async () => {
        const now = new Date();
        const tomorrow = new Date(now.getTime() + 86_400_000);
        const ids = Array.from({ length: delayedWork.indexTasks }, (_, i) => i);
        for (let from = 0; from < ids.length; from += 50) {
          await Promise.all(
            ids.slice(from, from + 50).map(async (i) => {
              const spec = loader.tasks.resolveSpec(
                {
                  tenantId: DELAYED_INDEX_TENANT,
                  type: 'sim.work',
                  payload: { ms: 100, failTimes: 0, permanent: false },
                  priority: 'low',
                  runtime: 'lambda',
                  runAt: tomorrow.toISOString(),
                  idempotencyKey: `archive-${i}`,
                },
                now,
              );
              const task = createTask(idempotentTaskId(DELAYED_INDEX_TENANT, `archive-${i}`), spec, now);
              background.add(task.taskId);
              await loader.store.create(task);
            }),
          );
        }
        await loader.control.registerIntake(DELAYED_INDEX_TENANT, 'low', new Date());
      })(),
    );
    const [minDelay, maxDelay] = delayedWork.delaySeconds;
    const [minMs, maxMs] = options.workMs ?? [200, 8200];
    for (let i = 0; i < delayedWork.submits; i++) {
      const tenantId = `late-${i}`;
      const atMs = (i + 0.5 + (delayedRandom() - 0.5) * 0.6) * delayedWork.spacingSeconds * 1000;
      const input = {
        tenantId,
        type: 'sim.work',
        payload: {
          ms: Math.floor(minMs + delayedRandom() * (maxMs - minMs)),
          failTimes: delayedRandom() < delayedWork.retriedShare ? 1 : 0,
          permanent: false,
        },
        priority: priorities[Math.floor(delayedRandom() * priorities.length)]!,
        idempotencyKey: `chaos-late-${i}`,
        runtime: delayedRandom() < (options.fargateShare ?? 0.25) ? ('fargate' as const) : ('lambda' as const),
        delaySeconds: Math.floor(minDelay + delayedRandom() * (maxDelay - minDelay)),
      };
      const environment = apiEnvironments[i % apiEnvironments.length]!;
      setTimeout(() => {
        options.onSubmitStart?.(idempotentTaskId(tenantId, input.idempotencyKey), Date.now());
        track(
          (async () => {
            const task = await submitWithRetries(environment, input, lambda);
            if (!task) {
              history.unacknowledged++;
              return;
            }
            const described =
              options.describe === false ? undefined : await describeAndRecord(environment, task.taskId, tenantId);
            recordAccepted(task, tenantId, described);
          })(),
        );
      }, atMs);
    }
  }

  // --- Batches: their own stream of draws, so every other draw of a seed stays where it was ---
  const batchRandom = seededRandom(seed * 7919 + 73);
  const [minBatch, maxBatch] = options.batchSize ?? [4, 12];
  for (let b = 0; b < (options.batches ?? 0); b++) {
    const tenantId = tenants[Math.floor(batchRandom() * tenants.length)]!;
    const size = minBatch + Math.floor(batchRandom() * (maxBatch - minBatch + 1));
    const atMs = batchRandom() * options.submitSeconds * 1000;
    const [minMs, maxMs] = options.workMs ?? [200, 8200];
    const item = () => ({
      tenantId,
      type: 'sim.work',
      payload: {
        ms: Math.floor(minMs + batchRandom() * (maxMs - minMs)),
        failTimes: batchRandom() < 0.2 ? 1 + Math.floor(batchRandom() * 3) : 0,
        permanent: batchRandom() < 0.1,
      },
      maxAttempts: 3,
      runtime: batchRandom() < 0.25 ? ('fargate' as const) : ('lambda' as const),
    });
    const input = {
      tasks: Array.from({ length: size }, item),
      // biome-ignore lint/suspicious/noThenProperty: the field's name is pinned (PRODUCT.md, POST /v1/tasks/batch)
      then: { tenantId, type: 'sim.work', payload: { ms: 100, failTimes: 0, permanent: false } },
      idempotencyKey: `chaos-batch-${b}`,
    };
    const environment = apiEnvironments[b % apiEnvironments.length]!;
    setTimeout(() => {
      track(
        (async () => {
          const answer = await submitBatchWithRetries(environment, input, lambda);
          if (!answer) {
            history.unacknowledged++;
            return;
          }
          const at = Date.now();
          const memberIds = answer.results.flatMap((result) => ('taskId' in result ? [result.taskId] : []));
          for (const taskId of memberIds) {
            history.accepted.push({ taskId, tenantId, atMs: at, maxAttempts: 3, maxWaitSeconds: null, boundAtMs: at });
          }
          acknowledgedBatches.push({
            batchId: answer.batchId,
            tenantId,
            memberIds,
            thenTaskId: idempotentTaskId(tenantId, thenTaskKey(answer.batchId)),
            atMs: at,
          });
        })(),
      );
    }, atMs);
  }

  // --- The operator (flow scenario): pauses a tenant or a task type, resumes it a while later ---
  if (options.flow) {
    const types = ['sim.work', 'sim.other'];
    const put = async (kind: 'tenant' | 'type', id: string, paused: boolean) => {
      const requestedAtMs = Date.now();
      let answeredAtMs: number | undefined;
      for (let attempt = 0; attempt < 5 && answeredAtMs === undefined; attempt++) {
        try {
          if (kind === 'tenant') await api.tasks.putTenant(id, { ...quotas[id]!, paused }, 'operator');
          else await api.tasks.putTaskType(id, { paused }, 'operator');
          answeredAtMs = Date.now();
        } catch {
          await sleep(500);
        }
      }
      // A request that never answered may still have applied: it is recorded from its request on.
      history.pauses.push({ kind, id, paused, requestedAtMs, answeredAtMs });
    };
    const operate = async () => {
      const untilMs = START_MS + (options.submitSeconds + 30) * 1000;
      while (Date.now() < untilMs) {
        await sleep(5_000 + flowRandom() * 10_000);
        const onTenant = flowRandom() < 0.6;
        const id = onTenant
          ? tenants[Math.floor(flowRandom() * tenants.length)]!
          : types[Math.floor(flowRandom() * types.length)]!;
        const kind = onTenant ? ('tenant' as const) : ('type' as const);
        await put(kind, id, true);
        await sleep(3_000 + flowRandom() * 7_000);
        await put(kind, id, false);
      }
    };
    track(operate());
  }

  // --- Scheduler Lambda --------------------------------------------------------------------
  // The deployed handler (runtime/handlers/scheduler.ts) on a simulated Lambda function: woken by
  // what announces work, ticked every minute as a safety net, stopping when idle, handing over to
  // a fresh invocation before its timeout; no reserved concurrency, so invocations may overlap
  // and the lease decides. Each invocation is a new execution environment (its own clients);
  // some crash at a random moment (then the Lambda times out) or stall.
  const stop = new AbortController();
  /** The harness watches when the engine takes a task in (the rotation check's start). */
  const watchAdmissions = (scheduler: Scheduler): void => {
    const engine = scheduler.policy;
    const add = engine.add.bind(engine);
    engine.add = (candidate) => {
      if (!history.admitted.has(candidate.taskId)) history.admitted.set(candidate.taskId, Date.now());
      const times = history.admissions?.get(candidate.taskId);
      if (times) times.push(Date.now());
      else history.admissions?.set(candidate.taskId, [Date.now()]);
      return add(candidate);
    };
  };
  const schedulerFunction: SimulatedFunction<SchedulerEvent> = new SimulatedFunction<SchedulerEvent>({
    name: 'scheduler',
    account: lambda,
    timeoutMs: SCHEDULER_TIMEOUT_MS,
    maxEventAgeMs: SCHEDULER_MAX_EVENT_AGE_MS,
    run: (event, context) => {
      const n = ++history.schedulerInvocations;
      const part = component(`scheduler-${n}`);
      const services = servicesFor(part, false);
      const startedAtMs = Date.now();
      const crashAtMs = random() < faults.schedulerCrashRate ? random() * SCHEDULER_TIMEOUT_MS : undefined;
      const killAt = crashAtMs === undefined ? undefined : setTimeout(() => part.transport.kill(), crashAtMs);
      if (crashAtMs !== undefined) history.deaths.push({ component: part.name, atMs: startedAtMs + crashAtMs });
      // Its own stream, so every other draw of a seed stays where it was.
      if (stallRandom() < (faults.schedulerStallRate ?? 0)) {
        const stallAtMs = stallRandom() * SCHEDULER_TIMEOUT_MS;
        const stallMs = stallRandom() * (faults.schedulerStallMaxMs ?? 0);
        setTimeout(() => {
          history.stalls.push({ fromMs: Date.now(), toMs: Date.now() + stallMs, component: part.name });
          part.transport.stall(stallMs);
        }, stallAtMs);
      }
      const handler = schedulerHandler({
        services: () => services,
        handOver: async (_context, handover) => schedulerFunction.invokeAsync(handover),
        logger: silentHandlerLogger,
        metrics: silentMetrics,
        taskLogger: silent,
        onLease: (leaseEvent) => {
          if (leaseEvent === 'acquired') history.leases.push({ atMs: Date.now(), owner: `lambda-${n}` });
        },
        onScheduler: watchAdmissions,
        // A failed tick starts the loop over (settle, resume, the waiting work taken in again): no
        // dispatch meanwhile, an outage as a stall is (check.ts schedulerOutages).
        onTickError: () => {
          history.stalls.push({ fromMs: Date.now(), toMs: Date.now(), component: part.name });
        },
      });
      const reason = event.reason ?? 'tick';
      history.scheduler.invoked[reason] = (history.scheduler.invoked[reason] ?? 0) + 1;
      const done = handler(event, context as unknown as Context)
        .then((run) => {
          history.scheduler.ended[run.ended] = (history.scheduler.ended[run.ended] ?? 0) + 1;
        })
        .finally(() => clearTimeout(killAt));
      return { done, kill: () => part.transport.kill() };
    },
  });
  const ticker = setInterval(() => {
    if (!stop.signal.aborted) schedulerFunction.invokeAsync({ reason: 'tick' });
  }, TICK_EVERY_MS);

  // --- Scheduler service (`scheduler.mode` "service") ---------------------------------------
  // Per shard one always-on task (runtime/app/scheduler-service.ts, what the deployed container
  // runs) holding the lease; the Lambda above stays as the fallback, started by wakes and ticks
  // while a shard's lease has lapsed. A task dies with the Lambda's crash chance per scheduler
  // timeout of its life (exponential), and ECS starts its replacement 10 to 60 s later.
  if (config.scheduler.mode === 'service') {
    const serviceRandom = seededRandom(seed * 104_729 + 7);
    let serviceTasks = 0;
    const startServiceTask = (shard: number): void => {
      if (stop.signal.aborted) return;
      const owner = `service-${shard}-${++serviceTasks}`;
      const part = component(owner);
      const halt = new AbortController();
      stop.signal.addEventListener('abort', () => halt.abort(), { once: true });
      runSchedulerService({
        services: servicesFor(part, false),
        shard,
        signal: halt.signal,
        ownerId: owner,
        logger: silent,
        onScheduler: watchAdmissions,
        onLease: (leaseEvent) => {
          if (leaseEvent === 'acquired') history.leases.push({ atMs: Date.now(), owner });
        },
      }).catch(() => {});
      if (faults.schedulerCrashRate > 0) {
        const lifeMs = -Math.log(1 - serviceRandom()) * (SCHEDULER_TIMEOUT_MS / faults.schedulerCrashRate);
        setTimeout(() => {
          if (stop.signal.aborted) return;
          part.transport.kill();
          halt.abort();
          history.deaths.push({ component: part.name, atMs: Date.now() });
          setTimeout(() => startServiceTask(shard), 10_000 + serviceRandom() * 50_000);
        }, lifeMs);
      }
    };
    for (const shard of shardIndexes(config.scheduler.shards)) startServiceTask(shard);
  }

  // --- Workers -----------------------------------------------------------------------------
  let workerCount = 0;
  /** One worker process: a Fargate task, or a Lambda environment of the pool's mapping. */
  const startWorker = (runtime: 'lambda' | 'fargate'): MappedEnvironment => {
    let end = () => {};
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    if (stop.signal.aborted) {
      end();
      return { stop() {}, ended };
    }
    const part = component(`worker-${runtime}-${++workerCount}`);
    const services = servicesFor(part);
    const worker = new QueueWorker({
      queues: services.queues,
      queueId: workerQueue(runtime).id,
      maxConcurrent:
        runtime === 'lambda' ? (options.lambdaWorkerConcurrency ?? 1) : (options.fargateWorkerConcurrency ?? 4),
      attempt: {
        store: services.store,
        queues: services.queues,
        registry,
        config,
        logger: silent,
        faults: (step, task) => {
          if (step === 'started') history.starts.push({ taskId: task.taskId, fence: task.fence, component: part.name });
        },
      },
      waitSeconds: 20,
      batchSize: runtime === 'lambda' ? 1 : 10,
      logger: silent,
    });
    worker.start();
    let retired = false;
    if (faults.workerMeanLifeSeconds > 0) {
      const lifeMs = -Math.log(1 - random()) * faults.workerMeanLifeSeconds * 1000;
      setTimeout(() => {
        if (retired) return;
        part.transport.kill();
        history.deaths.push({ component: part.name, atMs: Date.now() });
        end();
        // A new Fargate task takes its place (the Lambda pool's mapping replaces its environments).
        if (runtime === 'fargate') setTimeout(() => startWorker(runtime), 1000 + random() * 4000);
      }, lifeMs);
    }
    return {
      stop() {
        retired = true;
        void worker.stop().then(end, end);
      },
      ended,
    };
  };
  // The Lambda pool: its event source mapping scales environments with the queue, within the account.
  const lambdaMapping = new SqsEventSourceMapping({
    account: lambda,
    maximumConcurrency: options.lambdaWorkers ?? config.pools.lambda.concurrency,
    waiting: () => world.sqs.visibleCount(workerQueue('lambda').id),
    start: () => startWorker('lambda'),
  });
  lambdaMapping.start();
  for (let i = 0; i < (options.fargateWorkers ?? 1); i++) startWorker('fargate');
  // The redrive Lambda's event source mapping long-polls each dead-letter queue for 20 s.
  startDeadLetterConsumer({ ...servicesFor(component('redrive')), logger: silent, waitSeconds: 20 });
  // Workers' retries and the redrive announce work too: they wake it (servicesFor's default).

  // --- The task table's stream function: the dependencies' durable step ----------------------
  // Each change it must act on (a held task's creation, a marked dependency's end) reaches a fresh
  // invocation after the stream's lag; an invocation may crash at a random moment (its calls never
  // answered, as at a Lambda timeout) and the record is retried until an invocation gets through,
  // as the event source mapping retries it. Its releases announce work and wake the scheduler.
  const streamRandom = seededRandom(seed * 7919 + 97);
  let streamInvocations = 0;
  const settleStreamed = async (change: (typeof streamed)[number]) => {
    await sleep(100 + streamRandom() * 900);
    for (let attempt = 0; !stop.signal.aborted; attempt++) {
      const part = component(`stream-${++streamInvocations}`);
      if (streamRandom() < faults.schedulerCrashRate) {
        setTimeout(() => part.transport.kill(), streamRandom() * 2_000);
      }
      const outcome = await Promise.race([
        servicesFor(part)
          .dependencies.onChange(change.taskId, change.event)
          .then(
            () => 'done',
            () => 'failed',
          ),
        sleep(STREAM_FUNCTION_TIMEOUT_MS).then(() => 'timed out'),
      ]);
      if (outcome === 'done') return;
      await sleep(Math.min(30_000, 1000 * 2 ** attempt));
    }
  };
  onStreamed = () => {
    for (const change of streamed.splice(0)) track(settleStreamed(change));
  };

  // --- Run until every task has settled (or the time is up) --------------------------------
  const allSettled = () => {
    if (Date.now() < START_MS + options.submitSeconds * 1000 + 1000 || pending.size > 0) return false;
    // Task items (batch items have no state) have all ended, and no batch is still open.
    return (
      world.dynamodb
        .items(tasksTable)
        // Task items have all ended (batch and dependents items have no state), and no batch is open.
        .every(
          (item) =>
            // The delayed scenario's far-future index is not the run's to finish.
            background.has(String(item.taskId?.S)) ||
            (isTaskItem(item)
              ? ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(String(item.state?.S))
              : !String(item.taskId?.S).endsWith('#open')),
        )
    );
  };
  let settled = false;
  const checker = setInterval(() => {
    settled = allSettled();
  }, 10_000);
  await clock.runUntil(START_MS + options.maxSimulatedSeconds * 1000, () => settled);
  clearInterval(checker);
  clearInterval(ticker);
  lambdaMapping.stop();
  // Nothing is stopped cleanly: the run ends where it is, as a region outage would, and what
  // is still awaiting is dropped with the virtual clock.
  stop.abort();

  history.endMs = Date.now();
  history.startedBy = startedBy;
  history.throughput = world.dynamodb.throughput;
  if (options.record !== false) {
    history.writes = world.dynamodb.writes
      .filter(({ item }) => item === undefined || isTaskItem(item))
      .map(({ atMs, item }) => ({
        atMs,
        task: item ? (unmarshallTask(item) as Task) : undefined,
      }));
    history.finalTasks = world.dynamodb
      .items(tasksTable)
      .filter(isTaskItem)
      .map((item) => unmarshallTask(item) as Task);
  }
  history.messagesLeft = Object.fromEntries(
    Object.keys(world.resources.queueUrls).map((queueId) => [queueId, world.sqs.pending(queueId).length]),
  );
  return history;
}

/**
 * The API client's side: a 5xx (the SDK gave up) or a 429 (the API Lambda throttled for want of
 * account concurrency) is retried with the same idempotency key.
 */
async function submitWithRetries(
  api: Services,
  input: Parameters<Services['tasks']['submit']>[0],
  lambda: LambdaAccount,
): Promise<Task | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    if (lambda.tryAcquire()) {
      try {
        return (await api.tasks.submit(input)).task;
      } catch {
        // a 5xx: retried below
      } finally {
        lambda.release();
      }
    }
    await sleep(1000 * 2 ** attempt);
  }
  return undefined;
}

/** The same, for a batch: a retry sends the same body (the same batch key), so it answers the same. */
async function submitBatchWithRetries(
  api: Services,
  input: Parameters<Services['batches']['submit']>[0],
  lambda: LambdaAccount,
): Promise<Awaited<ReturnType<Services['batches']['submit']>> | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    if (lambda.tryAcquire()) {
      try {
        return await api.batches.submit(input);
      } catch {
        // a 5xx: retried below
      } finally {
        lambda.release();
      }
    }
    await sleep(1000 * 2 ** attempt);
  }
  return undefined;
}

/**
 * The submit's write and nothing after it: the API process dies before announcing the task (the
 * write itself is retried through lost responses, as the SDK does; undefined if it never landed).
 */
async function writeWithoutAnnouncing(
  api: Services,
  input: Parameters<Services['tasks']['submit']>[0],
): Promise<Task | undefined> {
  const taskId = idempotentTaskId(input.tenantId, input.idempotencyKey!);
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const now = new Date();
      const spec = api.tasks.resolveSpec(input, now);
      const created = createTask(taskId, spec, now);
      // Held as the API holds it: on the dependencies not yet SUCCEEDED, read consistently first.
      const states = spec.dependsOn && (await checkDependencies(api.store, spec.tenantId, taskId, spec.dependsOn));
      const task = states ? holdOnDependencies(created, states) : created;
      return (await api.store.create(task)).task;
    } catch {
      await sleep(1000 * 2 ** attempt);
    }
  }
  return undefined;
}

/**
 * Whether an item of the task table is a task: the dependents buckets (adapters/dependents-store.ts)
 * and the batches' items share the table, and have no state.
 */
function isTaskItem(item: AttributeMap): boolean {
  return item.state !== undefined && !isDependentsKey(String(item.taskId?.S));
}

function unmarshallTask(item: Record<string, Record<string, unknown>>): unknown {
  // biome-ignore lint/suspicious/noExplicitAny: wire-format attribute values.
  return unmarshall(item as any);
}
