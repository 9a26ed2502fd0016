/**
 * In-memory fakes of the scheduler's ports (runtime/scheduler/ports.ts), for tests of its logic
 * that need no emulator: the task table as a map with the conditional write's preconditions
 * (no index lag), the control table's registry, settings and flow records, and queues with
 * receipt handles and visibility (no delay, no long poll: a receive answers at once).
 */
import type {
  IntakeRegistration,
  Lease,
  SlicesWrite,
  StoredTaskType,
  StoredTenant,
  SweepMarks,
} from '../../runtime/adapters/control-store.ts';
import type { KeyAcquisition, StaleHolders } from '../../runtime/adapters/flow-store.ts';
import {
  type BatchEntryFailure,
  type ReceivedMessage,
  tierMessageOf,
  type WorkerMessage,
} from '../../runtime/adapters/queues.ts';
import type { DuePage, LeasedTaskRef, QueuedTaskRef } from '../../runtime/adapters/task-store.ts';
import type { CapacitySlices } from '../../runtime/core/capacity-slices.ts';
import { ConcurrentUpdateError, SchedulerFencedError, TaskNotFoundError } from '../../runtime/core/errors.ts';
import type { TransitionPlan } from '../../runtime/core/lifecycle.ts';
import type { RotationState } from '../../runtime/core/policy/index.ts';
import { type Grant, grantStarts } from '../../runtime/core/policy/rate.ts';
import { shardOfTenant } from '../../runtime/core/shards.ts';
import { ACTIVE_STATES, type PriorityTier, type Runtime, type Task } from '../../runtime/core/task.ts';
import type { StartRate } from '../../runtime/core/tenant-settings.ts';
import { tierQueue } from '../../runtime/infra/resources.ts';
import type {
  Announcer,
  FlowControl,
  MessageQueues,
  QueueCount,
  SchedulerControl,
  TaskRepository,
} from '../../runtime/scheduler/ports.ts';

const byDue = (a: Task, b: Task) => a.runAt.localeCompare(b.runAt) || a.taskId.localeCompare(b.taskId);

const queuedRef = (task: Task): QueuedTaskRef => ({
  taskId: task.taskId,
  tenantId: task.tenantId,
  priority: task.priority,
  runtime: task.runtime,
  resources: task.resources,
  agingFrom: task.agingFrom,
  runAt: task.runAt,
  fence: task.fence,
});

/** The task table: consistent, every write conditional on its plan's precondition. */
export class InMemoryTasks implements TaskRepository {
  readonly items = new Map<string, Task>();
  /** Called before each write is checked (a test changes an item "concurrently" here). */
  beforeApply: ((plan: TransitionPlan) => void) | undefined;

  put(...tasks: Task[]): void {
    for (const task of tasks) this.items.set(task.taskId, structuredClone(task));
  }

  async getMany(taskIds: readonly string[]): Promise<Map<string, Task>> {
    const found = new Map<string, Task>();
    for (const taskId of taskIds) {
      const task = this.items.get(taskId);
      if (task) found.set(taskId, structuredClone(task));
    }
    return found;
  }

  async apply(plan: TransitionPlan): Promise<Task> {
    this.beforeApply?.(plan);
    const { precondition, next } = plan;
    const current = this.items.get(next.taskId);
    const epoch = precondition.schedulerEpoch;
    if (epoch !== undefined && (current?.schedulerEpoch ?? 0) > epoch) {
      throw new SchedulerFencedError(next.taskId, epoch, current!.schedulerEpoch!);
    }
    const holds =
      current !== undefined &&
      precondition.states.includes(current.state) &&
      (precondition.version === undefined || current.version === precondition.version) &&
      (precondition.fence === undefined || current.fence === precondition.fence);
    if (!holds) throw new ConcurrentUpdateError(next.taskId, precondition, current && structuredClone(current));
    this.items.set(next.taskId, structuredClone(next));
    return structuredClone(next);
  }

