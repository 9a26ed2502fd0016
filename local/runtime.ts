/**
 * The whole system on one machine (`npm start`): the embedded DynamoDB and SQS emulators
 * (persisted under DATA_DIR, so a restart — even after kill -9 — resumes every task), or an
 * external AWS-compatible endpoint in their place (`externalAws`), the HTTP
 * API, the scheduler loop, the Lambda and Fargate worker pools with their configured capacity,
 * and the configured schedules. The same handlers, stores and definitions as on AWS.
 */
import type { AwsClients } from '../runtime/adapters/aws-clients.ts';
import { QueueClient } from '../runtime/adapters/queues.ts';
import { validateSchedules } from '../runtime/app/scheduled.ts';
import { shardScheduler } from '../runtime/app/scheduler-service.ts';
import { mergeSnapshots } from '../runtime/app/shard-snapshots.ts';
import { buildServices, type Services } from '../runtime/app/wiring.ts';
import type { SchedulerConfig } from '../runtime/core/config.ts';
import type { TaskLogger } from '../runtime/core/logger.ts';
import { type ShardScope, schedulerLeaseName, shardIndexes } from '../runtime/core/shards.ts';
import { OutboxRelay } from '../runtime/events/outbox-relay.ts';
import { checkWebhookFilterTypes, localWebhookTargets } from '../runtime/events/webhooks.ts';
import { workerQueue } from '../runtime/infra/resources.ts';
import { hasSchedulerWork, IDLE_STOP_MS, STOP_GRACE_MS } from '../runtime/scheduler/activation.ts';
import type { Scheduler } from '../runtime/scheduler/scheduler.ts';
import { runSchedulerLoop, type SchedulerLoopEnd } from '../runtime/scheduler/scheduler-loop.ts';
import type { TaskServices, TaskTypeRegistry } from '../runtime/task-types/define.ts';
import { flushTraces } from '../runtime/telemetry/tracing.ts';
import { QueueWorker } from '../runtime/worker/queue-worker.ts';
import { consoleLogger, taskLineThrottle } from './console-logger.ts';
import { DataDirInUseError, isLevelLocked, lockDataDir } from './data-dir-lock.ts';
import { startDeadLetterConsumer } from './dead-letter-consumer.ts';
import { connectExternalAws, type Emulators, startEmulators } from './emulators.ts';
import type { ExternalAws } from './external-aws.ts';
import { LocalLambdaPool, type OutcomeObserver } from './lambda-pool.ts';
import { recoverAbandonedAttempts } from './recovery.ts';
import { startScheduleRunner } from './schedule-runner.ts';
import { faultyLocalClients, type SchedulerFaults, schedulerFaultsFromEnvironment } from './scheduler-faults.ts';
import { LOCAL_RETENTION_SECONDS, startTaskExpiry } from './task-expiry.ts';

export interface LocalRuntimeOptions {
  readonly config: SchedulerConfig;
  /** Folder for persisted state; in memory when undefined. */
  readonly dataDir?: string | undefined;
  /** Bind address of the emulators. @default '127.0.0.1' */
  readonly host?: string | undefined;
  /**
   * Keep the tables and queues at this AWS-compatible endpoint (moto's server, LocalStack) instead
   * of starting the embedded emulators (local/external-aws.ts). @default the emulators
   */
  readonly externalAws?: ExternalAws | undefined;
  readonly logger?: TaskLogger | undefined;
  readonly registry?: TaskTypeRegistry | undefined;
  /** Services handed to task handlers (example data stores). */
  readonly taskServices?: (clients: AwsClients) => Promise<TaskServices>;
  /** Seconds between summary lines; 0 disables them. */
  readonly summaryEverySeconds?: number | undefined;
  /** Start the worker pools (tests of the scheduler alone may not). Default true. */
  readonly workers?: boolean;
  /** Told of every settled attempt and where it ran (pool, and the Lambda pool's memory class). */
  readonly onOutcome?: OutcomeObserver | undefined;
  /** AWS's failure modes to inject (default: from SCHEDULER_FAULTS; none when unset). */
  readonly faults?: SchedulerFaults;
  /**
   * Scale to zero as on AWS (runtime/scheduler/activation.ts): the scheduler stops after a spell
   * with nothing to hold or run, an announced task wakes it, and a tick every `tickSeconds`
   * starts it for work coming due. False keeps it looping. Default: true with `scheduler.mode`
   * "lambda", false with "service".
   */
  readonly scaleToZero?: boolean;
  /** Idle spell before the scheduler stops. @default IDLE_STOP_MS */
  readonly idleStopMs?: number;
  /** The safety-net tick. @default 60 */
  readonly tickSeconds?: number;
  /** Finished tasks are deleted this long after they finish (DynamoDB TTL's stand-in). Default 1 h. */
  readonly retentionSeconds?: number | undefined;
}

