/**
 * The scheduler: drains the tier queues into a bounded buffer of candidates, asks the policy
 * which to dispatch, and dispatches each with one conditional write (`QUEUED → DISPATCHED`)
 * followed by a send to its pool's worker queue and a delete from the tier queue.
 *
 * What it holds in memory is a cache: after a crash a new scheduler rebuilds the capacity in use
 * from DynamoDB (the `byActive` index), and every task it held comes back on its tier queue once
 * the message's visibility lapses. Writes are idempotent on taskId + fence, so a duplicate tier
 * message, a duplicate worker message or a replayed tick cannot dispatch a task twice.
 *
 * One tick:
 *   completions ─▶ release capacity
 *   tier queues ─▶ BatchGet tasks ─▶ hold (or drop stale / park over-limit / defer far-future)
 *   policy.next ─▶ conditional dispatch ─▶ send worker messages ─▶ delete tier messages
 *   every few seconds: renew held messages' visibility, reconcile, publish a snapshot
 */
import type { ControlStore } from '../adapters/control-store.ts';
import {
  type CompletionMessage,
  MAX_VISIBILITY_SECONDS,
  type QueueClient,
  type ReceivedMessage,
  type TierMessage,
  type WorkerMessage,
} from '../adapters/queues.ts';
import type { TaskStore } from '../adapters/task-store.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { ConcurrentUpdateError, InvalidTransitionError } from '../core/errors.ts';
import { dispatch } from '../core/lifecycle.ts';
import type { TaskLogger } from '../core/logger.ts';
import { holdSecondsOf, SchedulingPolicy } from '../core/policy/index.ts';
import type { SchedulerSnapshot } from '../core/scheduler-snapshot.ts';
import { PRIORITY_TIERS, type PriorityTier, type Task, type TenantSettings } from '../core/task.ts';
import { COMPLETIONS_QUEUE, tierQueue } from '../infra/resources.ts';
import { Reconciler } from './reconciler.ts';

interface Held {
  task: Task;
  queueId: string;
  messageId: string;
  receiptHandle: string;
  /** When the tier message becomes visible again unless renewed. */
  visibleUntilMs: number;
  /** When SQS first handed the message out: its visibility cannot reach past 12 h from then. */
  firstReceivedAtMs: number;
}

export interface SchedulerDeps {
  readonly store: TaskStore;
  readonly control: ControlStore;
  readonly queues: QueueClient;
  readonly config: SchedulerConfig;
  readonly now?: () => Date;
  readonly logger?: TaskLogger;
  readonly random?: () => number;
  /** Observer of each state change the scheduler makes (the local runtime logs them). */
  readonly onDispatch?: (task: Task) => void;
}

export interface TickResult {
  readonly received: number;
  readonly dispatched: number;
  readonly completed: number;
}

/**
 * Hold visibility of tier messages for this long, renewed when a third remains. Short, because
 * a crashed scheduler's held candidates stay invisible to its successor until it lapses; the
 * renewals cost one batch call per 10 held messages every 20 s.
 */
const HOLD_VISIBILITY_SECONDS = 30;
/**
 * A tenant's messages beyond its hold limit are parked (hidden) so other tenants' messages
 * surface. They come back in waves of one hold limit every PARK_WAVE_SECONDS: about the rate the
 * tenant can use them, so a small burst returns within seconds while a flood of 100k is spread
 * out (up to SQS's 12 h visibility cap) instead of being re-received over and over.
 */
const PARK_WAVE_SECONDS = 2;
/** Tasks due further ahead than this are not held; their message is hidden until nearer. */
const HOLD_AHEAD_MS = 60_000;
const SNAPSHOT_EVERY_MS = 2_000;
/**
 * A lease holder dispatches only while its lease, by its own clock, has more than this left: a
 * successor takes over no sooner than the lease's expiry (plus the settle time), so a dispatch
 * write issued inside the margin has the margin to land before anyone else dispatches.
 */
export const DEFAULT_DISPATCH_MARGIN_MS = 10_000;

