/**
 * The intake: how queued work reaches the policy engine (docs/intake.md §4(a)). Per active
 * tenant-tier a window of its oldest due work, read from the `byTenantQueue` index and refilled
 * by query as it drains; tier messages are announcements, consumed (registered, then deleted)
 * within the tick, never held or parked. The durable registry of active tenant-tiers in the
 * control table lets a restarted scheduler find every tenant-tier's work with one query each.
 *
 *   tier queues ─▶ announcements ─▶ ref into window ─▶ register tenant-tier (first time) ─▶ delete
 *   (the stages are separate calls the tick composes: receiveAnnouncements, admitAnnouncements,
 *   register, deleteAnnouncements; refill)
 *   windows below half ─▶ Query byTenantQueue ─▶ refs into windows ─▶ engine
 *   backlogged tenant-tier ─▶ promise (registry `scanUntilMs`): submits skip their announcements
 *   emptied tenant-tier ─▶ probe the index G after its last announcement and its promise ─▶ deregister
 *
 * The index lags without bound and is never trusted for state: the dispatcher re-reads every
 * picked task consistently, and the conditional write is the final guard. The bookkeeping is the
 * pure `IntakeWindows` (runtime/core/intake); this module does its I/O.
 */
import { type ReceivedMessage, type TierMessage, toMessageBody } from '../adapters/queues.ts';
import type { QueuedTaskRef } from '../adapters/task-store.ts';
import { isThrottling } from '../adapters/throttling.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { IntakeWindows, type QueuedRef, type TenantTier } from '../core/intake/index.ts';
import type { TaskLogger } from '../core/logger.ts';
import type { SchedulingPolicy } from '../core/policy/index.ts';
import { ownsTenant, type ShardScope, SINGLE_SHARD, shardOfTenant } from '../core/shards.ts';
import { PRIORITY_TIERS, type PriorityTier, type Task } from '../core/task.ts';
import { tierQueue } from '../infra/resources.ts';
import type { IntakeRegistry, MessageQueues, TaskRepository } from './ports.ts';

/**
 * Visibility of a received announcement: consumed within the tick, so this only matters when a
 * scheduler crashes between receive and delete (the message comes back after it).
 */
const ANNOUNCEMENT_VISIBILITY_SECONDS = 30;
/** How long the index is assumed to lag the table before an absence is believed (G). */
export const INDEX_LAG_MS = 15_000;
/**
 * The promise's length (H, docs/intake.md §4(a)): a backlogged tenant-tier's registry item says
 * "read until now + H", renewed once less than H/2 is left (one write per backlogged tenant-tier
 * every 30 s). H bounds how long a scheduler keeps reading an emptied partition (and keeps
 * running) after a backlog ends, H + G = 75 s; the submit side re-reads a cached promise about
 * every H/2. Five minutes would cut both by 5 and keep an idle scheduler up five minutes longer.
 */
export const PROMISE_MS = 60_000;
/** While a promise holds, an emptied window is read again this often (unannounced submits). */
const PROMISE_REREAD_MS = 1_000;
/** Receive batches (10 messages each) per tier and tick at most, while the tier keeps returning full ones. */
const RECEIVE_BATCHES = 40;
/** Receives of one tier queue in flight at once, at most. */
const RECEIVE_PARALLEL = 8;
/** Index reads issued per tick at most (a restart reads every registered tenant-tier once). */
const QUERIES_PER_TICK = 32;

export interface IntakeDeps {
  readonly store: Pick<TaskRepository, 'listDue' | 'firstQueued'>;
  readonly control: IntakeRegistry;
  readonly queues: Pick<MessageQueues, 'receive' | 'delete' | 'changeVisibility' | 'sendBatch'>;
  readonly config: SchedulerConfig;
  readonly policy: SchedulingPolicy;
  readonly now: () => Date;
  readonly logger?: TaskLogger | undefined;
  /**
   * A ref came in for a task this scheduler counts as active: its attempt is over when the
   * QUEUED item's fence is not older than the attempt's. Returns false when the ref is stale.
   */
  readonly queuedAgain: (ref: QueuedRef) => boolean;
  /** Which shard's tenants this intake serves (runtime/core/shards.ts); one shard by default. */
  readonly shard?: ShardScope | undefined;
}

/** A tier message as received, with the queue it came from. */
export interface ReceivedAnnouncement {
  readonly queueId: string;
  readonly message: ReceivedMessage<TierMessage>;
}

