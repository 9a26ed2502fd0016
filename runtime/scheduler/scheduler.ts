/**
 * The scheduler: one tick at a time, it frees the capacity of finished attempts, takes in queued
 * work (intake.ts), asks the policy which tasks start, dispatches them (dispatch.ts), and keeps
 * up reconciliation, tenant settings and the published snapshot (snapshot.ts).
 *
 * What it holds in memory is a cache: after a crash a new scheduler rebuilds the capacity in use
 * from DynamoDB (the lease ledger, lease-ledger.ts) and the active tenant-tiers from the intake registry,
 * and reads each one's queued work from the `byTenantQueue` index. Writes are idempotent on
 * taskId + fence, so a duplicate announcement, a duplicate worker message or a replayed tick
 * cannot dispatch a task twice.
 *
 * One tick (`tick` composes it as named stages, and says what runs side by side):
 *   completions ─▶ release capacity                                  ‖ with the announcements
 *   tier queues ─▶ announcements ─▶ windows (register tenant-tier, delete)
 *   windows below half ─▶ Query byTenantQueue ─▶ windows
 *   policy.next ─▶ reservations ─▶ consistent re-read ─▶ conditional dispatch ─▶ worker messages
 *   every few seconds: reconcile (with a page of the registry backstop), settings version, publish a snapshot
 *   and, when it changed, the fair-share rotation's memory (control table), which a restart restores
 */
import type { CompletionMessage, ReceivedMessage } from '../adapters/queues.ts';
import type { BatchMemberEnd } from '../core/batch.ts';
import type { SchedulerConfig } from '../core/config.ts';
import type { QueuedRef } from '../core/intake/index.ts';
import type { TaskLogger } from '../core/logger.ts';
import { capacityOf, holdSecondsOf, SchedulingPolicy, taskHoldSeconds } from '../core/policy/index.ts';
import { ownEntry } from '../core/records.ts';
import { INTAKE_ALLOWANCE_MS, type SchedulerSnapshot } from '../core/scheduler-snapshot.ts';
import { ownsTenant, type ShardScope, SINGLE_SHARD } from '../core/shards.ts';
import type { Task } from '../core/task.ts';
import { pickTenantSettings, SETTINGS_RESCAN_MS } from '../core/tenant-settings.ts';
import { completionsQueue } from '../infra/resources.ts';
import { recordTaskSpan } from '../telemetry/tracing.ts';
import { ActiveAttempts } from './attempts.ts';
import { BacklogCounter, RecentlyFinishedTenants } from './backlog.ts';
import { CapacitySlice, SLICE_EVERY_MS } from './capacity-slice.ts';
import {
  type DispatchDeps,
  type HeldLease,
  mayDispatch,
  pick,
  sendWorkerMessages,
  writeDispatches,
} from './dispatch.ts';
import { Intake } from './intake.ts';
import { LeaseLedger, listedLeases } from './lease-ledger.ts';
import type { Announcer, MessageQueues, SchedulerControl, TaskRepository } from './ports.ts';
import { Reconciler } from './reconciler.ts';
import { Reservations } from './reservation.ts';
import { buildSnapshot, type PlannedHandover } from './snapshot.ts';

export { DEFAULT_DISPATCH_MARGIN_MS, type HeldLease } from './dispatch.ts';

export interface SchedulerDeps {
  readonly store: TaskRepository;
  readonly control: SchedulerControl;
  readonly queues: MessageQueues & Announcer;
  readonly config: SchedulerConfig;
  readonly now?: () => Date;
  readonly logger?: TaskLogger;
  readonly random?: () => number;
  /** Observer of each state change the scheduler makes (the local runtime logs them). */
  readonly onDispatch?: (task: Task) => void;
  /**
   * Told how many QUEUED tasks the registry backstop found that nobody would read (announced
   * again); only when some were. The scheduler Lambda publishes it as `UnregisteredQueued`.
   */
  readonly onUnregisteredQueued?: (count: number) => void;
  /**
   * The batch sweeper (app/batches.ts): counts what a crash left uncounted and ends complete
   * batches; run with the upkeep every BATCH_SWEEP_EVERY_MS.
   */
  readonly sweepBatches?: (() => Promise<unknown>) | undefined;
  /**
   * Counts batch members' ends reported in completion messages (app/batches.ts `membersEnded`):
   * each round's ends together, one write per counter shard. A report's message is deleted only
   * once its end is counted; one that failed comes back and is counted again (idempotent).
   * Returns the ends it could not count. Absent: those messages are deleted as the others, and
   * the batch sweeper counts the ends.
   */
  readonly countBatchEnds?: ((ends: readonly BatchMemberEnd[]) => Promise<readonly BatchMemberEnd[]>) | undefined;
  /**
   * Which shard this scheduler is (`scheduler.shards`, runtime/core/shards.ts): it serves only
   * the tenants that hash to it, from its own tier and completions queues, and with more than one
   * shard starts tasks only within its capacity slice of the pools (capacity-slice.ts,
   * docs/scaling.md). `control` should be the shard's view (`control.forShard(shard)`). Absent,
   * or one shard: the whole pools, no slice writes.
   */
  readonly shard?: ShardScope | undefined;
  /** How often a sharded scheduler reports for its slice. @default 2 s */
  readonly sliceEveryMs?: number | undefined;
}

