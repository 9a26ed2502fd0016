/**
 * Ports: what the scheduler uses of the outside world, each a small interface. The scheduler,
 * its intake, dispatch, reconciler and loop depend on these; the DynamoDB and SQS adapters
 * implement them (TaskStore, ControlStore, FlowStore, QueueClient satisfy them structurally:
 * the wiring that hands an adapter to the scheduler is where the compiler checks it). Tests of
 * pure scheduler logic can hand in an in-memory fake instead of faking AWS at the wire.
 *
 * The records they carry (refs, registrations, leases, messages) are the adapters' own types.
 *
 *   TaskRepository   tasks: consistent reads, conditional transitions, the queue index, the lease ledger
 *   IntakeRegistry   the durable registry of active tenant-tiers and their promises
 *   LeaseStore       the scheduler lease (one holder at a time, fenced by its token)
 *   Announcer        tier messages that announce queued work
 *   MessageQueues    receiving, deleting and handing back messages; worker messages
 *   FlowControl      start-rate buckets and concurrency keys' holders
 *   TenantSettingsSource, SchedulerState: settings the scheduler applies, state it keeps across restarts
 *   CapacitySlicesStore  the shards' shared allowances of the pools (capacity-slice.ts)
 */
import type { IntakeRegistration, Lease, SlicesWrite, StoredSettings, SweepMarks } from '../adapters/control-store.ts';
import type { KeyAcquisition, StaleHolders } from '../adapters/flow-store.ts';
import type { LeasePageStore } from '../adapters/lease-pages.ts';
import type { BatchEntryFailure, ReceivedMessage, WorkerMessage } from '../adapters/queues.ts';
import type { DuePage, LeasedTaskRef, QueuedTaskRef, QueueScanCursor } from '../adapters/task-store.ts';
import type { CapacitySlices } from '../core/capacity-slices.ts';
import type { TransitionPlan } from '../core/lifecycle.ts';
import type { RotationState } from '../core/policy/index.ts';
import type { Grant } from '../core/policy/rate.ts';
import type { PriorityTier, Runtime, Task } from '../core/task.ts';
import type { StartRate } from '../core/tenant-settings.ts';

/** Tasks as the scheduler reads and writes them. */
export interface TaskRepository {
  /** Consistent reads; a task not found is absent from the map. */
  getMany(taskIds: readonly string[]): Promise<Map<string, Task>>;
  /** One conditional write (the plan names its precondition); a refusal is a typed error. */
  apply(plan: TransitionPlan): Promise<Task>;
  /** Read, decide, write; again on a refused write while `decide` still has a plan. */
  transition(
    taskId: string,
    decide: (current: Task) => TransitionPlan | undefined,
    options?: { known?: Task; attempts?: number },
  ): Promise<Task>;
  /** A tenant-tier's queued work due by `nowMs`, oldest first (the lagging queue index). */
  listDue(tenantId: string, tier: PriorityTier, nowMs: number, limit: number): Promise<DuePage>;
  /** A tenant-tier's oldest queued task in the index, due or not. */
  firstQueued(tenantId: string, tier: PriorityTier): Promise<QueuedTaskRef | undefined>;
  /** A tenant-tier's queued tasks in the index, counted up to `atMost`. */
  countQueued(tenantId: string, tier: PriorityTier, atMost: number): Promise<number>;
  /** Whether any task holds capacity (one small read of the lease index: is there work to run). */
  anyLeased(): Promise<boolean>;
  /** Every task holding capacity (DISPATCHED or RUNNING): the lease ledger and older versions' indexes. */
  listLeased(options?: { tenantId?: string }): AsyncIterable<LeasedTaskRef>;
  /**
   * The lease ledger's pages (adapters/lease-pages.ts), where a scheduler records its attempts
   * before their dispatch writes. Absent: the store lists leased tasks itself (in-memory fakes).
   */
  readonly leasePages?: LeasePageStore | undefined;
  /** Leased tasks as older versions' indexes list them (for one release; with `leasePages`). */
  listLegacyLeased?(options?: { tenantId?: string }): AsyncIterable<LeasedTaskRef>;
  /** A page of every queued task, whatever its tenant-tier (the registry backstop). */
  scanQueued(limit: number, cursor?: QueueScanCursor): Promise<{ refs: QueuedTaskRef[]; next?: QueueScanCursor }>;
}

