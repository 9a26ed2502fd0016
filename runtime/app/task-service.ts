/**
 * The application layer behind the HTTP API, the scheduled-submit handler and the CLI: it
 * validates against the task-type registry, applies defaults, and calls the core through the
 * stores and queues. Handlers stay thin: parse, call this, map errors to responses.
 */
import { createHash, randomUUID } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import type { ControlStore, StoredTaskType, StoredTenant } from '../adapters/control-store.ts';
import type { QueueClient } from '../adapters/queues.ts';
import type { ListTasksQuery, TaskPage, TaskStore } from '../adapters/task-store.ts';
import type { SchedulerConfig } from '../core/config.ts';
import { holdOnDependencies, isHeld } from '../core/dependencies.ts';
import { IdempotencyConflictError, UnknownTaskTypeError, ValidationError } from '../core/errors.ts';
import { cancel, createTask, retry } from '../core/lifecycle.ts';
import { concurrencyKey, type Hold, startRate, tenantPause, typePause } from '../core/policy/constraints.ts';
import { ownEntry } from '../core/records.ts';
import type { SchedulerSnapshot } from '../core/scheduler-snapshot.ts';
import { shardOfTenant } from '../core/shards.ts';
import { MAX_PAYLOAD_BYTES, storableProblem } from '../core/storable.ts';
import {
  chooseRuntime,
  fitsLambdaWorker,
  LAMBDA_LIMITS,
  LAMBDA_MIB_PER_VCPU,
  type NewTaskSpec,
  type PriorityTier,
  type Runtime,
  type Task,
  type TenantSettings,
} from '../core/task.ts';
import { type PauseRecord, pickPause, pickTenantSettings, startRateOf } from '../core/tenant-settings.ts';
import { LAMBDA_WORKER } from '../infra/resources.ts';
import type { TaskTypeRegistry } from '../task-types/define.ts';
import { startTaskSpan } from '../telemetry/tracing.ts';
import { checkDependencies } from './dependencies.ts';
import { IntakePromises } from './intake-promises.ts';
import { readSnapshots } from './shard-snapshots.ts';
import { explainWait, needsRunningTasks, type WaitInfo } from './wait.ts';

/**
 * A submit request after schema validation (the API's zod schema produces exactly this: a field
 * left out of the body may come out as `undefined`, which means "take the default").
 */
export interface SubmitInput {
  readonly tenantId: string;
  readonly type: string;
  readonly payload?: unknown;
  readonly priority?: PriorityTier | undefined;
  readonly idempotencyKey?: string | undefined;
  readonly resources?: { readonly vcpu?: number | undefined; readonly memoryMiB?: number | undefined } | undefined;
  readonly runtime?: Runtime | undefined;
  readonly timeoutSeconds?: number | undefined;
  readonly maxAttempts?: number | undefined;
  readonly delaySeconds?: number | undefined;
  /** ISO 8601 instant. */
  readonly runAt?: string | undefined;
  readonly concurrencyKey?: string | undefined;
  readonly concurrencyLimit?: number | undefined;
  /** Task ids of the same tenant that must all SUCCEED first (app/dependencies.ts). */
  readonly dependsOn?: readonly string[] | undefined;
}

export interface SubmitOptions {
  /**
   * The caller's W3C `traceparent` (the request's header): the task's spans continue its trace.
   * An invalid one is ignored, as the W3C trace context specification asks. The batch submit
   * passes each item the request's, the same way (runtime/api/trace-context.ts).
   */
  readonly traceparent?: string | undefined;
}

export interface SubmitResult {
  /** False when an earlier request with the same tenant + idempotency key created the task. */
  readonly created: boolean;
  readonly task: Task;
}

export type TenantView = TenantSettings &
  PauseRecord & {
    readonly tenantId: string;
    /** Where the settings come from: stored through the API, the config file, or the defaults. */
    readonly source: 'stored' | 'config' | 'default';
    readonly counts: {
      /** Counted up to QUEUED_COUNT_CAP: beyond it, the cap, and `queuedExact` false. */
      readonly queued: number;
      readonly queuedExact: boolean;
      readonly dispatched: number;
      readonly running: number;
    };
    /** From the scheduler's latest snapshot, when it has one for this tenant. */
    readonly share?: SchedulerSnapshot['tenants'][string] | undefined;
  };