  /** Read, decide, write once: nothing here writes between the read and the write unless a test does. */
  async transition(
    taskId: string,
    decide: (current: Task) => TransitionPlan | undefined,
    options: { known?: Task } = {},
  ): Promise<Task> {
    const current = options.known ?? (await this.getMany([taskId])).get(taskId);
    if (!current) throw new TaskNotFoundError(taskId);
    const plan = decide(current);
    return plan ? this.apply(plan) : current;
  }

  #queued(tenantId: string, tier: PriorityTier): Task[] {
    return [...this.items.values()]
      .filter((task) => task.state === 'QUEUED' && task.tenantId === tenantId && task.priority === tier)
      .sort(byDue);
  }

  async listDue(tenantId: string, tier: PriorityTier, nowMs: number, limit: number): Promise<DuePage> {
    const due = this.#queued(tenantId, tier).filter((task) => Date.parse(task.runAt) <= nowMs);
    return { refs: due.slice(0, limit).map(queuedRef), hasMore: due.length > limit };
  }

  async firstQueued(tenantId: string, tier: PriorityTier): Promise<QueuedTaskRef | undefined> {
    const [first] = this.#queued(tenantId, tier);
    return first && queuedRef(first);
  }

  async countQueued(tenantId: string, tier: PriorityTier, atMost: number): Promise<number> {
    return Math.min(atMost, this.#queued(tenantId, tier).length);
  }

  async anyLeased(): Promise<boolean> {
    return [...this.items.values()].some((task) => ACTIVE_STATES.includes(task.state));
  }

  async *listLeased(options: { tenantId?: string } = {}): AsyncGenerator<LeasedTaskRef> {
    for (const task of this.items.values()) {
      if (!ACTIVE_STATES.includes(task.state)) continue;
      if (options.tenantId !== undefined && task.tenantId !== options.tenantId) continue;
      yield { ...queuedRef(task), submittedAt: task.submittedAt, leasedAt: task.dispatchedAt ?? task.submittedAt };
    }
  }

  async scanQueued(limit: number): Promise<{ refs: QueuedTaskRef[] }> {
    const queued = [...this.items.values()].filter((task) => task.state === 'QUEUED').sort(byDue);
    return { refs: queued.slice(0, limit).map(queuedRef) };
  }
}

/** Start-rate buckets and concurrency keys' holders. */
export class InMemoryFlow implements FlowControl {
  readonly #tats = new Map<string, number>();
  readonly holders = new Map<string, Map<string, { fence: number; sinceMs: number }>>();

  async grant(tenantId: string, rate: StartRate, nowMs: number, want: number): Promise<Grant> {
    const grant = grantStarts(rate, this.#tats.get(tenantId), nowMs * 1000, want);
    if (grant.granted > 0) this.#tats.set(tenantId, grant.tatUs);
    return grant;
  }

  async acquireKey(
    tenantId: string,
    key: string,
    limit: number,
    taskId: string,
    fence: number,
    nowMs: number,
    stale: StaleHolders,
  ): Promise<KeyAcquisition> {
    const holders = this.#key(tenantId, key);
    if (!holders.has(taskId) && holders.size >= limit) {
      for (const gone of await stale(Object.fromEntries(holders), nowMs)) holders.delete(gone);
    }
    if (!holders.has(taskId) && holders.size >= limit) return { acquired: false, holders: holders.size };
    holders.set(taskId, { fence, sinceMs: nowMs });
    return { acquired: true, holders: holders.size };
  }

  async releaseKey(tenantId: string, key: string, taskId: string, fence: number): Promise<void> {
    const holders = this.#key(tenantId, key);
    if (holders.get(taskId)?.fence === fence) holders.delete(taskId);
  }

  #key(tenantId: string, key: string): Map<string, { fence: number; sinceMs: number }> {
    const id = JSON.stringify([tenantId, key]);
    const holders = this.holders.get(id) ?? new Map();
    this.holders.set(id, holders);
    return holders;
  }
}