export interface TickResult {
  readonly received: number;
  readonly dispatched: number;
  readonly completed: number;
}

/** A takeover publishes by then however many restored tenant-tiers are still unread (the dashboard needs it). */
const TAKEOVER_PUBLISH_MAX_MS = 30_000;
const SNAPSHOT_EVERY_MS = 2_000;
/** Completion receives (10 messages each) per tick at most, and in flight at once. */
const COMPLETION_BATCHES = 40;
const COMPLETION_PARALLEL = 8;
/**
 * How often the upkeep reads the settings version (one small item) when no dispatch round did:
 * the settings themselves are scanned when it moved (a scan of the whole control table: 674.5 read
 * units at 10,000 tenant-tiers, where every 10 s was about $44 a month), and every
 * SETTINGS_RESCAN_MS whatever it says.
 */
const SETTINGS_CHECK_EVERY_MS = 10_000;
const BATCH_SWEEP_EVERY_MS = 15_000;

export class Scheduler {
  readonly #deps: SchedulerDeps;
  readonly #now: () => Date;
  readonly #policy: SchedulingPolicy;
  readonly #intake: Intake;
  /** The dispatch round's picks, each holding its task's capacity and window entry until decided. */
  readonly #reservations: Reservations;
  /** Dispatched or running tasks this scheduler counts against capacity, from commit (or adoption) to end. */
  readonly #active: ActiveAttempts;
  readonly #reconciler: Reconciler;
  /** Where this scheduler records its attempts before their dispatch writes (lease-ledger.ts). */
  readonly #ledger: LeaseLedger | undefined;
  /** The real backlog per tenant-tier, counted at a paced interval (issue 27). */
  readonly #backlog: BacklogCounter;
  readonly #finished = new RecentlyFinishedTenants();
  readonly #dispatchTimes: number[] = [];
  #lastSnapshotMs = 0;
  #lastTenantRefreshMs = 0;
  #lastSettingsCheckMs = 0;
  #lastBatchSweepMs = 0;
  /** The rotation's memory as last written (written again only when it changed). */
  #savedRotation: string | undefined;
  #lease: HeldLease | undefined;
  #handover: PlannedHandover | undefined;
  /** When resume() finished after taking over from a predecessor: the snapshot's `rotation.resumedAt`. */
  #resumedAtMs: number | undefined;
  #tookOver = false;
  /** Tenants with stored settings at the last refresh: one no longer stored goes back to its configured ones. */
  #storedTenants = new Set<string>();
  /** The tenant settings version last applied (see #bindTenantSettings). */
  #tenantsVersion: string | undefined;
  /** The completions receive in flight (it may outlive a round) and what it returned, not yet taken. */
  #completionPoll: Promise<number> | undefined;
  readonly #completionsArrived: ReceivedMessage<CompletionMessage>[] = [];
  #completionError: unknown;
  /** Its slice of the pools, when sharded. */
  readonly #slice: CapacitySlice | undefined;
  #sliceTimer: ReturnType<typeof setInterval> | undefined;
  readonly #shard: ShardScope;
  readonly #completionsQueueId: string;

