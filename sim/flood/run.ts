/**
 * The flood scenario on the production front end (issue 11, deliverable 5): one tenant's backlog
 * queued ahead of many quiet tenants that keep submitting, run through the production submit
 * path, the production Scheduler (restarted every 60 s, as the Lambda is) and production
 * QueueWorkers over the simulated SQS and DynamoDB, beside the same trace through the engine
 * alone (sim/engine.ts).
 *
 * Waits are read back from the run: a task's wait is its item's `dispatchedAt` minus its
 * `submittedAt`; a quiet task not dispatched when the run stops counts with the time it had
 * waited so far (and is reported as `quietUndispatched`). Receive counts and dead letters are
 * what the simulated SQS recorded.
 */
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { z } from 'zod';
import { startDeadLetterConsumer } from '../../local/dead-letter-consumer.ts';
import { buildServices, type Services } from '../../runtime/app/wiring.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import type { TaskLogger } from '../../runtime/core/logger.ts';
import { seededRandom } from '../../runtime/core/random.ts';
import { tierQueue, workerQueue } from '../../runtime/infra/resources.ts';
import { Scheduler } from '../../runtime/scheduler/scheduler.ts';
import { lambdaInvocationTiming, runSchedulerLoop } from '../../runtime/scheduler/scheduler-loop.ts';
import { defineTaskType, TaskTypeRegistry } from '../../runtime/task-types/define.ts';
import { QueueWorker } from '../../runtime/worker/queue-worker.ts';
import { directClients } from '../aws/direct.ts';
import { NO_TRANSPORT_FAULTS } from '../aws/faults.ts';
import { installVirtualClock } from '../aws/virtual-clock.ts';
import { SimulatedAws } from '../aws/world.ts';
import { simulate } from '../engine.ts';
import { type WaitStats, waitStats } from '../metrics.ts';
import { TraceBuilder } from '../trace.ts';

export interface FloodOptions {
  readonly seed: number;
  /** The flooding tenant's tasks, all submitted at the start. */
  readonly tasks: number;
  readonly quietTenants: number;
  /** Tasks each quiet tenant submits, spread over `quietSeconds`. */
  readonly tasksPerQuietTenant: number;
  readonly quietSeconds: number;
  /** Each task runs this long. */
  readonly holdMs: number;
  readonly lambdaConcurrency: number;
  /** The run stops this long after the last quiet submit, whatever is still waiting. */
  readonly drainSeconds: number;
  /**
   * How the API, scheduler and workers reach the simulated account during the run: `sdk`, the
   * full AWS SDK stack over the in-memory transport (as the chaos runs), or `direct`, commands
   * handed straight to the account (sim/aws/direct.ts; no faults are injected in this scenario,
   * so the SDK's retries have nothing to do). The backlog is loaded directly either way.
   */
  readonly transport: 'sdk' | 'direct';
  /** Called with the simulated account once the run stops (tests check the figures against it). */
  readonly inspect?: (world: SimulatedAws) => void;
}

export const DEFAULT_FLOOD: Omit<FloodOptions, 'seed'> = {
  tasks: 1_000_000,
  quietTenants: 1000,
  tasksPerQuietTenant: 2,
  quietSeconds: 300,
  holdMs: 1000,
  lambdaConcurrency: 50,
  drainSeconds: 3600,
  transport: 'direct',
};

export interface FloodResult {
  readonly tasks: number;
  readonly quietTenants: number;
  readonly quietTasks: number;
  readonly quietWaitSeconds: Pick<WaitStats, 'p50' | 'p99' | 'max'>;
  readonly quietUndispatched: number;
  readonly engineOnlyQuietWaitSeconds: Pick<WaitStats, 'p50' | 'p99' | 'max'>;
  readonly floodDispatched: number;
  readonly maxReceivesPerMessage: number;
  readonly deadLettered: number;
  /** Messages sent to the tier queues (announcements; the backlog's included), and tier receives of a message. */
  readonly announcementsSent: number;
  readonly announcementsReceived: number;
  readonly schedulerInvocations: number;
  readonly simulatedSeconds: number;
  readonly wallSeconds: number;
}

const START_MS = Date.parse('2026-01-05T00:00:00.000Z');
const FLOOD = 'flood';
const INVOCATION_EVERY_MS = 60_000;
const LAMBDA_TIMEOUT_MS = 75_000;
/** Backlog submits in flight at once while it is loaded. */
const SEED_CONCURRENCY = 64;
const silent: TaskLogger = { info() {}, warn() {}, error() {} };
/** Wall time, taken before the virtual clock replaces `performance`. */
const wallNow = performance.now.bind(performance);

export async function runFlood(options: FloodOptions): Promise<FloodResult> {
  const wallStart = wallNow();
  const clock = installVirtualClock({ startMs: START_MS, seed: options.seed });
  try {
    return { ...(await simulateFlood(options, clock)), wallSeconds: (wallNow() - wallStart) / 1000 };
  } finally {
    clock.uninstall();
  }
}