export interface LocalRuntime {
  readonly emulators: Emulators;
  readonly services: Services;
  /** The queue consumers: the Lambda pool's entry worker and the Fargate pool's worker. */
  readonly workers: readonly QueueWorker[];
  /** Delivers task events to the configured webhooks from the items' outboxes. */
  readonly events: OutboxRelay;
  /** Latest scheduler (undefined until it holds the lease). */
  scheduler(): Scheduler | undefined;
  /** Whether the scheduler loop runs, or has stopped (scaled to zero) until work arrives. */
  schedulerRunning(): boolean;
  /** How many times announced work or the tick started a stopped scheduler. */
  schedulerWakes(): number;
  /** Attempts running in this process (both pools, handed-off Lambda classes included). */
  running(): number;
  stop(): Promise<void>;
}

export async function startLocalRuntime(options: LocalRuntimeOptions): Promise<LocalRuntime> {
  const { config } = options;
  const logger = options.logger ?? consoleLogger();
  // Taken before anything opens the stores: a second runtime on them is refused in one line.
  // Read before anything starts, so a malformed value stops the start cleanly.
  const faults = options.faults ?? schedulerFaultsFromEnvironment();
  const webhooks = localWebhookTargets(config.events.webhooks);
  const lock = options.dataDir ? lockDataDir(options.dataDir) : undefined;
  let emulators: Emulators;
  try {
    emulators = options.externalAws
      ? await connectExternalAws(options.externalAws, { shards: config.scheduler.shards })
      : await startEmulators({
          dataDir: options.dataDir,
          host: options.host,
          shards: config.scheduler.shards,
        });
  } catch (error) {
    lock?.release();
    throw isLevelLocked(error) && options.dataDir
      ? new DataDirInUseError(options.dataDir, undefined, { cause: error })
      : error;
  }
  if (emulators.indexRepair) {
    logger.warn('the last run did not stop cleanly: rebuilt the DynamoDB indexes from the items', {
      ...emulators.indexRepair,
    });
  }
  if (faults) logger.warn('SCHEDULER_FAULTS: injecting AWS failure modes', { ...faults });
  // `scheduler.mode` "service": the loop runs for good, as the always-on service task does on AWS.
  const scaleToZero = options.scaleToZero ?? config.scheduler.mode === 'lambda';
  // Per-task lines, thinned out under load (console-logger.ts); handlers log through `logger`.
  const taskLines = taskLineThrottle(logger);
  const taskLineFlush = setInterval(() => taskLines.flush(), 1000);
  taskLineFlush.unref();
  const stopping = new AbortController();
  /** One scheduler loop per shard (`scheduler.shards`), each with its own lease, as on AWS. */
  const shards = shardIndexes(config.scheduler.shards).map(
    (shard): ShardRun => ({
      scope: { shard, shards: config.scheduler.shards },
      current: undefined,
      loop: undefined,
      wakeRequested: false,
    }),
  );
  let wakes = 0;
  let relay: OutboxRelay | undefined;
  const services = buildServices({
    config,
    clients: faults ? faultyLocalClients(emulators.endpoints, faults) : emulators.clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
    registry: options.registry,
    // Submitted (or retried) is detail; an operator's cancel is news.
    onChange: (task) =>
      (task.state === 'QUEUED' ? (taskLines.debug ?? (() => {})) : taskLines.info).call(
        taskLines,
        `task ${task.state}${task.cancelRequested && task.state === 'RUNNING' ? ' (cancel requested)' : ''}`,
        {
          taskId: task.taskId,
          tenant: task.tenantId,
          type: task.type,
          priority: task.priority,
        },
      ),
    // What the asynchronous Lambda invoke is on AWS: start the loop in this process.
    ...(scaleToZero ? { wakeScheduler: async (shard: number) => startScheduler(shards[shard]!, 'wake'), logger } : {}),
    // Webhooks configured: every state change also records its event in the item (the outbox).
    // Without: only what the dependencies need (a held task's creation, a dependency's end).
    events: {
      outbox: webhooks.length > 0,
      dependencyOutbox: true,
      onOutboxEvent: (taskId) => relay?.notify(taskId),
    },
  });
  // Always started: it settles dependencies from the outboxes (a crash leaves them there), and
  // empties outboxes a run with webhooks left, should they be gone now.
  relay = new OutboxRelay({
    store: services.store,
    webhooks,
    logger,
    consumers: [(event) => services.dependencies.onChange(event.taskId, event)],
  });
  try {
    validateSchedules(config.schedules, services.tasks, new Date());
    checkWebhookFilterTypes(config.events.webhooks, services.registry);
    if (lock?.abandonedBy && !options.externalAws) {
      // The previous process on this DATA_DIR died holding attempts: take them back now, before
      // this one's scheduler and workers start (recovery.ts says why that is safe: the store is
      // inside DATA_DIR, under the lock). At an external endpoint another process may share the
      // tables, so there the attempts' leases lapse instead.
      const { recovered } = await recoverAbandonedAttempts({
        store: services.store,
        // The scheduler starts right after, and finds them: the announcements wake nothing.
        queues: new QueueClient(services.clients.sqs, emulators.queueUrls, { shards: config.scheduler.shards }),
        config,
        now: () => new Date(),
      });
      if (recovered.length > 0) {
        logger.warn(
          `recovered ${recovered.length} task${recovered.length === 1 ? '' : 's'} the previous run (pid ${lock.abandonedBy.pid ?? 'unknown'}) left DISPATCHED or RUNNING`,
          { queued: recovered.filter((task) => task.state === 'QUEUED').length },
        );
      }
    }
  } catch (error) {
    await emulators.stop();
    lock?.release();
    throw error;
  }
  relay.start();
  const taskServices = (await options.taskServices?.(emulators.clients)) ?? {};
  // As on AWS, the scheduler's own announces (reconciliation) wake nothing: it is running.
  const schedulerQueues = new QueueClient(services.clients.sqs, emulators.queueUrls, {
    shards: config.scheduler.shards,
  });

  // With schedulerRestartSeconds the loop hands its lease back and starts afresh that often, as
  // the scheduler Lambda does when its time runs out on AWS.
  const restartMs = (faults?.schedulerRestartSeconds ?? 0) * 1000;
  const runLoop = (run: ShardRun, restart?: { readonly startedAtMs: number }) =>
    runSchedulerLoop({
      control: services.control.forShard(run.scope.shard),
      leaseName: schedulerLeaseName(run.scope.shard),
      signal: stopping.signal,
      ...(restart
        ? {
            keepGoing: () => Date.now() - restart.startedAtMs < restartMs,
            // Published as the Lambda's are, so the API counts these handovers as it would on AWS.
            plannedStop: () => ({ atMs: restart.startedAtMs + restartMs, everyMs: restartMs }),
          }
        : {}),
      waitSeconds: 1,
      // A local restart after kill -9 should not wait a whole lease: the old process is gone.
      leaseTtlMs: 10_000,
      logger,
      ...(scaleToZero
        ? {
            idleStop: {
              afterMs: options.idleStopMs ?? IDLE_STOP_MS,
              graceMs: STOP_GRACE_MS,
              hasWork: (keepAlive) => hasSchedulerWork(services, new Date(), undefined, run.scope, keepAlive),
            },
          }
        : {}),
      createScheduler: () => {
        run.current = shardScheduler(services, run.scope, logger, {
          queues: schedulerQueues,
          onDispatch: (task) =>
            taskLines.debug?.('task DISPATCHED', { taskId: task.taskId, tenant: task.tenantId, pool: task.runtime }),
        });
        return run.current;
      },
      onLease: (event, lease) =>
        logger.info(`scheduler lease ${event}`, {
          token: lease.token,
          ...(run.scope.shards > 1 ? { shard: run.scope.shard } : {}),
        }),
    });
  function startScheduler(run: ShardRun, reason: 'start' | 'wake' | 'tick'): void {
    if (stopping.signal.aborted) return;
    if (run.loop) {
      // A loop that is handing back after an idle spell starts again once it has.
      run.wakeRequested = true;
      return;
    }
    const which = run.scope.shards > 1 ? ` shard ${run.scope.shard}` : '';
    if (reason !== 'start') {
      wakes++;
      logger.info(`scheduler${which} woken (${reason})`);
    }
    run.wakeRequested = false;
    run.loop = runRestarting(run).then((end) => {
      run.loop = undefined;
      if (end === 'idle') {
        if (run.wakeRequested) startScheduler(run, 'wake');
        else logger.info(`scheduler${which} idle: stopped until work arrives`);
      }
      return end;
    });
  }
  /** One run until idle, stopped or lease lost; with schedulerRestartSeconds, restarted that often. */
  async function runRestarting(run: ShardRun): Promise<SchedulerLoopEnd> {
    if (restartMs === 0) return runLoop(run);
    while (!stopping.signal.aborted) {
      const end = await runLoop(run, { startedAtMs: Date.now() });
      if (end !== 'stopped') return end;
    }
    return 'stopped';
  }
  for (const run of shards) startScheduler(run, 'start');
  const tick = scaleToZero
    ? setInterval(
        () => {
          for (const run of shards) {
            if (run.loop || stopping.signal.aborted) continue;
            hasSchedulerWork(services, new Date(), undefined, run.scope).then(
              (due) => {
                if (due) startScheduler(run, 'tick');
              },
              (error: unknown) => logger.warn('scheduler tick check failed', { error: String(error) }),
            );
          }
        },
        (options.tickSeconds ?? 60) * 1000,
      )
    : undefined;
  tick?.unref();

  const workers: QueueWorker[] = [];
  let lambdaPool: LocalLambdaPool | undefined;
  if (options.workers ?? true) {
    const attempt = {
      store: services.store,
      queues: services.queues,
      registry: services.registry,
      config,
      services: taskServices,
      logger,
      lifecycleLogger: taskLines,
    };
    lambdaPool = new LocalLambdaPool({
      queues: services.queues,
      concurrency: config.pools.lambda.concurrency,
      attempt,
      logger,
      onOutcome: options.onOutcome,
    });
    workers.push(
      lambdaPool.entry,
      new QueueWorker({
        queues: services.queues,
        queueId: workerQueue('fargate').id,
        // The scheduler keeps the pool within its vCPU and memory; this only caps the process.
        maxConcurrent: Math.max(1, Math.ceil(config.pools.fargate.vcpu / 0.25)),
        attempt,
        waitSeconds: 1,
        logger,
        onOutcome: (outcome) => options.onOutcome?.(outcome, { pool: 'fargate' }),
      }),
    );
    for (const worker of workers) worker.start();
  }
  const deadLetters = startDeadLetterConsumer({
    store: services.store,
    queues: services.queues,
    config,
    logger,
  });

  const expiry = startTaskExpiry({
    documents: emulators.clients.documents,
    tableName: services.store.tableName,
    retentionSeconds: options.retentionSeconds ?? LOCAL_RETENTION_SECONDS,
    logger,
  });

  const schedules = startScheduleRunner({ schedules: config.schedules, tasks: services.tasks, logger });
  for (const [name, at] of Object.entries(schedules.nextFirings())) {
    logger.info(`schedule ${name} next fires at ${at ?? 'never'}`);
  }

  let summaryTimer: NodeJS.Timeout | undefined;
  const summaryEvery = options.summaryEverySeconds ?? 5;
  if (summaryEvery > 0) {
    let lastLine = '';
    summaryTimer = setInterval(() => {
      const snapshot = mergeSnapshots(shards.flatMap((run) => (run.current ? [run.current.snapshot()] : [])));
      if (!snapshot) return;
      const tiers = Object.entries(snapshot.tiers)
        .map(([tier, t]) => `${tier}=${t.waiting}`)
        .join(' ');
      const line = `waiting[${tiers}] lambda=${snapshot.pools.lambda.used}/${snapshot.pools.lambda.capacity} fargate=${snapshot.pools.fargate.vcpuUsed}/${snapshot.pools.fargate.vcpu}vCPU rate=${snapshot.dispatchRate}/s`;
      // Quiet when nothing changes, so an idle runtime does not flood the terminal.
      if (line !== lastLine) logger.info(`summary ${line}`);
      lastLine = line;
    }, summaryEvery * 1000);
    summaryTimer.unref();
  }

  return {
    emulators,
    services,
    workers,
    events: relay,
    scheduler: () => shards[0]!.current,
    schedulerRunning: () => shards.some((run) => run.loop !== undefined),
    schedulerWakes: () => wakes,
    running: () => workers.reduce((sum, worker) => sum + worker.inFlight, 0) + (lambdaPool?.handedOff ?? 0),
    async stop() {
      if (summaryTimer) clearInterval(summaryTimer);
      if (tick) clearInterval(tick);
      clearInterval(taskLineFlush);
      schedules.stop();
      // Nothing starts once stopping began: the scheduler dispatches nothing more (its tick
      // checks the signal, also mid-poll) and the workers stop receiving at once, while the
      // attempts already running finish. A task dispatched but not started stays DISPATCHED;
      // the next start recovers it.
      stopping.abort();
      const workersStopped = Promise.all([
        ...workers.filter((worker) => worker !== lambdaPool?.entry).map((worker) => worker.stop()),
        lambdaPool?.stop(),
      ]);
      for (const run of shards) while (run.loop) await run.loop;
      await Promise.all([workersStopped, deadLetters.stop(), expiry.stop(), relay.stop()]);
      taskLines.flush();
      // Spans still buffered leave now (OTEL_EXPORTER_OTLP_ENDPOINT set; nothing otherwise).
      await flushTraces().catch(() => undefined);
      await emulators.stop();
      lock?.release();
    },
  };
}

/** A scheduler shard's loop in this process: its scheduler while it holds the lease, and its run. */
interface ShardRun {
  readonly scope: ShardScope;
  current: Scheduler | undefined;
  loop: Promise<SchedulerLoopEnd> | undefined;
  /** Work arrived while the loop was handing back after an idle spell: start it again. */
  wakeRequested: boolean;
}