/** The scheduler lease this scheduler dispatches under (see scheduler-loop.ts). */
export interface HeldLease {
  /** The lease token: the epoch written with, and checked by, every dispatch. */
  readonly token: number;
  /** When the lease runs out, by this host's clock. */
  readonly expiresAtMs: number;
  /** Dispatching stops this long before `expiresAtMs`. */
  readonly marginMs?: number;
}
/**
 * Every receive of a tier message counts toward its dead-letter queue's maxReceiveCount, and
 * parking, deferring and restarts receive the same message again and again. Well before the
 * limit the message is replaced by a fresh one (sent first, the old one deleted after), so a
 * waiting task never lands in the tier DLQ (which nobody consumes) without a message.
 */
const REFRESH_AT_RECEIVES = Math.floor(0.8 * (tierQueue('normal').deadLetter?.maxReceiveCount ?? 50));
/** Kept off SQS's 12-hour visibility cap, for clock skew between SQS and this host. */
const VISIBILITY_CAP_MARGIN_MS = 60_000;

/** Seconds a message first received at `firstReceivedAtMs` may still be hidden, from `nowMs`. */
function visibilityLeftSeconds(firstReceivedAtMs: number, nowMs: number): number {
  return Math.floor((firstReceivedAtMs + MAX_VISIBILITY_SECONDS * 1000 - VISIBILITY_CAP_MARGIN_MS - nowMs) / 1000);
}

export class Scheduler {
  readonly #deps: SchedulerDeps;
  readonly #now: () => Date;
  readonly #policy: SchedulingPolicy;
  readonly #held = new Map<string, Held>();
  /** Dispatched or running tasks this scheduler counts against capacity: taskId → fence. */
  readonly #active = new Map<string, { fence: number; sinceMs: number }>();
  readonly #heldPerTenant = new Map<string, number>();
  /** Per tenant: the park wave being filled (when it comes back) and how many it holds. */
  readonly #parkWaves = new Map<string, { untilMs: number; count: number }>();
  readonly #reconciler: Reconciler;
  readonly #dispatchTimes: number[] = [];
  /** Tier receives in flight (at most one per tier) and what they returned, not yet admitted. */
  readonly #receiving = new Map<PriorityTier, Promise<number>>();
  readonly #arrived: { queueId: string; message: ReceivedMessage<TierMessage> }[] = [];
  #receiveError: unknown;
  #seq = 0;
  #lastSnapshotMs = 0;
  #lastTenantRefreshMs = 0;
  #lease: HeldLease | undefined;
  /** The tenant settings version last applied (see #bindTenantSettings). */
  #tenantsVersion: string | undefined;