export interface TaskServiceDeps {
  readonly store: TaskStore;
  readonly control: ControlStore;
  readonly queues: QueueClient;
  readonly registry: TaskTypeRegistry;
  readonly config: SchedulerConfig;
  readonly now?: () => Date;
  /** Told of every state change this service makes (the local runtime logs them). */
  readonly onChange?: ((task: Task) => void) | undefined;
  /** @default QUEUED_COUNT_CAP */
  readonly queuedCountCap?: number | undefined;
}

/**
 * A tenant's queued tasks are counted up to this many (`GET /v1/tenants/{id}`): a count reads
 * every index entry it counts, so a million-task backlog would cost ~25,000 read units and
 * seconds of sequential pages per request; 10,000 is at most a few pages.
 */
export const QUEUED_COUNT_CAP = 10_000;

/** Furthest a task may be scheduled ahead (a year): a later date is almost surely a mistake. */
const MAX_SCHEDULE_AHEAD_MS = 366 * 86_400_000;

export class TaskService {
  readonly #deps: TaskServiceDeps;
  readonly #now: () => Date;
  /** The intake promises this container has read (docs/intake.md §4(a)). */
  readonly #promises: IntakePromises;

  constructor(deps: TaskServiceDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => new Date());
    this.#promises = new IntakePromises(deps.control);
  }

  get registry(): TaskTypeRegistry {
    return this.#deps.registry;
  }

  /**
   * Accept a task: validate, write it (conditional put), announce it on its tier queue unless
   * its tenant-tier's intake promise covers it (the scheduler then reads it from the index).
   * With an idempotency key the task id is derived from tenant + key, so a repeat creates
   * nothing and returns the original; a repeat with a different body is refused (409).
   * If announcing fails after the write, reconciliation finds the QUEUED task and announces it.
   */
  async submit(input: SubmitInput, options: SubmitOptions = {}): Promise<SubmitResult> {
    const now = this.#now();
    const spec = this.resolveSpec(input, now);
    const requestHash = hashRequest(effectiveRequest(input, spec));
    const taskId = input.idempotencyKey ? idempotentTaskId(input.tenantId, input.idempotencyKey) : newTaskId();
    // The caller's trace goes on in a submit span; the task keeps its traceparent (not part of
    // the request's hash: a replay from another trace is the same request).
    const span = await startTaskSpan(
      'task.submit',
      options.traceparent,
      { 'task.id': taskId, 'task.tenant': input.tenantId, 'task.type': input.type },
      { kind: SpanKind.SERVER },
    );
    const traced = span.traceparent ? { ...spec, traceparent: span.traceparent } : spec;
    let created: boolean;
    let task: Task;
    try {
      // Held on its dependencies not yet SUCCEEDED (each must exist: checked before any write).
      const dependencies = spec.dependsOn
        ? await checkDependencies(this.#deps.store, spec.tenantId, taskId, spec.dependsOn)
        : undefined;
      const fresh = createTask(taskId, traced, now, requestHash);
      // (undefined for a repeat: the create finds the task and answers with it.)
      const newTask = dependencies ? holdOnDependencies(fresh, dependencies) : fresh;
      ({ created, task } = await this.#deps.store.create(newTask));
    } catch (error) {
      span.end({ error: error instanceof Error ? error.message : String(error) });
      throw error;
    }
    span.end({ attributes: { 'task.created': created } });
    // Tasks stored before the hash covered the effective request carry the hash of the input as given.
    if (!created && task.requestHash !== requestHash && task.requestHash !== hashRequest(input)) {
      throw new IdempotencyConflictError(task);
    }
    // A repeat of a request whose first attempt crashed before announcing: announce again
    // (duplicate tier messages are harmless; the scheduler dedups on taskId).
    // A held task is not announced: its release is (app/dependencies.ts).
    if ((created || task.state === 'QUEUED') && !isHeld(task) && !(await this.#promised(task))) {
      await this.#deps.queues.announce([task], now);
    }
    if (created) this.#deps.onChange?.(task);
    return { created, task };
  }

  /**
   * Announce what a batch wrote (created, or found still QUEUED on a repeat) in one call
   * (SendMessageBatch, 10 a request), leaving out what its tenant-tier's promise covers, as
   * `submit` does one at a time; tell `onChange` of the created.
   */
  async announceAccepted(accepted: readonly SubmitResult[]): Promise<void> {
    const due = await Promise.all(
      accepted.map(async ({ created, task }) =>
        // A held task is not announced: its release is (app/dependencies.ts).
        (created || task.state === 'QUEUED') && !isHeld(task) && !(await this.#promised(task)) ? [task] : [],
      ),
    );
    await this.#deps.queues.announce(due.flat(), this.#now());
    for (const { created, task } of accepted) if (created) this.#deps.onChange?.(task);
  }

  /**
   * Whether the task, already written, may go unannounced: due now, and its tenant-tier's promise
   * (read after the write, by this clock) holds beyond the margin.
   */
  async #promised(task: Task): Promise<boolean> {
    const nowMs = this.#now().getTime();
    if (Date.parse(task.runAt) > nowMs) return false;
    return this.#promises.covers(task.tenantId, task.priority, nowMs);
  }

  /** Defaults (task type, then config) and cross-field checks; throws ValidationError. */
  resolveSpec(input: SubmitInput, now: Date): NewTaskSpec {
    return resolveTaskSpec(input, now, this.#deps);
  }

  async get(taskId: string): Promise<Task | undefined> {
    return this.#deps.store.get(taskId);
  }

  /**
   * The task and, while it waits, why and for how long at most (its tenant's settings, counts and
   * the scheduler's snapshot read for that), when it exists and `visible` accepts its tenant. The
   * API's caller is asked before those reads: the work done would tell another tenant's task from
   * a missing one.
   */
  async describe(
    taskId: string,
    visible: (tenantId: string) => Promise<boolean> = async () => true,
  ): Promise<{ task: Task; wait?: WaitInfo } | undefined> {
    const task = await this.#deps.store.get(taskId);
    if (!task || !(await visible(task.tenantId))) return undefined;
    if (task.state !== 'QUEUED') return { task };
    const { store, control, config } = this.#deps;
    const [snapshot, tenant, waiting] = await Promise.all([
      // Its tenant's scheduler's view (one shard: the only one).
      control.forShard(shardOfTenant(task.tenantId, config.scheduler.shards)).getSnapshot<SchedulerSnapshot>(),
      this.tenantSettings(task.tenantId),
      // Whether it is its tenant's only waiting task (the wait bound needs it).
      store.countByTenantState(task.tenantId, 'QUEUED', 2, { firstTier: task.priority }),
    ]);
    // Its tenant's running tasks, when the snapshot predates its arrival (app/wait.ts).
    const running = needsRunningTasks(task, snapshot, config) ? await store.leasedOf(task.tenantId) : undefined;
    // The index may not show it yet: it is waiting, so at least one.
    const facts = { waiting: Math.max(1, waiting), running };
    const now = this.#now();
    // Held on its dependencies, flow control is not what holds it (wait.ts names them).
    const hold = isHeld(task) ? undefined : await this.#flowHold(task, tenant, now.getTime());
    return { task, wait: explainWait(task, { config, tenant, snapshot, now, facts, hold }) };
  }

  /**
   * What flow control holds the task on now, from the durable records (constraints.ts units over
   * consistent reads): its tenant paused, its type paused, its key full, its tenant's bucket empty.
   */
  async #flowHold(task: Task, tenant: TenantSettings, nowMs: number): Promise<Hold | undefined> {
    const { control } = this.#deps;
    const paused = tenantPause.hold({ settings: tenant, active: 0 });
    if (paused) return paused;
    const rate = startRateOf(tenant);
    const [type, tatUs, holders] = await Promise.all([
      control.getTaskType(task.type),
      rate ? control.flow.bucket(task.tenantId) : undefined,
      task.concurrencyKey === undefined ? undefined : control.flow.keyHolders(task.tenantId, task.concurrencyKey),
    ]);
    return (
      typePause.hold(task, new Set(type?.paused ? [type.type] : [])) ??
      (holders
        ? concurrencyKey.hold(task, Object.keys(holders).filter((id) => id !== task.taskId).length)
        : undefined) ??
      startRate.hold({ settings: tenant, active: 0, rate, tatUs }, nowMs)
    );
  }

  /**
   * The registered task types, stored settings or not, and any other type with a stored pause (a
   * type whose module went, or a typo paused before those were refused), so it can be lifted.
   */
  async listTaskTypes(): Promise<(StoredTaskType & { counts: { parked: number } })[]> {
    const { registry } = this.#deps;
    const [all, snapshot] = await Promise.all([
      this.#deps.control.settings().then((settings) => settings.taskTypes),
      readSnapshots(this.#deps.control, this.#deps.config.scheduler.shards),
    ]);
    // An unpaused record of a type no module defines says nothing (written before such a lift forgot it).
    const stored = all.filter((type) => type.paused || registry.has(type.type));
    const known = new Set(stored.map((type) => type.type));
    const registered = this.#deps.registry
      .names()
      .filter((type) => !known.has(type))
      .map((type) => ({ type, paused: false, updatedAt: new Date(0).toISOString() }));
    return [...stored, ...registered]
      .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0))
      .map((type) => ({ ...type, counts: { parked: ownEntry(snapshot?.parkedByType, type.type) ?? 0 } }));
  }

  /**
   * Pause or resume a task type in every tenant; binds before the next dispatch (settings version).
   * A type no task module defines is refused (`unknown_task_type`: a typo would otherwise "pause"
   * nothing while the real type runs on), except to lift a pause stored for it before its module
   * went: that lift forgets the type's record, so `listTaskTypes` lists it no more. Answers with
   * its parked tasks as `listTaskTypes` counts them.
   */
  async putTaskType(
    type: string,
    settings: { paused: boolean },
    by?: string,
  ): Promise<StoredTaskType & { counts: { parked: number } }> {
    const registered = this.#deps.registry.has(type);
    if (!registered && (settings.paused || !(await this.#deps.control.getTaskType(type))))
      throw new UnknownTaskTypeError(type, this.#deps.registry.names());
    const [stored, snapshot] = await Promise.all([
      registered
        ? this.#deps.control.putTaskType(type, settings, this.#now(), by)
        : this.#deps.control
            .deleteTaskType(type)
            .then((): StoredTaskType => ({ type, paused: false, updatedAt: this.#now().toISOString() })),
      readSnapshots(this.#deps.control, this.#deps.config.scheduler.shards),
    ]);
    return { ...stored, counts: { parked: ownEntry(snapshot?.parkedByType, type) ?? 0 } };
  }

  async list(query: ListTasksQuery): Promise<TaskPage> {
    return this.#deps.store.list(query);
  }

  /** Cancel a waiting task, or ask a running one to stop. Cancelling twice is harmless. */
  async cancel(taskId: string): Promise<Task> {
    const task = await this.#deps.store.transition(taskId, (current) => cancel(current, this.#now()));
    this.#deps.onChange?.(task);
    return task;
  }

  /** Operator retry of a FAILED or CANCELLED task. */
  async retry(taskId: string): Promise<Task> {
    const now = this.#now();
    const task = await this.#deps.store.transition(taskId, (current) => retry(current, now));
    await this.#deps.queues.announce([task], now);
    this.#deps.onChange?.(task);
    return task;
  }

  /** Effective settings: stored (API) > config file entry > tenant defaults. */
  async tenantSettings(tenantId: string): Promise<TenantSettings & PauseRecord & { source: TenantView['source'] }> {
    return resolveTenantSettings(this.#deps.config, tenantId, await this.#deps.control.getTenant(tenantId));
  }

  async getTenant(tenantId: string): Promise<TenantView> {
    const { store, control } = this.#deps;
    const cap = this.#deps.queuedCountCap ?? QUEUED_COUNT_CAP;
    const [settings, queuedUpTo, leased, snapshot] = await Promise.all([
      this.tenantSettings(tenantId),
      store.countByTenantState(tenantId, 'QUEUED', cap + 1),
      // One read of the tenant's leased items for both states.
      store.countLeasedStatesOf(tenantId),
      control.forShard(shardOfTenant(tenantId, this.#deps.config.scheduler.shards)).getSnapshot<SchedulerSnapshot>(),
    ]);
    const share = ownEntry(snapshot?.tenants, tenantId);
    const counts = {
      queued: Math.min(queuedUpTo, cap),
      queuedExact: queuedUpTo <= cap,
      dispatched: leased.DISPATCHED ?? 0,
      running: leased.RUNNING ?? 0,
    };
    return { tenantId, ...settings, counts, share };
  }

  async putTenant(tenantId: string, settings: TenantSettings, by?: string): Promise<StoredTenant> {
    return this.#deps.control.putTenant(tenantId, settings, this.#now(), by);
  }

  /** Remove the tenant's stored settings: it follows the configuration file (or the defaults) again. */
  async deleteTenant(tenantId: string): Promise<TenantView> {
    await this.#deps.control.deleteTenant(tenantId);
    return this.getTenant(tenantId);
  }

  async listTenants(): Promise<readonly StoredTenant[]> {
    return (await this.#deps.control.settings()).tenants;
  }
}

/** A tenant's effective settings: stored (PUT /v1/tenants), else configured, else the defaults. */
export function resolveTenantSettings(
  config: SchedulerConfig,
  tenantId: string,
  stored: StoredTenant | undefined,
): TenantSettings & PauseRecord & { source: TenantView['source'] } {
  if (stored) {
    return { ...pickTenantSettings(stored), ...pickPause(stored), source: 'stored' };
  }
  const configured = ownEntry(config.tenants, tenantId);
  if (configured) return { ...configured, source: 'config' };
  return { ...config.tenantDefaults, source: 'default' };
}

/** Deterministic id for an idempotent submit: same tenant + key → same task. */
export function idempotentTaskId(tenantId: string, idempotencyKey: string): string {
  const digest = createHash('sha256').update(`${tenantId}\u0000${idempotencyKey}`).digest('base64url');
  return `tsk_${digest.slice(0, 26)}`;
}

export function newTaskId(): string {
  return `tsk_${randomUUID().replaceAll('-', '')}`;
}

/**
 * The request with every default applied, for the idempotency comparison: a field spelled out
 * with the value it would default to (`"priority": "normal"`) is the same request as one that
 * leaves it out. Times stay as given (a replay of `delaySeconds: 60` is the same request later),
 * with `runAt` normalised to one spelling of its instant.
 */
export function effectiveRequest(input: SubmitInput, spec: NewTaskSpec): SubmitInput {
  return {
    tenantId: spec.tenantId,
    type: spec.type,
    payload: spec.payload,
    priority: spec.priority,
    ...(spec.idempotencyKey === undefined ? {} : { idempotencyKey: spec.idempotencyKey }),
    resources: spec.resources,
    runtime: spec.runtime,
    timeoutSeconds: spec.timeoutSeconds,
    maxAttempts: spec.maxAttempts,
    ...(input.delaySeconds ? { delaySeconds: input.delaySeconds } : {}),
    ...(input.runAt === undefined ? {} : { runAt: new Date(input.runAt).toISOString() }),
    ...(spec.concurrencyKey === undefined
      ? {}
      : { concurrencyKey: spec.concurrencyKey, concurrencyLimit: spec.concurrencyLimit }),
    ...(spec.dependsOn === undefined ? {} : { dependsOn: spec.dependsOn }),
  };
}

/** Hash of a request (keys sorted), to recognise a reused key with another body. */
export function hashRequest(input: SubmitInput): string {
  return createHash('sha256').update(canonicalJson(input)).digest('base64url').slice(0, 32);
}

/** JSON with object keys sorted: one spelling per value (request hashes, batch ids). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * A submit's task spec: defaults (task type, then config) and cross-field checks, no I/O; throws
 * ValidationError. The API, batches, the schedules' checks at start and at synth use it.
 */
export function resolveTaskSpec(
  input: SubmitInput,
  now: Date,
  deps: Pick<TaskServiceDeps, 'registry' | 'config'>,
): NewTaskSpec {
  const { registry, config } = deps;
  const definition = registry.get(input.type);
  const payload = registry.parsePayload(input.type, input.payload === undefined ? {} : input.payload);
  // What is stored is the parsed payload: the type's defaults and transforms may have grown it.
  const payloadProblem = storableProblem(payload, MAX_PAYLOAD_BYTES);
  if (payloadProblem) {
    throw new ValidationError(
      'invalid_payload',
      `The payload, as task type "${input.type}"'s schema gives it (its defaults and transforms applied), ${payloadProblem}`,
      { field: 'payload' },
    );
  }
  const typeDefaults = definition.defaults ?? {};
  const taskDefaults = config.taskDefaults;
  const resources = {
    vcpu: input.resources?.vcpu ?? typeDefaults.resources?.vcpu ?? taskDefaults.vcpu,
    memoryMiB: input.resources?.memoryMiB ?? typeDefaults.resources?.memoryMiB ?? taskDefaults.memoryMiB,
  };
  const timeoutSeconds = input.timeoutSeconds ?? typeDefaults.timeoutSeconds ?? taskDefaults.timeoutSeconds;
  const runtime =
    input.runtime ??
    typeDefaults.runtime ??
    taskDefaults.runtime ??
    chooseRuntime(resources, timeoutSeconds, LAMBDA_WORKER);
  if (runtime === 'lambda' && timeoutSeconds > LAMBDA_LIMITS.maxTimeoutSeconds) {
    throw new ValidationError(
      'invalid_runtime',
      `runtime "lambda" allows at most ${LAMBDA_LIMITS.maxTimeoutSeconds} s; use "fargate" or a shorter timeoutSeconds`,
      { field: 'timeoutSeconds' },
    );
  }
  if (runtime === 'lambda' && !fitsLambdaWorker(resources, LAMBDA_WORKER)) {
    throw new ValidationError(
      'exceeds_pool',
      `The task needs ${resources.vcpu} vCPU / ${resources.memoryMiB} MiB but a Lambda worker has ${LAMBDA_WORKER.memoryMiB} MiB (${Math.floor((100 * LAMBDA_WORKER.memoryMiB) / LAMBDA_MIB_PER_VCPU) / 100} vCPU); use runtime "fargate" or ask for less`,
      { field: 'resources' },
    );
  }
  if (runtime === 'fargate') {
    const pool = config.pools.fargate;
    if (resources.vcpu > pool.vcpu || resources.memoryMiB > pool.memoryMiB) {
      throw new ValidationError(
        'exceeds_pool',
        `The task needs ${resources.vcpu} vCPU / ${resources.memoryMiB} MiB but the Fargate pool has ${pool.vcpu} vCPU / ${pool.memoryMiB} MiB`,
        { field: 'resources' },
      );
    }
  }
  // τ of the wait bound (docs/policy.md): no task may hold its pool longer than the pool's cap.
  const timeoutCap = config.pools[runtime].maxTimeoutSeconds;
  if (timeoutSeconds > timeoutCap) {
    throw new ValidationError(
      'timeout_over_cap',
      `runtime "${runtime}" allows timeoutSeconds up to ${timeoutCap} (pools.${runtime}.maxTimeoutSeconds)`,
      { field: 'timeoutSeconds', cap: timeoutCap, setting: `pools.${runtime}.maxTimeoutSeconds` },
    );
  }
  if (input.delaySeconds !== undefined && input.runAt !== undefined) {
    throw new ValidationError('invalid_schedule', 'Give delaySeconds or runAt, not both', {
      fields: ['delaySeconds', 'runAt'],
    });
  }
  let runAt: Date | undefined;
  if (input.delaySeconds !== undefined) runAt = new Date(now.getTime() + input.delaySeconds * 1000);
  if (input.runAt !== undefined) {
    runAt = new Date(input.runAt);
    if (Number.isNaN(runAt.getTime())) {
      throw new ValidationError('invalid_schedule', 'runAt is not a valid ISO 8601 instant', { field: 'runAt' });
    }
    if (runAt.getTime() - now.getTime() > MAX_SCHEDULE_AHEAD_MS) {
      throw new ValidationError('invalid_schedule', 'runAt is more than a year ahead', { field: 'runAt' });
    }
  }
  if (input.concurrencyLimit !== undefined && input.concurrencyKey === undefined) {
    throw new ValidationError('invalid_request', 'concurrencyLimit needs a concurrencyKey', {
      field: 'concurrencyLimit',
    });
  }
  return {
    tenantId: input.tenantId,
    type: input.type,
    payload,
    priority: input.priority ?? typeDefaults.priority ?? taskDefaults.priority,
    ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey }),
    ...(input.concurrencyKey === undefined
      ? {}
      : { concurrencyKey: input.concurrencyKey, concurrencyLimit: input.concurrencyLimit ?? 1 }),
    ...(input.dependsOn === undefined || input.dependsOn.length === 0 ? {} : { dependsOn: [...input.dependsOn] }),
    resources,
    runtime,
    timeoutSeconds,
    maxAttempts: input.maxAttempts ?? typeDefaults.maxAttempts ?? taskDefaults.maxAttempts,
    ...(runAt ? { runAt } : {}),
  };
}