/** The control table as the scheduler uses it: registry, settings, kept state, flow records. */
export class InMemoryControl implements SchedulerControl {
  readonly flow = new InMemoryFlow();
  readonly registry = new Map<string, IntakeRegistration>();
  tenants: StoredTenant[] = [];
  taskTypes: StoredTaskType[] = [];
  version = 'v1';
  /** Reads of every stored setting (on DynamoDB a scan of the whole control table). */
  settingsScans = 0;
  /** Reads of the settings version (one small item). */
  versionReads = 0;
  snapshot: unknown;
  rotation: RotationState | undefined;
  marks: SweepMarks = {};
  /** The sharded schedulers' capacity slices (one record). */
  slices: CapacitySlices | undefined;
  #tokens = 0;

  async registerIntake(tenantId: string, tier: PriorityTier, _now: Date, scanUntilMs = 0) {
    const previous = this.registry.get(`${tier}#${tenantId}`);
    const registration = {
      tenantId,
      tier,
      token: `token-${++this.#tokens}`,
      scanUntilMs: Math.max(scanUntilMs, previous?.scanUntilMs ?? 0),
    };
    this.registry.set(`${tier}#${tenantId}`, registration);
    return registration;
  }

  async promiseIntake(registration: IntakeRegistration) {
    const key = `${registration.tier}#${registration.tenantId}`;
    if (this.registry.get(key)?.token !== registration.token) return undefined;
    this.registry.set(key, registration);
    return registration;
  }

  async getIntake(tenantId: string, tier: PriorityTier) {
    return this.registry.get(`${tier}#${tenantId}`);
  }

  async deregisterIntake(
    registration: Pick<IntakeRegistration, 'tenantId' | 'tier' | 'token'>,
    promiseEndedBeforeMs: number,
  ): Promise<boolean> {
    const key = `${registration.tier}#${registration.tenantId}`;
    const stored = this.registry.get(key);
    if (stored?.token !== registration.token || stored.scanUntilMs > promiseEndedBeforeMs) return false;
    return this.registry.delete(key);
  }

  async listIntake() {
    return [...this.registry.values()];
  }

  /** Leases by name, with ControlStore's rules: free, expired or ours; a new holder gets a larger token. */
  readonly leases = new Map<string, Lease & { readonly releasedAtMs?: number }>();

  async acquireLease(name: string, owner: string, nowMs: number, ttlMs: number): Promise<Lease | undefined> {
    const current = this.leases.get(name);
    const ours = current?.owner === owner && current.expiresAt > nowMs;
    if (current && !ours && current.expiresAt >= nowMs) return undefined;
    const lease: Lease = {
      name,
      owner,
      token: current ? (ours ? current.token : current.token + 1) : 1,
      expiresAt: nowMs + ttlMs,
    };
    this.leases.set(name, lease);
    if (!current || ours) return lease;
    return { ...lease, predecessorUntilMs: current.releasedAtMs ?? current.expiresAt };
  }

  async releaseLease(lease: Lease, nowMs = Date.now()): Promise<void> {
    const current = this.leases.get(lease.name);
    if (current?.token !== lease.token || current.owner !== lease.owner) return;
    this.leases.set(lease.name, { ...current, expiresAt: 0, releasedAtMs: nowMs });
  }

  async getLease(name: string) {
    return this.leases.get(name);
  }

  async listSettings() {
    this.settingsScans++;
    return { tenants: this.tenants, taskTypes: this.taskTypes };
  }

  async tenantsVersion() {
    this.versionReads++;
    return this.version;
  }

  async getSnapshot<T>(): Promise<T | undefined> {
    return this.snapshot as T | undefined;
  }

  async putSnapshot(snapshot: unknown) {
    this.snapshot = snapshot;
  }

  async getRotation() {
    return this.rotation;
  }

  async putRotation(state: RotationState) {
    this.rotation = state;
    return undefined;
  }

  async getSweepMarks() {
    return this.marks;
  }

  async putSweepMarks(marks: SweepMarks) {
    this.marks = marks;
  }

  async getCapacitySlices(): Promise<CapacitySlices | undefined> {
    return this.slices && structuredClone(this.slices);
  }