  constructor(deps: SchedulerDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => new Date());
    const { config } = deps;
    this.#policy = new SchedulingPolicy({
      policy: config.policy,
      agingSeconds: config.agingSeconds,
      pools: config.pools,
      tenantDefaults: config.tenantDefaults,
      tenants: config.tenants,
      maxHoldSeconds: holdSecondsOf(config),
    });
    this.#reconciler = new Reconciler({
      store: deps.store,
      control: deps.control,
      queues: deps.queues,
      config,
      now: this.#now,
      ...(deps.random ? { random: deps.random } : {}),
      ...(deps.logger ? { logger: deps.logger } : {}),
    });
  }

  /**
   * Dispatch under this lease from now on (the loop calls it on taking and on each renewal).
   * Without one (tests, tools) dispatches are neither fenced nor stopped near an expiry.
   */
  holdLease(lease: HeldLease): void {
    this.#lease = lease;
  }

  get policy(): SchedulingPolicy {
    return this.#policy;
  }

  get heldCount(): number {
    return this.#held.size;
  }

  get activeCount(): number {
    return this.#active.size;
  }

  /**
   * Rebuild the capacity in use from DynamoDB and load tenant settings. Called when the
   * scheduler takes the lease, so a restarted scheduler never exceeds a quota.
   */
  async resume(): Promise<void> {
    await this.refreshTenants();
    const nowMs = this.#now().getTime();
    for (const state of ['DISPATCHED', 'RUNNING'] as const) {
      for await (const ref of this.#deps.store.listActive(state)) {
        if (this.#active.has(ref.taskId)) continue;
        this.#active.set(ref.taskId, { fence: ref.fence, sinceMs: nowMs });
        this.#policy.markActive(ref);
      }
    }
  }

  /** Apply stored tenant settings (PUT /v1/tenants) to the policy, queued work included. */
  async refreshTenants(): Promise<void> {
    const stored = await this.#deps.control.listTenants();
    for (const tenant of stored) {
      const settings: TenantSettings = { weight: tenant.weight, maxConcurrency: tenant.maxConcurrency };
      this.#policy.setTenant(tenant.tenantId, settings);
    }
    this.#lastTenantRefreshMs = this.#now().getTime();
  }

  /**
   * One scheduling round. With `waitSeconds` > 0 it long-polls: the completions queue while it
   * holds tasks waiting for capacity, else the tier queues for `idleWaitSeconds` (default
   * `waitSeconds`); a tier poll ends as soon as a message arrives.
   */
  async tick(options: { waitSeconds?: number; idleWaitSeconds?: number } = {}): Promise<TickResult> {
    const waitSeconds = options.waitSeconds ?? 0;
    const idle = this.#held.size === 0;
    const [completed, received] = await Promise.all([
      this.#drainCompletions(idle ? 0 : waitSeconds),
      this.#fill(idle && waitSeconds > 0 ? (options.idleWaitSeconds ?? waitSeconds) : 0),
    ]);
    await this.#bindTenantSettings();
    const dispatched = await this.#dispatchReady();
    await this.#maintain();
    return { received, dispatched, completed };
  }

  /**
   * Tenant settings bind at once: before a dispatch round with candidates, one consistent read
   * of the settings version that every `PUT /v1/tenants` bumps before answering, and the tenants
   * re-read when it moved. (The 10 s refresh in #maintain stays as a fallback.)
   */
  async #bindTenantSettings(): Promise<void> {
    if (this.#held.size === 0) return;
    const version = await this.#deps.control.tenantsVersion();
    if (version === this.#tenantsVersion) return;
    await this.refreshTenants();
    this.#tenantsVersion = version;
  }

  /** Free capacity for every attempt a worker reports finished. */
  async #drainCompletions(waitSeconds: number): Promise<number> {
    let count = 0;
    for (let round = 0; round < 10; round++) {
      const messages = await this.#deps.queues.receive<CompletionMessage>(COMPLETIONS_QUEUE.id, {
        max: 10,
        waitSeconds: round === 0 ? waitSeconds : 0,
      });
      for (const { body } of messages) {
        const active = this.#active.get(body.taskId);
        // A stale report (older fence) must not free the capacity of a newer attempt.
        if (active && active.fence === body.fence) {
          this.#active.delete(body.taskId);
          this.#policy.release(body.taskId);
          count++;
        }
      }
      if (messages.length > 0) {
        await this.#deps.queues.delete(
          COMPLETIONS_QUEUE.id,
          messages.map((m) => m.receiptHandle),
        );
      }
      if (messages.length < 10) break;
    }
    return count;
  }

  /**
   * Receive from every tier queue (one batch each) while the buffer has room. A long poll of an
   * empty tier does not hold up the tick: the tick goes on as soon as any tier returns messages,
   * and the other polls keep running in the background (no new receive is issued on a tier while
   * one is in flight; what they return is admitted by a later tick). Aborting them instead could
   * strand a message SQS already handed to the aborted request, hidden for the hold visibility.
   */
  async #fill(waitSeconds: number): Promise<number> {
    if (this.#receiveError) {
      const error = this.#receiveError;
      this.#receiveError = undefined;
      throw error;
    }
    const room = this.#deps.config.scheduler.bufferSize - this.#held.size;
    const started: Promise<number>[] = [];
    if (room > 0) {
      for (const tier of PRIORITY_TIERS) {
        if (this.#receiving.has(tier)) continue;
        const queueId = tierQueue(tier).id;
        const receive = this.#deps.queues
          .receive<TierMessage>(queueId, {
            max: Math.min(10, room),
            waitSeconds,
            visibilitySeconds: HOLD_VISIBILITY_SECONDS,
          })
          .then(
            (messages) => {
              for (const message of messages) this.#arrived.push({ queueId, message });
              return messages.length;
            },
            (error: unknown) => {
              this.#receiveError = error;
              return 0;
            },
          )
          .finally(() => this.#receiving.delete(tier));
        this.#receiving.set(tier, receive);
        started.push(receive);
      }
    }
    // Idle: wait for the first tier with messages (or every poll ending). Busy: only this tick's
    // non-waiting receives; polls still running from an idle tick deliver later.
    const waitOn = waitSeconds > 0 ? [...this.#receiving.values()] : started;
    if (this.#arrived.length === 0 && waitOn.length > 0) await firstNonEmpty(waitOn);
    if (this.#receiveError && this.#arrived.length === 0) {
      const error = this.#receiveError;
      this.#receiveError = undefined;
      throw error;
    }
    const received = this.#arrived.splice(0);
    if (received.length === 0) return 0;
    await this.#admit(received);
    return received.length;
  }

  async #admit(received: { queueId: string; message: ReceivedMessage<TierMessage> }[]): Promise<void> {
    const { store, queues } = this.#deps;
    const nowMs = this.#now().getTime();
    const tasks = await store.getMany(received.map(({ message }) => message.body.taskId));
    const drop = new Map<string, string[]>();
    const defer: { queueId: string; handle: string; seconds: number }[] = [];
    const add = (bucket: Map<string, string[]>, queueId: string, handle: string) => {
      const list = bucket.get(queueId) ?? [];
      list.push(handle);
      bucket.set(queueId, list);
    };
    const refresh: { queueId: string; handle: string; task: Task }[] = [];
    for (const { queueId, message } of received) {
      const task = tasks.get(message.body.taskId);
      const held = this.#held.get(message.body.taskId);
      if (held && held.messageId === message.messageId) {
        // Our own held message came back (a renewal was late): keep holding it under its new
        // receipt handle. Deleting it as a duplicate would leave the task without a message.
        held.receiptHandle = message.receiptHandle;
        held.visibleUntilMs = nowMs + HOLD_VISIBILITY_SECONDS * 1000;
        continue;
      }
      if (held || !task || task.state !== 'QUEUED') {
        // A duplicate of a message we hold, or the task finished, was cancelled or dispatched.
        add(drop, queueId, message.receiptHandle);
        continue;
      }
      const visibilityLeft = visibilityLeftSeconds(message.firstReceivedAtMs, nowMs);
      if (message.receiveCount >= REFRESH_AT_RECEIVES || visibilityLeft < HOLD_VISIBILITY_SECONDS) {
        refresh.push({ queueId, handle: message.receiptHandle, task });
        continue;
      }
      const runAtMs = Date.parse(task.runAt);
      if (runAtMs - nowMs > HOLD_AHEAD_MS) {
        // Hide it until shortly before it is due (SQS caps visibility at 12 h from receipt).
        const seconds = Math.min(visibilityLeft, visibilityUntil(runAtMs - nowMs));
        defer.push({ queueId, handle: message.receiptHandle, seconds });
        continue;
      }
      if ((this.#heldPerTenant.get(task.tenantId) ?? 0) >= this.#perTenantHoldLimit(task.tenantId)) {
        const seconds = Math.min(visibilityLeft, this.#parkSeconds(task.tenantId, nowMs));
        defer.push({ queueId, handle: message.receiptHandle, seconds });
        continue;
      }
      this.#hold(task, queueId, message, nowMs + HOLD_VISIBILITY_SECONDS * 1000);
    }
    await this.#refresh(refresh);
    await Promise.all([
      ...[...drop].map(([queueId, handles]) => queues.delete(queueId, handles)),
      ...groupDeferrals(defer).map(({ queueId, handles, seconds }) =>
        queues.changeVisibility(queueId, handles, seconds),
      ),
    ]);
  }

  /** Replace tier messages by fresh ones: send the new, then delete the old. */
  async #refresh(stale: readonly { queueId: string; handle: string; task: Task }[]): Promise<void> {
    if (stale.length === 0) return;
    const { queues } = this.#deps;
    await queues.announce(
      stale.map(({ task }) => task),
      this.#now(),
    );
    const byQueue = new Map<string, string[]>();
    for (const { queueId, handle } of stale) addTo(byQueue, queueId, handle);
    await Promise.all([...byQueue].map(([queueId, handles]) => queues.delete(queueId, handles)));
  }

  /**
   * Under fair-share a tenant may hold at most this many candidates, so one tenant's flood
   * cannot fill the buffer and hide other tenants' messages in the queue. Twice its quota keeps
   * its own dispatch pipeline full.
   */
  #perTenantHoldLimit(tenantId: string): number {
    const buffer = this.#deps.config.scheduler.bufferSize;
    // fifo and priority know no tenants: they hold strictly by arrival, or they would not be
    // the policies they are named after.
    if (this.#deps.config.policy !== 'fair-share') return buffer;
    const { maxConcurrency } = this.#policy.tenantSettings(tenantId);
    return Math.max(10, Math.min(buffer, 2 * maxConcurrency));
  }

  #parkSeconds(tenantId: string, nowMs: number): number {
    const limit = this.#perTenantHoldLimit(tenantId);
    let wave = this.#parkWaves.get(tenantId);
    if (!wave || wave.untilMs <= nowMs) wave = { untilMs: nowMs + PARK_WAVE_SECONDS * 1000, count: 0 };
    if (wave.count >= limit) wave = { untilMs: wave.untilMs + PARK_WAVE_SECONDS * 1000, count: 0 };
    wave.count++;
    this.#parkWaves.set(tenantId, wave);
    return Math.min(43_200, Math.ceil((wave.untilMs - nowMs) / 1000));
  }

  #hold(
    task: Task,
    queueId: string,
    message: Pick<Held, 'messageId' | 'receiptHandle' | 'firstReceivedAtMs'>,
    visibleUntilMs: number,
  ): void {
    // The task is QUEUED again (lease expired, retry, lost completion): its old attempt is over.
    // Still counting it would make the policy refuse the task as already active, and the held
    // candidate would never be dispatched (nor re-announced, being held).
    if (this.#active.delete(task.taskId)) this.#policy.release(task.taskId);
    this.#held.set(task.taskId, {
      task,
      queueId,
      messageId: message.messageId,
      receiptHandle: message.receiptHandle,
      firstReceivedAtMs: message.firstReceivedAtMs,
      visibleUntilMs,
    });
    this.#heldPerTenant.set(task.tenantId, (this.#heldPerTenant.get(task.tenantId) ?? 0) + 1);
    this.#policy.add({
      taskId: task.taskId,
      tenantId: task.tenantId,
      priority: task.priority,
      runtime: task.runtime,
      resources: task.resources,
      agingFromMs: Date.parse(task.agingFrom),
      runAtMs: Date.parse(task.runAt),
      seq: this.#seq++,
    });
  }

  #unhold(taskId: string): Held | undefined {
    const held = this.#held.get(taskId);
    if (!held) return undefined;
    this.#held.delete(taskId);
    const left = (this.#heldPerTenant.get(held.task.tenantId) ?? 1) - 1;
    if (left > 0) this.#heldPerTenant.set(held.task.tenantId, left);
    else this.#heldPerTenant.delete(held.task.tenantId);
    return held;
  }

  /** Ask the policy for every task that can start now, and dispatch them together. */
  async #dispatchReady(): Promise<number> {
    const now = this.#now();
    const nowMs = now.getTime();
    const lease = this.#lease;
    if (lease && nowMs >= lease.expiresAtMs - (lease.marginMs ?? DEFAULT_DISPATCH_MARGIN_MS)) {
      // Too close to the lease's end to be sure a write lands before a successor may start.
      return 0;
    }
    const picked: Held[] = [];
    for (let candidate = this.#policy.next(nowMs); candidate; candidate = this.#policy.next(nowMs)) {
      const held = this.#unhold(candidate.taskId);
      if (!held) {
        this.#policy.release(candidate.taskId);
        continue;
      }
      picked.push(held);
    }
    if (picked.length === 0) return 0;

    const { store, queues, config } = this.#deps;
    // Every write is waited for, failed or not: one that lands after another failed must still
    // be counted and get its worker message.
    const outcomes = await Promise.allSettled(
      picked.map(async (held) =>
        store.apply(dispatch(held.task, now, config.scheduler.dispatchLeaseSeconds, lease?.token)),
      ),
    );
    const byRuntime = new Map<string, WorkerMessage[]>();
    const toDelete = new Map<string, string[]>();
    let dispatched = 0;
    let failure: unknown;
    outcomes.forEach((outcome, i) => {
      const held = picked[i]!;
      if (outcome.status === 'rejected') {
        this.#policy.release(held.task.taskId);
        const error = outcome.reason;
        if (error instanceof ConcurrentUpdateError && error.current?.state === 'QUEUED') {
          // Changed but still waiting (cancelled and retried, say): hold the fresh item under the
          // same message. Letting go would delete the task's only live announcement.
          this.#hold(error.current, held.queueId, held, held.visibleUntilMs);
        } else if (error instanceof ConcurrentUpdateError || error instanceof InvalidTransitionError) {
          // Someone else moved it (cancelled, or dispatched by another scheduler): let go.
          addTo(toDelete, held.queueId, held.receiptHandle);
        } else {
          // Not written (or not known to be): keep holding it; the tick reports the error.
          this.#hold(held.task, held.queueId, held, held.visibleUntilMs);
          failure ??= error;
        }
        return;
      }
      const task = outcome.value;
      addTo(toDelete, held.queueId, held.receiptHandle);
      this.#active.set(task.taskId, { fence: task.fence, sinceMs: nowMs });
      const messages = byRuntime.get(task.runtime) ?? [];
      messages.push({ taskId: task.taskId, fence: task.fence, tenantId: task.tenantId, type: task.type, task });
      byRuntime.set(task.runtime, messages);
      this.#dispatchTimes.push(nowMs);
      this.#deps.onDispatch?.(task);
      dispatched++;
    });
    // Send before deleting: a crash in between leaves a duplicate tier message (harmless: the
    // task is no longer QUEUED), never a dispatched task without a worker message (and even that
    // is recovered when its dispatch lease runs out).
    await Promise.all(
      [...byRuntime].map(([runtime, messages]) => queues.sendToWorkers(runtime as Task['runtime'], messages)),
    );
    await Promise.all([...toDelete].map(([queueId, handles]) => queues.delete(queueId, handles)));
    if (failure !== undefined) throw failure;
    return dispatched;
  }

  /** Periodic upkeep: visibility of held messages, reconciliation, tenant settings, snapshot. */
  async #maintain(): Promise<void> {
    const nowMs = this.#now().getTime();
    await this.#renewHeldVisibility(nowMs);
    if (nowMs - this.#lastTenantRefreshMs > 10_000) await this.refreshTenants();
    const reconciled = await this.#reconciler.maybeRun(new Set(this.#held.keys()), this.#active);
    for (const taskId of reconciled.released) {
      this.#active.delete(taskId);
      this.#policy.release(taskId);
    }
    for (const task of reconciled.adopted ?? []) {
      if (this.#active.has(task.taskId) || this.#held.has(task.taskId)) continue;
      this.#active.set(task.taskId, { fence: task.fence, sinceMs: nowMs });
      this.#policy.markActive(task);
    }
    if (nowMs - this.#lastSnapshotMs >= SNAPSHOT_EVERY_MS) {
      this.#lastSnapshotMs = nowMs;
      await this.#deps.control.putSnapshot(this.snapshot());
    }
  }

  async #renewHeldVisibility(nowMs: number): Promise<void> {
    const renewBefore = nowMs + (HOLD_VISIBILITY_SECONDS * 1000) / 3;
    const due = new Map<string, string[]>();
    const refresh: { queueId: string; handle: string; task: Task }[] = [];
    for (const held of [...this.#held.values()]) {
      if (held.visibleUntilMs > renewBefore) continue;
      if (visibilityLeftSeconds(held.firstReceivedAtMs, nowMs) < HOLD_VISIBILITY_SECONDS) {
        // Held for nearly 12 h: SQS would refuse to hide it longer. Let go, and replace the
        // message by a fresh one, which is received and held again.
        this.#unhold(held.task.taskId);
        this.#policy.remove(held.task.taskId);
        refresh.push({ queueId: held.queueId, handle: held.receiptHandle, task: held.task });
        continue;
      }
      held.visibleUntilMs = nowMs + HOLD_VISIBILITY_SECONDS * 1000;
      addTo(due, held.queueId, held.receiptHandle);
    }
    await Promise.all([
      this.#refresh(refresh),
      ...[...due].map(([queueId, handles]) =>
        this.#deps.queues.changeVisibility(queueId, handles, HOLD_VISIBILITY_SECONDS),
      ),
    ]);
  }

  /** What the API uses to explain waits and the dashboard to draw tiers, pools and tenants. */
  snapshot(): SchedulerSnapshot {
    const nowMs = this.#now().getTime();
    const policy = this.#policy.snapshot(nowMs);
    while (this.#dispatchTimes.length > 0 && this.#dispatchTimes[0]! < nowMs - 60_000) this.#dispatchTimes.shift();
    const tiers = Object.fromEntries(
      PRIORITY_TIERS.map((tier) => [tier, { waiting: 0, oldestWaitSeconds: 0 }]),
    ) as Record<PriorityTier, { waiting: number; oldestWaitSeconds: number }>;
    for (const { task } of this.#held.values()) {
      const entry = tiers[task.priority];
      entry.waiting++;
      entry.oldestWaitSeconds = Math.max(entry.oldestWaitSeconds, (nowMs - Date.parse(task.agingFrom)) / 1000);
    }
    const lambda = policy.pools.find((p) => p.runtime === 'lambda');
    const fargate = policy.pools.find((p) => p.runtime === 'fargate');
    const { pools } = this.#deps.config;
    // Bounded so the snapshot item stays far below DynamoDB's 400 KB: the busiest tenants.
    const busiest = [...policy.tenants].sort((a, b) => b.active + b.queued - (a.active + a.queued)).slice(0, 500);
    // fromEntries defines own keys, so a tenant named `__proto__` is a key, not the prototype.
    const tenants: Record<string, SchedulerSnapshot['tenants'][string]> = Object.fromEntries(
      busiest.map((tenant) => [
        tenant.tenantId,
        {
          running: tenant.active,
          queued: tenant.queued,
          weight: tenant.weight,
          maxConcurrency: tenant.maxConcurrency,
          dominantShare: round3(tenant.weightedDominantShare * tenant.weight),
          entitlement: round3(tenant.entitlement),
        },
      ]),
    );
    return {
      at: new Date(nowMs).toISOString(),
      policy: policy.policy,
      pools: {
        lambda: { used: lambda?.used.slots ?? 0, capacity: pools.lambda.concurrency },
        fargate: {
          vcpuUsed: fargate?.used.vcpu ?? 0,
          vcpu: pools.fargate.vcpu,
          memoryMiBUsed: fargate?.used.memoryMiB ?? 0,
          memoryMiB: pools.fargate.memoryMiB,
        },
      },
      tiers,
      tenants,
      dispatchRate: round3(this.#dispatchTimes.length / 60),
      queue: {
        lambda: { leader: lambda?.leader ?? null, heldForTaskId: null },
        fargate: { leader: fargate?.leader ?? null, heldForTaskId: fargate?.reservedForTaskId ?? null },
      },
    };
  }

  /** Let go of every held message at once (clean shutdown): another scheduler can take them. */
  async releaseHeld(): Promise<void> {
    // Receives still in flight would otherwise leave their messages hidden for the hold time.
    await Promise.allSettled([...this.#receiving.values()]);
    const byQueue = new Map<string, string[]>();
    for (const { queueId, message } of this.#arrived.splice(0)) {
      const list = byQueue.get(queueId) ?? [];
      list.push(message.receiptHandle);
      byQueue.set(queueId, list);
    }
    for (const held of this.#held.values()) {
      const list = byQueue.get(held.queueId) ?? [];
      list.push(held.receiptHandle);
      byQueue.set(held.queueId, list);
    }
    await Promise.all(
      [...byQueue].map(([queueId, handles]) => this.#deps.queues.changeVisibility(queueId, handles, 0)),
    );
    for (const taskId of [...this.#held.keys()]) {
      this.#unhold(taskId);
      this.#policy.remove(taskId);
    }
  }
}

function addTo(bucket: Map<string, string[]>, key: string, value: string): void {
  const list = bucket.get(key) ?? [];
  list.push(value);
  bucket.set(key, list);
}

/** Resolves when one of the receives returned messages, or when all of them have ended. */
function firstNonEmpty(receives: readonly Promise<number>[]): Promise<void> {
  return new Promise((resolve) => {
    let left = receives.length;
    for (const receive of receives) {
      receive.then((count) => {
        left--;
        if (count > 0 || left === 0) resolve();
      });
    }
  });
}

/** One ChangeMessageVisibilityBatch per queue and duration, instead of one call per message. */
function groupDeferrals(defer: readonly { queueId: string; handle: string; seconds: number }[]) {
  const groups = new Map<string, { queueId: string; handles: string[]; seconds: number }>();
  for (const { queueId, handle, seconds } of defer) {
    const key = `${queueId}\u0000${seconds}`;
    const group = groups.get(key) ?? { queueId, handles: [], seconds };
    group.handles.push(handle);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/** SQS visibility for a message due in `msAhead`: wake a little early, at most 12 h. */
function visibilityUntil(msAhead: number): number {
  return Math.max(1, Math.min(43_200, Math.floor((msAhead - HOLD_AHEAD_MS / 2) / 1000)));
}

const round3 = (value: number) => Math.round(value * 1000) / 1000;