  constructor(deps: SchedulerDeps) {
    this.#deps = deps;
    this.#shard = deps.shard ?? SINGLE_SHARD;
    this.#completionsQueueId = completionsQueue(this.#shard.shard).id;
    this.#now = deps.now ?? (() => new Date());
    const { config } = deps;
    this.#policy = new SchedulingPolicy({
      policy: config.policy,
      agingSeconds: config.agingSeconds,
      // The whole pools: with shards, the capacity slice below sets what it may start within.
      pools: config.pools,
      tenantDefaults: config.tenantDefaults,
      tenants: config.tenants,
      maxHoldSeconds: holdSecondsOf(config),
    });
    this.#intake = new Intake({
      store: deps.store,
      control: deps.control,
      queues: deps.queues,
      config,
      policy: this.#policy,
      now: this.#now,
      logger: deps.logger,
      queuedAgain: (ref) => this.#queuedAgain(ref),
      shard: this.#shard,
    });
    const ledger = deps.store.leasePages ? new LeaseLedger(deps.store.leasePages, this.#shard, deps.logger) : undefined;
    this.#ledger = ledger;
    this.#active = new ActiveAttempts({
      policy: this.#policy,
      flow: deps.control.flow,
      logger: deps.logger,
      ended: (taskId, fence) => ledger?.settle(taskId, fence),
    });
    this.#reservations = new Reservations({
      policy: this.#policy,
      intake: this.#intake,
      flow: deps.control.flow,
      onCommitted: (task, nowMs, queued) => this.#counted(task, nowMs, queued),
      logger: deps.logger,
    });
    this.#backlog = new BacklogCounter(deps.store);
    if (this.#shard.shards > 1) {
      const hold = holdSecondsOf(config);
      this.#slice = new CapacitySlice({
        control: deps.control,
        policy: this.#policy,
        shard: this.#shard.shard,
        shards: this.#shard.shards,
        capacity: capacityOf(config.pools),
        heldAtMostMs: Math.max(hold.lambda, hold.fargate) * 1000,
        ...(deps.sliceEveryMs === undefined ? {} : { everyMs: deps.sliceEveryMs }),
        ...(deps.logger ? { logger: deps.logger } : {}),
      });
    }
    this.#reconciler = new Reconciler({
      store: deps.store,
      ledger,
      control: deps.control,
      queues: deps.queues,
      config,
      now: this.#now,
      random: deps.random,
      logger: deps.logger,
      shard: this.#shard,
    });
  }

  /**
   * Dispatch under this lease from now on (the loop calls it on taking and on each renewal).
   * Without one (tests, tools) dispatches are neither fenced nor stopped near an expiry.
   */
  holdLease(lease: HeldLease): void {
    this.#lease = lease;
    this.#slice?.holdLease(lease.token);
  }

  /** This scheduler hands over at a planned time (a Lambda invocation's end): published in its snapshot. */
  planHandover(handover: PlannedHandover): void {
    // A changed plan is published at the next tick, not up to a snapshot interval later.
    if (this.#handover !== undefined && this.#handover.atMs !== handover.atMs) this.#lastSnapshotMs = 0;
    this.#handover = handover;
  }

  get policy(): SchedulingPolicy {
    return this.#policy;
  }

  /** Queued tasks the intake holds in its windows (a window per active tenant-tier, not the backlog). */
  get heldCount(): number {
    return this.#intake.heldCount;
  }

  get activeCount(): number {
    return this.#active.size;
  }

  /**
   * Until when promises oblige this scheduler to keep reading their partitions: a submit that
   * skipped its announcement under one woke nobody, so the scheduler must not stop before.
   */
  get readsPromisedUntilMs(): number {
    return this.#intake.readsPromisedUntilMs;
  }

  /** Active tenant-tiers: registered, or on their way in or out of the registry. */
  get activeTenantTiers(): number {
    return this.#intake.windows.activeCount;
  }

  /**
   * Rebuild the capacity in use from DynamoDB, the active tenant-tiers from the registry, and
   * load tenant settings. Called when the scheduler takes the lease, so a restarted scheduler
   * never exceeds a quota and finds every tenant-tier's queued work.
   */
  async resume(): Promise<void> {
    await this.#settingsMoved({ rescan: true });
    // Recently finished work stays in view across scheduler restarts (each invocation on AWS).
    const previous = await this.#deps.control.getSnapshot<SchedulerSnapshot>();
    this.#finished.restore(previous?.recentlyFinished, this.#now().getTime());
    // The rotation's memory first: a tenant served just before the restart does not go first again.
    const rotation = await this.#deps.control.getRotation();
    if (rotation) {
      this.#policy.restoreRotation(rotation, this.#now().getTime());
      this.#savedRotation = JSON.stringify(rotation);
    }
    await this.#intake.restore();
    const nowMs = this.#now().getTime();
    const { latest } = await listedLeases({ store: this.#deps.store, ledger: this.#ledger }, nowMs);
    for (const ref of latest.values()) {
      // Other shards count their own tenants' attempts.
      if (!ownsTenant(this.#shard, ref.tenantId)) continue;
      // Its timeout is not in the index: its hold counts as the pool's cap until it ends.
      const sinceMs = Date.parse(ref.leasedAt);
      this.#active.adopt({ ...ref, ...(Number.isFinite(sinceMs) ? { sinceMs } : {}) }, nowMs);
    }
    // Sharded: its first report, now that it knows what it holds (nothing starts before it).
    await this.#slice?.sync(this.#now().getTime());
    this.#startSliceReports();
    if (this.#tookOver) this.#resumedAtMs = this.#now().getTime();
  }

  /**
   * This scheduler takes over from a predecessor (the lease had a holder): the work it held is
   * taken in again, and until then the snapshot says so (`rotation.resumedAt`). Called before resume().
   */
  tookOver(): void {
    this.#tookOver = true;
  }

  /**
   * A sharded scheduler reports for its slice on its own clock too, not only before dispatch
   * rounds: while it waits in a long poll (up to 10 s idle) its claim must still follow the other
   * shards' demand, or a shard idle at its report would keep what the busy ones need.
   */
  #startSliceReports(): void {
    const slice = this.#slice;
    if (!slice || this.#sliceTimer) return;
    this.#sliceTimer = setInterval(
      () => {
        slice.sync(this.#now().getTime()).catch(() => undefined);
        // At least every 250 ms apart (a test may ask for a report every round: sliceEveryMs 0).
      },
      Math.max(250, this.#deps.sliceEveryMs ?? SLICE_EVERY_MS),
    );
    this.#sliceTimer.unref?.();
  }

  /** Apply stored tenant settings (PUT /v1/tenants) to the policy, queued work included. */
  async refreshTenants(): Promise<void> {
    const { tenants: stored, taskTypes: types } = await this.#deps.control.listSettings();
    for (const tenant of stored) this.#policy.setTenant(tenant.tenantId, pickTenantSettings(tenant));
    // A tenant whose stored settings were removed follows the configuration file (or the defaults) again.
    const storedNow = new Set(stored.map((tenant) => tenant.tenantId));
    for (const tenantId of this.#storedTenants) {
      if (!storedNow.has(tenantId)) this.#policy.setTenant(tenantId, ownEntry(this.#deps.config.tenants, tenantId));
    }
    this.#storedTenants = storedNow;
    this.#policy.setPausedTypes(types.filter((type) => type.paused).map((type) => type.type));
    this.#lastTenantRefreshMs = this.#now().getTime();
  }

  /**
   * One scheduling round: a pipeline of named stages, one after another; inside a stage, `‖`
   * marks what runs side by side.
   *
   *   #waitForWork         polls: tier queues ‖ completions queue (long or short, see there)
   *   #freeCompleted  ‖  #takeAnnouncements
   *       completions:   receive more while full ─▶ release capacity ─▶ delete (batches ‖)
   *       announcements: receive more while full (receives ‖) ─▶ into windows ─▶ register new
   *                      tenant-tiers (‖) ─▶ delete (a batch per tier queue ‖)
   *   #refill              index reads ‖ deregistration probes ‖ promise writes
   *   #bindTenantSettings  one consistent read of the settings version
   *   #dispatchRound       pick (reserve ─▶ consistent read ─▶ settings ─▶ flow admission)
   *                        ─▶ dispatch writes (all ‖) ─▶ worker sends (a batch per runtime ‖) ‖ key places handed back
   *   #maintain            every few seconds: reconcile, refresh tenants, snapshot and rotation
   *
   * Once `signal` aborts (shutdown began, even during the wait) it dispatches nothing.
   */
  async tick(
    options: { waitSeconds?: number; idleWaitSeconds?: number; signal?: AbortSignal } = {},
  ): Promise<TickResult> {
    await this.#waitForWork(options);
    const [completed, received] = await Promise.all([this.#freeCompleted(), this.#takeAnnouncements()]);
    await this.#refill();
    await this.#bindTenantSettings();
    const dispatched = await this.#dispatchRound(options.signal);
    await this.#maintain();
    return { received, dispatched, completed };
  }

  /**
   * With `waitSeconds` > 0, wait, long-polling the completions queue and the tier queues
   * together, for whichever comes first: a completion (capacity freed), an announcement (work
   * arrived), the next index read coming due, or `waitSeconds` (`idleWaitSeconds` while it holds
   * nothing and expects nothing: default `waitSeconds`). The polls outlive the round: what one
   * returns later is taken by the next round. With announcements left in a tier or a read due
   * now it does not wait (short polls, taken this round).
   */
  async #waitForWork(options: { waitSeconds?: number; idleWaitSeconds?: number; signal?: AbortSignal }): Promise<void> {
    const waitSeconds = options.waitSeconds ?? 0;
    const nowMs = this.#now().getTime();
    const nextReadAtMs = this.#intake.nextReadAtMs(mayDispatch(this.#lease, nowMs));
    const readDue = nextReadAtMs !== undefined && nextReadAtMs <= nowMs;
    // Under a promise, work may arrive unannounced: the promise's rereads are reads due.
    const idle = this.#intake.heldCount === 0 && !readDue && this.#intake.readsPromisedUntilMs <= nowMs;
    // Announcements left in a tier, or a read due: take them at once. Waiting on a completion
    // here would pace the intake at one round per completion.
    const pollSeconds =
      waitSeconds === 0 || readDue || this.#intake.backlogged
        ? 0
        : idle
          ? (options.idleWaitSeconds ?? waitSeconds)
          : waitSeconds;
    const tiers = this.#intake.poll(pollSeconds);
    const completions = this.#pollCompletions(pollSeconds);
    if (pollSeconds === 0) {
      // Short polls: this round's own receives are taken this round.
      await Promise.all([...tiers.started, ...completions.started]);
    } else if (this.#intake.arrived === 0 && this.#completionsArrived.length === 0) {
      const untilMs = Math.min(nowMs + pollSeconds * 1000, nextReadAtMs ?? Number.POSITIVE_INFINITY);
      await firstNonEmpty([...tiers.inFlight, ...completions.inFlight], untilMs - nowMs, options.signal);
    }
  }

  /**
   * Work announced on the tier queues into the windows: receive (more while full), admit,
   * register the new tenant-tiers, then delete (a message goes only once its tenant-tier is
   * registered). Returns how many messages were received.
   */
  async #takeAnnouncements(): Promise<number> {
    const received = await this.#intake.receiveAnnouncements();
    if (received.length === 0) return 0;
    await this.#intake.register(this.#intake.admitAnnouncements(received));
    await this.#intake.deleteAnnouncements(received);
    return received.length;
  }

  /** Drained windows read from the index, emptied tenant-tiers probed, promises made or renewed. */
  async #refill(): Promise<void> {
    await this.#intake.refill(mayDispatch(this.#lease, this.#now().getTime()));
  }

  /**
   * Pick, write, send. Every pick is a reservation, committed by its write or aborted; one the
   * round left open is a bug, reported and let go (Reservations.endRound).
   */
  async #dispatchRound(signal: AbortSignal | undefined): Promise<number> {
    // Sharded: report when due, and drop an allowance too old to use, before picking.
    await this.#slice?.sync(this.#now().getTime());
    const deps: DispatchDeps = {
      store: this.#deps.store,
      flow: this.#deps.control.flow,
      settingsMoved: () => this.#settingsMoved(),
      config: this.#deps.config,
      policy: this.#policy,
      reservations: this.#reservations,
      ledger: this.#ledger,
      ...(signal ? { stopped: () => signal.aborted } : {}),
    };
    const now = this.#now();
    try {
      const admitted = await pick(deps, now, this.#lease);
      if (admitted.length === 0) return 0;
      const { written, failure } = await writeDispatches(deps, admitted, now, this.#lease);
      await Promise.all([sendWorkerMessages(this.#deps.queues, written), this.#reservations.released()]);
      if (failure !== undefined) throw failure;
      return written.length;
    } finally {
      await this.#reservations.released();
      this.#reservations.endRound();
    }
  }

  /**
   * Tenant settings bind at once: before a dispatch round with candidates, one consistent read
   * of the settings version that every `PUT /v1/tenants` bumps before answering, and the tenants
   * re-read when it moved. (#maintain reads it too, every 10 s, and rescans every 5 minutes.)
   */
  async #bindTenantSettings(): Promise<void> {
    if (this.#intake.heldCount === 0) return;
    await this.#settingsMoved();
  }

  /**
   * One consistent read of the settings version; re-reads the settings when it moved (or with
   * `rescan`). The version is read first: a change written between the two reads moves it again.
   */
  async #settingsMoved(options: { rescan?: boolean } = {}): Promise<boolean> {
    this.#lastSettingsCheckMs = this.#now().getTime();
    const version = await this.#deps.control.tenantsVersion();
    if (version === this.#tenantsVersion && !options.rescan) return false;
    await this.refreshTenants();
    this.#tenantsVersion = version;
    return true;
  }

  /** Start a receive on the completions queue unless one is in flight; see `Intake.poll`. */
  #pollCompletions(waitSeconds: number): { started: Promise<number>[]; inFlight: Promise<number>[] } {
    if (this.#completionPoll) return { started: [], inFlight: [this.#completionPoll] };
    const poll = this.#deps.queues
      .receive<CompletionMessage>(this.#completionsQueueId, { max: 10, waitSeconds })
      .then(
        (messages) => {
          this.#completionsArrived.push(...messages);
          return messages.length;
        },
        (error: unknown) => {
          this.#completionError = error;
          return 0;
        },
      )
      .finally(() => {
        this.#completionPoll = undefined;
      });
    this.#completionPoll = poll;
    return { started: [poll], inFlight: [poll] };
  }

  /**
   * Free capacity for every attempt a worker reports finished: what the poll returned and, while
   * receives come back full, more of them side by side (doubling, up to COMPLETION_PARALLEL), so
   * capacity is freed as fast as completions arrive, not one SQS round trip per 10. Each batch
   * is released at once and its delete sent; the deletes and key hand-backs are waited for at
   * the end. Returns how many attempts ended.
   */
  async #freeCompleted(): Promise<number> {
    if (this.#completionError !== undefined) {
      const error = this.#completionError;
      this.#completionError = undefined;
      throw error;
    }
    const releases: Promise<void>[] = [];
    const deletes: Promise<unknown>[] = [];
    const batchEnds: ReceivedMessage<CompletionMessage>[] = [];
    const messages = this.#completionsArrived.splice(0);
    let count: number;
    try {
      count = await this.#releaseRounds(messages, releases, deletes, batchEnds);
    } catch (error) {
      // The round failed midway: what it sent is waited for (not left to fail unheard), then the tick fails.
      await Promise.allSettled([...releases, ...deletes]);
      throw error;
    }
    if (batchEnds.length > 0) deletes.push(this.#countAndDelete(batchEnds));
    await Promise.all([...releases, ...deletes]);
    return count;
  }

  /** {@link #freeCompleted}'s rounds: releases and deletes it starts go into the arrays given. */
  async #releaseRounds(
    first: ReceivedMessage<CompletionMessage>[],
    releases: Promise<void>[],
    deletes: Promise<unknown>[],
    batchEnds: ReceivedMessage<CompletionMessage>[],
  ): Promise<number> {
    let count = 0;
    let messages = first;
    let full = messages.length >= 10;
    for (let batches = 1, width = 2; ; ) {
      for (const { body } of messages) {
        const active = this.#active.get(body.taskId);
        // A stale report (older fence) must not free the capacity of a newer attempt.
        if (active && active.fence === body.fence) {
          const released = this.#active.end(body.taskId);
          if (released) releases.push(released);
          this.#finished.finished(body.tenantId, body.state, this.#now().getTime());
          count++;
        }
      }
      // Reports of a batch member's end wait for the count below; the others go at once.
      const { toCount = [], plain = [] } = Object.groupBy(messages, (m) =>
        this.#deps.countBatchEnds && m.body.batchId !== undefined && m.body.batchIndex !== undefined
          ? 'toCount'
          : 'plain',
      );
      batchEnds.push(...toCount);
      if (plain.length > 0) {
        deletes.push(
          this.#deps.queues.delete(
            this.#completionsQueueId,
            plain.map((m) => m.receiptHandle),
          ),
        );
      }
      width = Math.min(width, COMPLETION_BATCHES - batches);
      if (!full || width <= 0) break;
      batches += width;
      const rounds = await Promise.all(
        Array.from({ length: width }, () =>
          this.#deps.queues.receive<CompletionMessage>(this.#completionsQueueId, { max: 10, waitSeconds: 0 }),
        ),
      );
      messages = rounds.flat();
      full = rounds.every((round) => round.length >= 10);
      width = Math.min(width * 2, COMPLETION_PARALLEL);
    }
    return count;
  }

  /**
   * Delete the round's completion messages that report a batch member's end, once those ends are
   * counted, all together (one read and one write per counter shard; a duplicate delivery counts
   * nothing twice). If the count failed they are kept: SQS hands them out again once their
   * visibility ends, and they free nothing twice (their attempt is no longer active).
   */
  async #countAndDelete(messages: readonly ReceivedMessage<CompletionMessage>[]): Promise<void> {
    let failed: readonly BatchMemberEnd[];
    try {
      failed = await this.#deps.countBatchEnds!(messages.map(({ body }) => batchEndOf(body)));
    } catch (error) {
      this.#deps.logger?.warn('batch ends not counted yet', { ends: messages.length, error: String(error) });
      return;
    }
    // Kept: they come back once their visibility ends and are counted then (or by the sweeper).
    const kept = new Set(failed.map((end) => `${end.batchId}#${end.batchIndex}`));
    const done = messages.filter(({ body }) => !kept.has(`${body.batchId}#${body.batchIndex}`));
    if (done.length === 0) return;
    await this.#deps.queues.delete(
      this.#completionsQueueId,
      done.map((m) => m.receiptHandle),
    );
  }

  /** A dispatched attempt now counts against its pool and tenant, until its own timeout at the latest. */
  #counted(task: Task, nowMs: number, queued?: Task): void {
    if (task.traceparent) {
      // The task's wait, from when it was queued to this dispatch (tasks submitted with a traceparent).
      const since = queued?.stateChangedAt ?? queued?.submittedAt ?? task.submittedAt;
      recordTaskSpan(
        'task.wait',
        task.traceparent,
        {
          'task.id': task.taskId,
          'task.tenant': task.tenantId,
          'task.priority': task.priority,
          'task.attempt': task.attempts + 1,
        },
        new Date(since),
        new Date(nowMs),
      ).catch(() => undefined);
    }
    this.#active.committed(task, nowMs, nowMs + taskHoldSeconds(this.#deps.config, task.timeoutSeconds) * 1000);
    this.#backlog.dispatched(task.tenantId, task.priority);
    this.#dispatchTimes.push(nowMs);
    this.#deps.onDispatch?.(task);
  }

  /**
   * A QUEUED ref for a task counted as active. A fence not older than the attempt's means the
   * attempt is over (lease expired, retry, lost completion): stop counting it, or the policy
   * would refuse the task as already active. An older fence is a stale index entry or message.
   */
  #queuedAgain(ref: QueuedRef): boolean {
    const active = this.#active.get(ref.taskId);
    if (!active) return true;
    if (ref.fence < active.fence) return false;
    void this.#active.end(ref.taskId);
    return true;
  }

  /** Periodic upkeep: reconciliation, tenant settings, snapshot. */
  async #maintain(): Promise<void> {
    const nowMs = this.#now().getTime();
    // Settings: their version (one small item) when no round read it lately; the whole settings
    // when it moved, and every SETTINGS_RESCAN_MS for a change whose version bump was lost (its
    // PUT failed after storing it) or a writer that does not bump.
    if (nowMs - this.#lastTenantRefreshMs >= SETTINGS_RESCAN_MS) await this.#settingsMoved({ rescan: true });
    else if (nowMs - this.#lastSettingsCheckMs >= SETTINGS_CHECK_EVERY_MS) await this.#settingsMoved();
    const windows = this.#intake.windows;
    const reconciled = await this.#reconciler.maybeRun(
      {
        holds: (ref) => windows.holds(ref.taskId, ref.tenantId, ref.priority),
        reads: (ref) => windows.isRegistered(ref.tenantId, ref.priority),
      },
      this.#active.view,
    );
    if (reconciled.unregisteredQueued > 0) this.#deps.onUnregisteredQueued?.(reconciled.unregisteredQueued);
    await Promise.all(reconciled.released.map((taskId) => this.#active.end(taskId)));
    for (const task of reconciled.adopted ?? []) {
      if (windows.holds(task.taskId, task.tenantId, task.priority)) continue;
      const sinceMs = Date.parse(task.dispatchedAt ?? '');
      this.#active.adopt(
        {
          ...task,
          ...(Number.isFinite(sinceMs) ? { sinceMs } : {}),
          holdSeconds: taskHoldSeconds(this.#deps.config, task.timeoutSeconds),
        },
        nowMs,
      );
    }
    await this.#backlog.maybeCount(windows.heads(), nowMs);
    if (this.#deps.sweepBatches && nowMs - this.#lastBatchSweepMs >= BATCH_SWEEP_EVERY_MS) {
      this.#lastBatchSweepMs = nowMs;
      // Its failure must not stop the upkeep: the next sweep looks again.
      await this.#deps
        .sweepBatches()
        .catch((error: unknown) => this.#deps.logger?.warn('batch sweep failed', { error: String(error) }));
    }
    if (nowMs - this.#lastSnapshotMs >= SNAPSHOT_EVERY_MS) {
      this.#lastSnapshotMs = nowMs;
      // Having taken over, it publishes once it has taken the waiting work in again: until then the
      // API answers from its predecessor's last snapshot, which held that work.
      // The rotation's memory first, and the snapshot only once it landed: the snapshot publishes
      // waiting tenants' turns, which bounds are given from and a successor restores from that
      // memory. Published beside a write that failed, a turn could be given and then forgotten.
      const snapshot = this.snapshot();
      await this.#saveRotation();
      if (this.#intakeSettled(nowMs)) await this.#deps.control.putSnapshot(snapshot);
    }
  }

  /**
   * After taking over from a predecessor: every restored tenant-tier read again and the intake
   * allowance passed (the announcements its predecessor handed back), or TAKEOVER_PUBLISH_MAX_MS
   * passed however far the reads got (the snapshot then says what is unread, and the API gives
   * no bound from it: runtime/app/wait.ts `intakeSettled`).
   */
  #intakeSettled(nowMs: number): boolean {
    const resumedAtMs = this.#resumedAtMs;
    if (resumedAtMs === undefined) return true;
    if (nowMs >= resumedAtMs + TAKEOVER_PUBLISH_MAX_MS) return true;
    return this.#intake.windows.unreadSinceRestore() === 0 && nowMs >= resumedAtMs + INTAKE_ALLOWANCE_MS;
  }

  /** Persist the rotation's memory when it changed (the snapshot's pace; and on a clean stop). */
  async #saveRotation(): Promise<void> {
    const now = this.#now();
    const state = this.#policy.rotationState(now.getTime());
    const json = JSON.stringify(state);
    if (json === this.#savedRotation) return;
    const saved = await this.#deps.control.putRotation(state, now);
    if (saved?.dropped) {
      this.#deps.logger?.warn('rotation memory trimmed to fit its item', { leftOut: saved.dropped });
    }
    this.#savedRotation = json;
  }

  /** What the API uses to explain waits and the dashboard to draw tiers, pools and tenants. */
  snapshot(): SchedulerSnapshot {
    const nowMs = this.#now().getTime();
    while (this.#dispatchTimes.length > 0 && this.#dispatchTimes[0]! < nowMs - 60_000) this.#dispatchTimes.shift();
    return buildSnapshot(
      {
        policy: this.#policy,
        windows: this.#intake.windows,
        pools: this.#deps.config.pools,
        dispatchesLastMinute: this.#dispatchTimes.length,
        backlog: this.#backlog.view(this.#intake.windows.heads(), nowMs),
        recentlyFinished: this.#finished.view(nowMs),
        parkedByType: this.#policy.parkedByType(),
        handover: this.#handover,
        resumedAtMs: this.#resumedAtMs,
      },
      nowMs,
    );
  }

  /**
   * Clean stop: announcements received and not consumed become visible again at once, and a
   * sharded scheduler gives its slice of the pools up (its entry keeps only what its tasks hold).
   * Nothing else is handed back: the windows are a cache of the index, and the registry stays.
   */
  async releaseHeld(): Promise<void> {
    if (this.#sliceTimer) clearInterval(this.#sliceTimer);
    this.#sliceTimer = undefined;
    await Promise.all([
      this.#intake.stop(),
      this.#releaseCompletions(),
      this.#saveRotation(),
      this.#slice?.release(this.#now().getTime()),
      // A page left behind would wake a scheduler just to find its attempts over.
      this.#ledger?.flush(),
    ]);
  }

  /** Completions received and not taken become visible again at once (the next scheduler takes them). */
  async #releaseCompletions(): Promise<void> {
    if (this.#completionPoll) await this.#completionPoll;
    const handles = this.#completionsArrived.splice(0).map((message) => message.receiptHandle);
    if (handles.length > 0) await this.#deps.queues.changeVisibility(this.#completionsQueueId, handles, 0);
  }
}

/**
 * Resolves when one of the receives returned messages, when all of them have ended, after
 * `timeoutMs`, or when `signal` aborts, whichever comes first. The receives go on.
 */
function firstNonEmpty(receives: readonly Promise<number>[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    let left = receives.length;
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, timeoutMs));
    signal?.addEventListener('abort', done, { once: true });
    if (left === 0) return done();
    for (const receive of receives) {
      receive.then((count) => {
        left--;
        if (count > 0 || left === 0) done();
      });
    }
  });
}

/** The batch member's end a completion message reports (it carries `batchId` and `batchIndex`). */
const batchEndOf = (body: CompletionMessage): BatchMemberEnd => ({
  batchId: body.batchId!,
  batchIndex: body.batchIndex!,
  state: body.state,
});