export class Intake {
  readonly windows: IntakeWindows;
  readonly #deps: IntakeDeps;
  /** Tier receives in flight (at most one per tier) and what they returned, not yet consumed. */
  readonly #receiving = new Map<PriorityTier, Promise<number>>();
  readonly #arrived: ReceivedAnnouncement[] = [];
  #receiveError: unknown;
  #seq = 0;
  #backlogged = false;
  #throttles = 0;
  readonly #shard: ShardScope;

  constructor(deps: IntakeDeps) {
    this.#deps = deps;
    this.#shard = deps.shard ?? SINGLE_SHARD;
    const { config, policy } = deps;
    this.windows = new IntakeWindows({
      // Twice the quota keeps a busy tenant's pipeline full; the head alone keeps it correct.
      windowSize: (tenantId) => Math.min(200, Math.max(10, 2 * policy.tenantSettings(tenantId).maxConcurrency)),
      bufferSize: config.scheduler.bufferSize,
      parked: (tenantId, tier) => policy.parkedIn(tenantId, tier),
      indexLagMs: INDEX_LAG_MS,
      promiseMs: PROMISE_MS,
      promiseGraceMs: INDEX_LAG_MS,
      promiseRereadMs: PROMISE_REREAD_MS,
    });
  }

  /** Times a tenant-tier was throttled (and backed off alone) since this intake started. */
  get throttles(): number {
    return this.#throttles;
  }