/** The durable registry of active tenant-tiers (docs/intake.md §4(a)). */
export interface IntakeRegistry {
  registerIntake(tenantId: string, tier: PriorityTier, now: Date, scanUntilMs?: number): Promise<IntakeRegistration>;
  /** Write or renew a backlogged tenant-tier's promise; undefined when the registration is gone. */
  promiseIntake(registration: IntakeRegistration, now: Date): Promise<IntakeRegistration | undefined>;
  getIntake(tenantId: string, tier: PriorityTier): Promise<IntakeRegistration | undefined>;
  /** Delete on the token once its promise ended before `promiseEndedBeforeMs`; false when refused. */
  deregisterIntake(
    registration: Pick<IntakeRegistration, 'tenantId' | 'tier' | 'token'>,
    promiseEndedBeforeMs: number,
  ): Promise<boolean>;
  listIntake(): Promise<IntakeRegistration[]>;
}

/** The scheduler lease: one holder at a time; its token fences every dispatch. */
export interface LeaseStore {
  /** Take (or renew, as its owner) the lease; undefined while another owner holds it. */
  acquireLease(name: string, owner: string, nowMs: number, ttlMs: number): Promise<Lease | undefined>;
  releaseLease(lease: Lease, nowMs?: number): Promise<void>;
  getLease(name: string): Promise<(Lease & { readonly releasedAtMs?: number | undefined }) | undefined>;
}

/** Tier messages announcing queued work (one per task, delayed to its runAt). */
export interface Announcer {
  announce(tasks: readonly Task[], now: Date): Promise<void>;
}

/** The queues the scheduler consumes and feeds. */
export interface MessageQueues {
  receive<T>(
    queueId: string,
    options?: { max?: number; waitSeconds?: number; visibilitySeconds?: number | undefined; abortSignal?: AbortSignal },
  ): Promise<ReceivedMessage<T>[]>;
  delete(queueId: string, receiptHandles: readonly string[]): Promise<BatchEntryFailure[]>;
  changeVisibility(queueId: string, receiptHandles: readonly string[], seconds: number): Promise<BatchEntryFailure[]>;
  sendToWorkers(runtime: Runtime, messages: readonly WorkerMessage[]): Promise<void>;
  /** Send raw messages (an announcement forwarded to its tenant's scheduler shard). */
  sendBatch(
    queueId: string,
    entries: readonly { readonly Id: string; readonly MessageBody: string; readonly MessageGroupId?: string }[],
  ): Promise<void>;
  /** A queue's approximate counts (SQS GetQueueAttributes). */
  attributes(queueId: string, names: readonly QueueCount[]): Promise<Partial<Record<string, string>>>;
}

/** The approximate counts a queue reports. */
export type QueueCount =
  | 'ApproximateNumberOfMessages'
  | 'ApproximateNumberOfMessagesDelayed'
  | 'ApproximateNumberOfMessagesNotVisible';

/** The durable flow-control records: start-rate buckets and concurrency keys' holders. */
export interface FlowControl {
  grant(tenantId: string, rate: StartRate, nowMs: number, want: number): Promise<Grant>;
  acquireKey(
    tenantId: string,
    key: string,
    limit: number,
    taskId: string,
    fence: number,
    nowMs: number,
    stale: StaleHolders,
  ): Promise<KeyAcquisition>;
  releaseKey(tenantId: string, key: string, taskId: string, fence: number): Promise<void>;
}

/** Tenant and task-type settings, as stored by the API (and the version every change bumps). */
export interface TenantSettingsSource {
  /** Every stored tenant and task type: on DynamoDB a scan of the whole control table. */
  listSettings(): Promise<StoredSettings>;
  /** The version every change of them bumps: one small item, read consistently. */
  tenantsVersion(): Promise<string | undefined>;
}

/** What a scheduler keeps across restarts: its published snapshot, the rotation's memory, sweep marks. */
export interface SchedulerState {
  getSnapshot<T>(): Promise<T | undefined>;
  putSnapshot(snapshot: unknown): Promise<void>;
  getRotation(): Promise<RotationState | undefined>;
  /** `dropped`: tenants left out to fit the store's item (the longest ago served first). */
  putRotation(state: RotationState, at: Date): Promise<{ readonly dropped: number } | undefined>;
  getSweepMarks(): Promise<SweepMarks>;
  putSweepMarks(marks: SweepMarks): Promise<void>;
}

/** The sharded schedulers' capacity slices: one record, written conditionally on its version. */
export interface CapacitySlicesStore {
  getCapacitySlices(poolSet?: string): Promise<CapacitySlices | undefined>;
  /** `written` also when this very write had been applied (an SDK retry); else the record now. */
  putCapacitySlices(state: CapacitySlices, expectedVersion: number, poolSet?: string): Promise<SlicesWrite>;
}

/** The control table as the scheduler uses it. */
export interface SchedulerControl extends IntakeRegistry, TenantSettingsSource, SchedulerState, CapacitySlicesStore {
  readonly flow: FlowControl;
}