  /** Conditional on the version, as the item's PutItem is. */
  async putCapacitySlices(state: CapacitySlices, expectedVersion: number): Promise<SlicesWrite> {
    if ((this.slices?.version ?? 0) !== expectedVersion)
      return { written: false, current: structuredClone(this.slices) };
    this.slices = structuredClone(state);
    return { written: true };
  }
}

interface StoredMessage {
  readonly body: unknown;
  readonly messageId: string;
  receiptHandle: string;
  visible: boolean;
  receiveCount: number;
}

/** Queues by id: a receive hides what it returns until deleted or made visible again. */
export class InMemoryQueues implements MessageQueues, Announcer {
  readonly #queues = new Map<string, StoredMessage[]>();
  /** Worker messages, by runtime, in the order sent. */
  readonly sentToWorkers: { runtime: Runtime; message: WorkerMessage }[] = [];
  #ids = 0;
  readonly #shards: number;

  /** `shards`: announcements go to the tier queue of the task's tenant's shard, as QueueClient sends them. */
  constructor(options: { shards?: number } = {}) {
    this.#shards = options.shards ?? 1;
  }

  send(queueId: string, body: unknown): void {
    this.#queue(queueId).push({
      body,
      messageId: `m-${++this.#ids}`,
      receiptHandle: '',
      visible: true,
      receiveCount: 0,
    });
  }

  async announce(tasks: readonly Task[]): Promise<void> {
    for (const task of tasks) {
      const body = tierMessageOf(task);
      this.send(tierQueue(task.priority, shardOfTenant(task.tenantId, this.#shards)).id, body);
    }
  }

  async receive<T>(queueId: string, options: { max?: number } = {}): Promise<ReceivedMessage<T>[]> {
    const visible = this.#queue(queueId)
      .filter((message) => message.visible)
      .slice(0, Math.min(10, options.max ?? 10));
    return visible.map((message) => {
      message.visible = false;
      message.receiveCount++;
      message.receiptHandle = `${message.messageId}#${message.receiveCount}`;
      return {
        body: structuredClone(message.body) as T,
        receiptHandle: message.receiptHandle,
        messageId: message.messageId,
        receiveCount: message.receiveCount,
        firstReceivedAtMs: 0,
      };
    });
  }

  async delete(queueId: string, receiptHandles: readonly string[]): Promise<BatchEntryFailure[]> {
    const queue = this.#queue(queueId);
    this.#queues.set(
      queueId,
      queue.filter((message) => !receiptHandles.includes(message.receiptHandle)),
    );
    return [];
  }

  async changeVisibility(queueId: string, receiptHandles: readonly string[], seconds: number) {
    for (const message of this.#queue(queueId)) {
      if (seconds === 0 && receiptHandles.includes(message.receiptHandle)) message.visible = true;
    }
    return [];
  }

  async sendToWorkers(runtime: Runtime, messages: readonly WorkerMessage[]): Promise<void> {
    for (const message of messages) this.sentToWorkers.push({ runtime, message: structuredClone(message) });
  }

  async sendBatch(queueId: string, entries: readonly { readonly MessageBody: string }[]): Promise<void> {
    for (const entry of entries) this.send(queueId, JSON.parse(entry.MessageBody));
  }

  async attributes(queueId: string, _names: readonly QueueCount[]): Promise<Partial<Record<string, string>>> {
    const queue = this.#queue(queueId);
    return {
      ApproximateNumberOfMessages: String(queue.filter((message) => message.visible).length),
      ApproximateNumberOfMessagesDelayed: '0',
      ApproximateNumberOfMessagesNotVisible: String(queue.filter((message) => !message.visible).length),
    };
  }

  /** Messages waiting in a queue (visible or not). */
  depth(queueId: string): number {
    return this.#queue(queueId).length;
  }

  #queue(queueId: string): StoredMessage[] {
    const queue = this.#queues.get(queueId) ?? [];
    this.#queues.set(queueId, queue);
    return queue;
  }
}