  /**
   * DynamoDB throttled a read or write of this tenant-tier: it backs off alone (IntakeWindows
   * `throttled`), its waiting refs leave the engine, and the tick goes on for every other
   * tenant-tier. Nothing else changes: the lease is kept, the work stays QUEUED in the index.
   */
  throttled(tenantId: string, tier: PriorityTier, error: unknown): void {
    const nowMs = this.#deps.now().getTime();
    for (const ref of this.windows.throttled(tenantId, tier, nowMs)) this.#deps.policy.remove(ref.taskId);
    this.#throttles++;
    this.#deps.logger?.warn('tenant-tier throttled; it backs off alone', {
      tenantId,
      tier,
      backoffUntil: new Date(this.windows.backoffUntilOf(tenantId, tier)).toISOString(),
      error: String(error),
    });
  }

  /** Refs held in windows or being dispatched. */
  get heldCount(): number {
    return this.windows.heldCount;
  }

  /**
   * Whether the last receive ended on a full batch from some tier: announcements are probably
   * still queued there, and the next tick should take them without waiting on anything else.
   */
  get backlogged(): boolean {
    return this.#backlogged;
  }

  /**
   * When some tenant-tier next needs an index read (a drained window, a promise's reread, work
   * falling due, and with `probes` a deregistration probe): at or before now when one is due now,
   * undefined when none waits for a time.
   */
  nextReadAtMs(probes: boolean): number | undefined {
    return this.windows.nextReadAtMs(this.#deps.now().getTime(), probes);
  }

  /** After taking the lease: every registered tenant-tier is read from the index (bounded per tick). */
  async restore(): Promise<void> {
    // The registry is shared by every shard: each restores the tenant-tiers of its own tenants.
    const registrations = (await this.#deps.control.listIntake()).filter((registration) =>
      ownsTenant(this.#shard, registration.tenantId),
    );
    this.windows.restore(registrations, this.#deps.now().getTime());
  }

  /**
   * Start a receive on every tier queue that has none in flight (one batch each, long-polling
   * `waitSeconds`), and return the receives this call started and every receive in flight. A
   * long poll outlives the tick that started it: what it returns waits in `arrived` for the next
   * `receiveAnnouncements()`. (Aborting it instead could strand a message SQS already handed to the aborted
   * request, hidden for its visibility.)
   */
  poll(waitSeconds: number): { started: Promise<number>[]; inFlight: Promise<number>[] } {
    const started: Promise<number>[] = [];
    for (const tier of PRIORITY_TIERS) {
      if (this.#receiving.has(tier)) continue;
      const queueId = tierQueue(tier, this.#shard.shard).id;
      const receive = this.#deps.queues
        .receive<TierMessage>(queueId, { max: 10, waitSeconds, visibilitySeconds: ANNOUNCEMENT_VISIBILITY_SECONDS })
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
    return { started, inFlight: [...this.#receiving.values()] };
  }

  /** Announcements received by the polls and not taken yet. */
  get arrived(): number {
    return this.#arrived.length;
  }

  /**
   * The announcements the polls returned and, from a tier that returned a full batch, more: a
   * burst of announcements ahead of other tenants' is taken at once. Receives of one queue go
   * out side by side (SQS serves concurrent receivers different messages), doubling while they
   * all come back full: at 2,000 announcements a second, one receive after another (10 messages
   * a call at SQS's latency) could not keep up. The tick then admits, registers and deletes them.
   */
  async receiveAnnouncements(): Promise<ReceivedAnnouncement[]> {
    if (this.#arrived.length === 0) this.#throwReceiveError();
    const received = this.#arrived.splice(0);
    let full = fullQueues(received);
    let batches = 1;
    for (
      let parallel = 2;
      batches < RECEIVE_BATCHES && full.length > 0;
      parallel = Math.min(parallel * 2, RECEIVE_PARALLEL)
    ) {
      const width = Math.min(parallel, RECEIVE_BATCHES - batches);
      batches += width;
      const rounds = await Promise.all(
        full.flatMap((queueId) =>
          Array.from({ length: width }, async () =>
            (
              await this.#deps.queues.receive<TierMessage>(queueId, {
                max: 10,
                waitSeconds: 0,
                visibilitySeconds: ANNOUNCEMENT_VISIBILITY_SECONDS,
              })
            ).map((message) => ({ queueId, message })),
          ),
        ),
      );
      const more = rounds.flat();
      received.push(...more);
      // A queue goes on only while every one of its receives came back full.
      full = full.filter((queueId) => more.filter((entry) => entry.queueId === queueId).length >= 10 * width);
    }
    this.#backlogged = full.length > 0;
    return received;
  }

  /**
   * Announced refs into their windows and the engine (no I/O). Returns the tenant-tiers that
   * must be registered before their announcements may be deleted. Messages that are not
   * announcements are left alone (to the queue's redrive policy).
   */
  admitAnnouncements(received: readonly ReceivedAnnouncement[]): TenantTier[] {
    const nowMs = this.#deps.now().getTime();
    const toRegister = new Map<string, TenantTier>();
    for (const { message } of received) {
      const body = message.body;
      if (!isAnnouncement(body)) continue;
      // Another shard's tenant (sent under another shard count): forwarded when deleting.
      if (!ownsTenant(this.#shard, body.tenantId)) continue;
      const tenantTier = { tenantId: body.tenantId, tier: body.priority };
      const ref = refOfMessage(body);
      const decision = this.windows.announced({ ...tenantTier, ...(ref ? { ref } : {}) }, nowMs);
      if (decision.register) toRegister.set(`${body.priority}#${body.tenantId}`, tenantTier);
      if (decision.admitted) this.#admit(decision.admitted);
    }
    return [...toRegister.values()];
  }

  /** Register new tenant-tiers in the durable registry, side by side; a failure leaves its announcements to come back. */
  async register(tenantTiers: readonly TenantTier[]): Promise<void> {
    const now = this.#deps.now();
    await Promise.all(
      tenantTiers.map(async ({ tenantId, tier }) => {
        try {
          const { token, scanUntilMs } = await this.#deps.control.registerIntake(
            tenantId,
            tier,
            now,
            this.windows.scanUntilOf(tenantId, tier),
          );
          this.windows.registration(tenantId, tier, token, scanUntilMs);
        } catch (error) {
          this.windows.registration(tenantId, tier, undefined);
          this.#deps.logger?.warn('could not register a tenant-tier; its announcements come back', {
            tenantId,
            tier,
            error: String(error),
          });
        }
      }),
    );
  }

  /**
   * Delete the announcements whose tenant-tier is registered (a queue's batch side by side with
   * the others): a message goes only once its tenant-tier is in the registry, so a crash in
   * between leaves the message (received again), never a QUEUED task nobody will read.
   */
  async deleteAnnouncements(received: readonly ReceivedAnnouncement[]): Promise<void> {
    const announcements = received.filter(({ message }) => isAnnouncement(message.body));
    const foreign = announcements.filter(({ message }) => !ownsTenant(this.#shard, message.body.tenantId));
    const deletable = announcements.filter(
      ({ message }) =>
        ownsTenant(this.#shard, message.body.tenantId) &&
        this.windows.isRegistered(message.body.tenantId, message.body.priority),
    );
    // Sent under another shard count (a deploy changing `scheduler.shards`): to its owner's queue.
    if (foreign.length > 0) deletable.push(...(await this.#forward(foreign)));
    const byQueue = Map.groupBy(deletable, ({ queueId }) => queueId);
    await Promise.all(
      [...byQueue].map(([queueId, entries]) =>
        this.#deps.queues.delete(
          queueId,
          entries.map(({ message }) => message.receiptHandle),
        ),
      ),
    );
  }

  /**
   * Send announcements of tenants another shard owns to that shard's tier queue; returns those
   * sent (to delete here). One that could not be sent stays, and comes back after its visibility.
   */
  async #forward(entries: readonly ReceivedAnnouncement[]): Promise<ReceivedAnnouncement[]> {
    const byOwner = Map.groupBy(
      entries,
      ({ message }) => tierQueue(message.body.priority, shardOfTenant(message.body.tenantId, this.#shard.shards)).id,
    );
    const sent = await Promise.all(
      [...byOwner].map(async ([ownerQueueId, batch]) => {
        try {
          await this.#deps.queues.sendBatch(
            ownerQueueId,
            batch.map(({ message }, i) => ({
              Id: String(i),
              MessageBody: toMessageBody(message.body),
              MessageGroupId: message.body.tenantId,
            })),
          );
          return batch;
        } catch (error) {
          this.#deps.logger?.warn('could not forward announcements to their shard', {
            queueId: ownerQueueId,
            error: String(error),
          });
          return [];
        }
      }),
    );
    return sent.flat();
  }

  /** Until when the promises this scheduler knows of oblige it to keep reading (and running). */
  get readsPromisedUntilMs(): number {
    return this.windows.readsPromisedUntilMs();
  }

  /**
   * Refill drained windows from the index, probe emptied tenant-tiers, and make or renew the
   * promises of backlogged ones. Registry writes (deregistrations, promises) only while
   * `mayDeregister` (the lease holder, away from its lease's end: a successor must not lose a
   * registration it restored to a predecessor's late write, nor inherit a promise it never read).
   */
  async refill(mayDeregister: boolean): Promise<number> {
    const { store, control } = this.#deps;
    const now = this.#deps.now();
    const nowMs = now.getTime();
    const refills = this.windows.refillsDue(nowMs, QUERIES_PER_TICK);
    const probes = mayDeregister ? this.windows.probesDue(nowMs, Math.max(0, QUERIES_PER_TICK - refills.length)) : [];
    const promises = mayDeregister ? this.windows.promisesDue(nowMs) : [];
    let admitted = 0;
    await Promise.all([
      ...promises.map(async (promise) => {
        let stored: Awaited<ReturnType<IntakeRegistry['promiseIntake']>>;
        try {
          stored = await control.promiseIntake(promise, now);
        } catch (error) {
          this.#deps.logger?.warn('could not write an intake promise', { ...promise, error: String(error) });
          this.windows.promised(promise.tenantId, promise.tier, undefined);
          return;
        }
        this.windows.promised(promise.tenantId, promise.tier, stored);
        if (!stored) await this.#registrationGone(promise.tenantId, promise.tier);
      }),
      ...refills.map(async ({ tenantId, tier, limit }) => {
        this.windows.querying(tenantId, tier, nowMs);
        try {
          const page = await store.listDue(tenantId, tier, nowMs, limit);
          const refs = this.windows.listed(
            { tenantId, tier },
            { refs: page.refs.map(toRef), hasMore: page.hasMore },
            nowMs,
          );
          for (const ref of refs) this.#admit(ref);
          admitted += refs.length;
        } catch (error) {
          if (isThrottling(error)) this.throttled(tenantId, tier, error);
          else {
            this.windows.queryFailed(tenantId, tier);
            this.#deps.logger?.warn('index read failed', { tenantId, tier, error: String(error) });
          }
        }
      }),
      ...probes.map(async ({ tenantId, tier }) => {
        this.windows.querying(tenantId, tier, nowMs);
        let token: string | undefined;
        try {
          const first = await store.firstQueued(tenantId, tier);
          token = this.windows.probed({ tenantId, tier }, first ? toRef(first) : undefined, nowMs);
        } catch (error) {
          if (isThrottling(error)) this.throttled(tenantId, tier, error);
          else {
            this.windows.queryFailed(tenantId, tier);
            this.#deps.logger?.warn('index probe failed', { tenantId, tier, error: String(error) });
          }
          return;
        }
        if (token === undefined) return;
        let deleted = false;
        try {
          deleted = await control.deregisterIntake({ tenantId, tier, token }, nowMs - INDEX_LAG_MS);
        } finally {
          this.windows.deregistered(tenantId, tier, deleted, this.#deps.now().getTime());
        }
        // Refused: registered again, or promised further than this scheduler knew (a predecessor's
        // late write). Take the item as it is, and read on until its promise ends.
        if (deleted) return;
        try {
          const stored = await control.getIntake(tenantId, tier);
          this.windows.promised(tenantId, tier, stored);
          if (!stored) await this.#registrationGone(tenantId, tier);
        } catch (error) {
          this.#deps.logger?.warn('could not read a registration after a refused deregistration', {
            tenantId,
            tier,
            error: String(error),
          });
        }
      }),
    ]);
    return admitted;
  }

  /**
   * The registry has no item for a tenant-tier this scheduler took as registered (its refused write
   * read back nothing): register it again when it holds work, so a successor restores it.
   */
  async #registrationGone(tenantId: string, tier: PriorityTier): Promise<void> {
    if (!this.windows.registrationGone(tenantId, tier)) return;
    this.#deps.logger?.warn('a tenant-tier lost its registration (a lost answer): registering it again', {
      tenantId,
      tier,
    });
    await this.register([{ tenantId, tier }]);
  }

  /** Into the engine. A ref for a task counted as active is taken only if that attempt is over. */
  #admit(ref: QueuedRef): void {
    if (!this.#deps.queuedAgain(ref)) {
      this.windows.dropped(ref.taskId, ref.tenantId, ref.priority);
      return;
    }
    this.#deps.policy.add({
      taskId: ref.taskId,
      tenantId: ref.tenantId,
      priority: ref.priority,
      runtime: ref.runtime,
      resources: ref.resources,
      agingFromMs: ref.agingFromMs,
      runAtMs: ref.runAtMs,
      seq: this.#seq++,
      type: ref.type,
      concurrencyKey: ref.concurrencyKey,
      concurrencyLimit: ref.concurrencyLimit,
    });
  }

  /** A picked task is waiting again (as the consistent read or the refused write showed it). */
  returned(ref: QueuedRef): void {
    if (this.windows.returned(ref, this.#deps.now().getTime())) this.#admit(ref);
  }

  /** Let go of what was received and not consumed yet (clean stop): another scheduler takes it. */
  async stop(): Promise<void> {
    await Promise.allSettled([...this.#receiving.values()]);
    const byQueue = Map.groupBy(this.#arrived.splice(0), ({ queueId }) => queueId);
    await Promise.all(
      [...byQueue].map(([queueId, entries]) =>
        this.#deps.queues.changeVisibility(
          queueId,
          entries.map(({ message }) => message.receiptHandle),
          0,
        ),
      ),
    );
  }

  #throwReceiveError(): void {
    if (this.#receiveError === undefined) return;
    const error = this.#receiveError;
    this.#receiveError = undefined;
    throw error;
  }
}

/** The engine's view of a task, from the index or from the item. */
export function toRef(source: QueuedTaskRef | Task): QueuedRef {
  return {
    taskId: source.taskId,
    tenantId: source.tenantId,
    priority: source.priority,
    runtime: source.runtime,
    resources: source.resources,
    agingFromMs: Date.parse(source.agingFrom),
    runAtMs: Date.parse(source.runAt),
    fence: source.fence,
    ...('type' in source ? flowFactsOf(source) : {}),
  };
}

/** What flow control holds a task on, from its item. */
function flowFactsOf(task: Task): Pick<QueuedRef, 'type' | 'concurrencyKey' | 'concurrencyLimit'> {
  return {
    type: task.type,
    ...(task.concurrencyKey === undefined
      ? {}
      : { concurrencyKey: task.concurrencyKey, concurrencyLimit: task.concurrencyLimit }),
  };
}

function refOfMessage(body: TierMessage): QueuedRef | undefined {
  const { runtime, resources, agingFrom, runAt, fence } = body;
  if (runtime === undefined || resources === undefined || agingFrom === undefined || runAt === undefined) return;
  if (typeof fence !== 'number') return;
  return toRef({ ...body, runtime, resources, agingFrom, runAt, fence });
}

function isAnnouncement(body: unknown): body is TierMessage {
  const candidate = body as Partial<TierMessage> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.taskId === 'string' &&
    typeof candidate.tenantId === 'string' &&
    PRIORITY_TIERS.includes(candidate.priority as PriorityTier)
  );
}

/** The queues that returned a full batch (10 messages) among `received`. */
function fullQueues(received: readonly { queueId: string }[]): string[] {
  const counts = Map.groupBy(received, ({ queueId }) => queueId);
  return [...counts].filter(([, entries]) => entries.length >= 10).map(([queueId]) => queueId);
}