async function simulateFlood(
  options: FloodOptions,
  clock: ReturnType<typeof installVirtualClock>,
): Promise<Omit<FloodResult, 'wallSeconds'>> {
  const random = seededRandom(options.seed);
  const world = new SimulatedAws({
    seed: options.seed,
    now: () => Date.now(),
    indexLagMs: 0,
    eventualLagMs: 0,
    unprocessedRate: 0,
    sqs: { duplicateDeliveryRate: 0, earlyRedeliveryRate: 0, shortPollMissRate: 0, batchEntryFailureRate: 0 },
  });
  const tasksTable = world.resources.tables.tasks!;
  // A million tasks: keep no per-write history (the waits come from the final items).
  world.dynamodb.recordTables.delete(tasksTable);
  const config = parseConfig(
    { pools: { lambda: { concurrency: options.lambdaConcurrency }, fargate: { vcpu: 2, memoryMiB: 4096 } } },
    'flood configuration',
  );
  const registry = new TaskTypeRegistry([
    defineTaskType({
      type: 'sim.hold',
      description: 'Holds its slot for the scenario’s hold time.',
      payload: z.strictObject({}),
      handler: () => new Promise((resolve) => setTimeout(() => resolve({}), options.holdMs)),
    }),
  ]);
  const servicesFor = (name: string): Services =>
    buildServices({
      config,
      clients:
        options.transport === 'direct'
          ? directClients(world.dynamodb, world.sqs)
          : world.component(name, NO_TRANSPORT_FAULTS).clients,
      resources: world.resources,
      registry,
    });

  // --- The trace: the flood at the start, quiet tenants' tasks spread over quietSeconds ------
  const quietIds = Array.from({ length: options.quietTenants }, (_, i) => `quiet-${i}`);
  const quietSubmits = quietIds
    .flatMap((tenantId) =>
      Array.from({ length: options.tasksPerQuietTenant }, () => ({
        tenantId,
        atMs: START_MS + random() * options.quietSeconds * 1000,
      })),
    )
    .sort((a, b) => a.atMs - b.atMs);

  // --- The backlog, already queued when the run starts: the production submit path -----------
  // (TaskService.submit: the task item, its index entries, its tier message, whatever else
  // submit writes), at the start instant, through clients that hand each command straight to
  // the simulated account (sim/aws/direct.ts: no SDK middleware, no faults, none injected here
  // anyway). The clock does not move while it loads, so DynamoDB's per-partition limits are
  // lifted for it (a million writes to one tenant's index partitions in one instant): the
  // backlog is the premise, not part of the run. They hold again from the first simulated moment.
  const request = (tenantId: string) =>
    ({ tenantId, type: 'sim.hold', payload: {}, priority: 'normal', runtime: 'lambda' }) as const;
  const loader = buildServices({
    config,
    clients: directClients(world.dynamodb, world.sqs),
    resources: world.resources,
    registry,
  });
  let floodSubmitted = 0;
  const limits = world.dynamodb.throughput.limits;
  world.dynamodb.throughput.limits = undefined;
  await Promise.all(
    Array.from({ length: Math.min(SEED_CONCURRENCY, options.tasks) }, async () => {
      while (floodSubmitted < options.tasks) {
        floodSubmitted++;
        await loader.tasks.submit(request(FLOOD));
      }
    }),
  );
  world.dynamodb.throughput.limits = limits;

  // --- API: the quiet tenants keep submitting, through the SDK ---------------------------------
  const api = servicesFor('api');
  const pending = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    pending.add(work);
    work.finally(() => pending.delete(work));
  };
  const quietTaskIds: string[] = [];
  const submitQuiet = async (tenantId: string) => {
    const { task } = await api.tasks.submit(request(tenantId));
    quietTaskIds.push(task.taskId);
  };
  for (const { tenantId, atMs } of quietSubmits) setTimeout(() => track(submitQuiet(tenantId)), atMs - START_MS);

  // --- The scheduler Lambda: a new invocation every minute, handing over before its timeout --
  const stop = new AbortController();
  let invocations = 0;
  let invocation: Promise<void> | undefined;
  const invoke = () => {
    if (stop.signal.aborted || invocation) return;
    const n = ++invocations;
    const services = servicesFor(`scheduler-${n}`);
    const startedAtMs = Date.now();
    const remaining = () => startedAtMs + LAMBDA_TIMEOUT_MS - Date.now();
    invocation = runSchedulerLoop({
      control: services.control,
      signal: stop.signal,
      ownerId: `lambda-${n}`,
      ...lambdaInvocationTiming(remaining),
      logger: silent,
      createScheduler: () =>
        new Scheduler({ store: services.store, control: services.control, queues: services.queues, config }),
    }).then(
      (end) => {
        invocation = undefined;
        // Out of time with work possibly left, the handler hands over to a fresh invocation at
        // once (runtime/handlers/scheduler.ts) rather than leave it to the next minute's tick.
        if (end === 'stopped') invoke();
      },
      () => {
        invocation = undefined;
      },
    );
  };
  invoke();
  const invoker = setInterval(invoke, INVOCATION_EVERY_MS);

  // --- Workers: one QueueWorker per Lambda slot, and the dead-letter consumer ----------------
  const workers: QueueWorker[] = [];
  for (let i = 0; i < options.lambdaConcurrency; i++) {
    const services = servicesFor(`worker-${i}`);
    const worker = new QueueWorker({
      queues: services.queues,
      queueId: workerQueue('lambda').id,
      maxConcurrent: 1,
      attempt: { store: services.store, queues: services.queues, registry, config, logger: silent },
      waitSeconds: 5,
      batchSize: 1,
      logger: silent,
    });
    worker.start();
    workers.push(worker);
  }
  const deadLetters = startDeadLetterConsumer({ ...servicesFor('redrive'), logger: silent });

  // --- Run until every quiet task is dispatched, or drainSeconds after the last quiet submit --
  const lastQuietMs = quietSubmits.at(-1)?.atMs ?? START_MS;
  const endMs = lastQuietMs + options.drainSeconds * 1000;
  const quietDispatched = () => {
    if (pending.size > 0 || Date.now() <= lastQuietMs) return false;
    return quietTaskIds.every((taskId) => world.dynamodb.item(tasksTable, { taskId: { S: taskId } })?.dispatchedAt);
  };
  let done = false;
  const checker = setInterval(() => {
    done = quietDispatched();
  }, 10_000);
  await clock.runUntil(endMs, () => done);
  clearInterval(checker);
  clearInterval(invoker);
  stop.abort();
  const stoppedAtMs = Date.now();
  options.inspect?.(world);

  // --- Figures, from what the run left behind --------------------------------------------------
  const quietWaitMs: number[] = [];
  let quietUndispatched = 0;
  let floodDispatched = 0;
  for (const raw of world.dynamodb.items(tasksTable)) {
    if (raw.tenantId?.S === FLOOD) {
      if (raw.dispatchedAt) floodDispatched++;
      continue;
    }
    // biome-ignore lint/suspicious/noExplicitAny: wire-format attribute values.
    const item = unmarshall(raw as any) as { tenantId: string; submittedAt: string; dispatchedAt?: string };
    if (!item.dispatchedAt) quietUndispatched++;
    const until = item.dispatchedAt ? Date.parse(item.dispatchedAt) : stoppedAtMs;
    quietWaitMs.push(until - Date.parse(item.submittedAt));
  }
  const tierIds = new Set(['critical', 'high', 'normal', 'low'].map((tier) => tierQueue(tier as 'normal').id));
  let maxReceivesPerMessage = 0;
  let announcementsReceived = 0;
  for (const receive of world.sqs.receives) {
    if (!tierIds.has(receive.queueId)) continue;
    announcementsReceived++;
    maxReceivesPerMessage = Math.max(maxReceivesPerMessage, receive.receiveCount);
  }
  let announcementsSent = 0;
  for (const send of world.sqs.sends) if (tierIds.has(send.queueId)) announcementsSent++;

  // --- The same trace through the engine alone -------------------------------------------------
  const trace = new TraceBuilder(options.tasks + quietSubmits.length);
  const lambdaTask = { tier: 2, fargate: false, vcpu: 0, memoryMiB: 0, holdMs: options.holdMs };
  for (let i = 0; i < options.tasks; i++) trace.push({ tenant: 0, arriveMs: 0, ...lambdaTask });
  const quietIndex = new Map(quietIds.map((tenantId, i) => [tenantId, i]));
  quietSubmits.forEach(({ tenantId, atMs }) => {
    trace.push({ tenant: 1 + quietIndex.get(tenantId)!, arriveMs: atMs - START_MS, ...lambdaTask });
  });
  const tenantIds = [FLOOD, ...quietIds];
  const engineTrace = trace.build({
    scenario: 'flood',
    description: 'One tenant’s backlog ahead of quiet tenants that keep submitting.',
    tenantIds,
    tenantSettings: tenantIds.map(() => config.tenantDefaults),
    pools: config.pools,
    agingSeconds: config.agingSeconds,
  });
  const engine = simulate(engineTrace, config.policy);
  const engineQuiet = waitStats(engine.waitMs, (task) => engineTrace.tenant[task] !== 0);

  const quiet = waitStats(Float64Array.from(quietWaitMs), () => true);
  const pick = ({ p50, p99, max }: WaitStats) => ({ p50, p99, max });
  // Nothing is stopped cleanly (stopping needs the clock to move): what still awaits is dropped
  // with the virtual clock, as in the chaos runs.
  void deadLetters;
  void workers;
  return {
    tasks: options.tasks,
    quietTenants: options.quietTenants,
    quietTasks: quietSubmits.length,
    quietWaitSeconds: pick(quiet),
    quietUndispatched,
    engineOnlyQuietWaitSeconds: pick(engineQuiet),
    floodDispatched,
    maxReceivesPerMessage,
    deadLettered: world.sqs.deadLettered.filter((letter) => tierIds.has(letter.queueId)).length,
    announcementsSent,
    announcementsReceived,
    schedulerInvocations: invocations,
    simulatedSeconds: (stoppedAtMs - START_MS) / 1000,
  };
}
