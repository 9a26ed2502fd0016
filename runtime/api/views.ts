/**
 * What the API returns: the task presenter and the response schemas (used by the OpenAPI
 * document, and by the tests to check responses match what is documented).
 *
 * A task view exposes what a user needs; the bookkeeping of the store and scheduler (`version`,
 * `fence`, `requestHash`, `agingFrom`, `leaseExpiresAt`) stays internal: the `wait` explanation
 * is the user-facing form of aging and leases.
 */
import { z } from 'zod';
import type { StoredTenant } from '../adapters/control-store.ts';
import type { TenantView } from '../app/task-service.ts';
import { QUEUED_COUNT_CAP } from '../app/task-service.ts';
import { WAIT_REASONS, type WaitInfo } from '../app/wait.ts';
import { NO_BOUND_REASONS } from '../core/policy/index.ts';
import { PRIORITY_TIERS, RUNTIMES, TASK_STATES, type Task } from '../core/task.ts';
import { pickPause, pickTenantSettings, tenantSettingsSchema } from '../core/tenant-settings.ts';

const CAP_TEXT = QUEUED_COUNT_CAP.toLocaleString('en-US');

const isoTime = z.iso.datetime({ offset: true });

/** A listing ends where `nextCursor` is absent, not where a page is short (index shards merged). */
const NEXT_CURSOR_DESCRIPTION =
  'Absent on the last page, and only there: a page may hold fewer items than `limit`, or none, and still have one (pages end early where an index shard not yet read could hold the next item, or at 5 MiB)';

export const taskViewSchema = z
  .object({
    taskId: z.string(),
    tenantId: z.string(),
    type: z.string(),
    priority: z.enum(PRIORITY_TIERS),
    state: z.enum(TASK_STATES),
    attempts: z.number().int().meta({ description: 'Attempts that started running' }),
    maxAttempts: z.number().int(),
    runtime: z.enum(RUNTIMES),
    resources: z.object({ vcpu: z.number(), memoryMiB: z.number() }),
    timeoutSeconds: z.number().int(),
    payload: z.unknown(),
    idempotencyKey: z.string().optional(),
    concurrencyKey: z.string().optional(),
    concurrencyLimit: z.number().int().optional(),
    submittedAt: isoTime,
    runAt: isoTime.meta({ description: 'Earliest dispatch time (delay, runAt or retry backoff)' }),
    dispatchedAt: isoTime.nullable(),
    startedAt: isoTime.nullable(),
    finishedAt: isoTime.nullable(),
    result: z.unknown().meta({ description: 'What the handler returned; null until it succeeds' }),
    dependsOn: z.array(z.string()).optional().meta({ description: 'The tasks it starts after (as submitted)' }),
    waitingOn: z.array(z.string()).optional().meta({
      description:
        'While held (QUEUED, wait.reason "dependencies"): those of dependsOn that have not SUCCEEDED yet; the task is out of the queue until none is left',
    }),
    error: z
      .object({
        name: z.string(),
        message: z.string(),
        retryable: z.boolean(),
        code: z
          .string()
          .optional()
          .meta({ description: 'Where the scheduler ended the task itself, e.g. DEPENDENCY_FAILED' }),
      })
      .nullable()
      .meta({ description: 'The last error (kept while a retry waits)' }),
    cancelRequested: z
      .literal(true)
      .optional()
      .meta({ description: 'Present once a cancel asked a running task to stop (and kept after it ended)' }),
  })
  .meta({ id: 'Task' });
export type TaskView = z.infer<typeof taskViewSchema>;

export const waitSchema = z
  .object({
    reason: z.enum(WAIT_REASONS),
    message: z.string(),
    effectiveTier: z.enum(PRIORITY_TIERS),
    waitedSeconds: z.number(),
    secondsToTopTier: z.number(),
    maxWaitSeconds: z
      .number()
      .nullable()
      .meta({ description: 'Upper bound on the remaining wait, seconds; null when none (see noBound)' }),
    assumes: z
      .string()
      .optional()
      .meta({ description: 'What maxWaitSeconds takes for granted, in words; it holds while they do' }),
    noBound: z
      .object({ code: z.enum(NO_BOUND_REASONS), message: z.string() })
      .optional()
      .meta({ description: 'Why maxWaitSeconds is null' }),
    worstCaseSeconds: z.number().optional().meta({
      description:
        "When maxWaitSeconds rests on the pool's pace (assumedFreed): the bound on timeouts alone, which holds however slowly the pool frees slots; when it rests on the pool's headroom (assumedHeadroom): the bound without that assumption",
    }),
    assumedFreed: z
      .object({
        slots: z.number().int().positive(),
        from: isoTime,
        by: isoTime,
        tenantFreeBy: isoTime
          .optional()
          .meta({ description: 'When its tenant runs tasks: they have all ended by then (as its tasks ran lately)' }),
      })
      .optional()
      .meta({
        description:
          "When maxWaitSeconds rests on the pool's pace: it assumes the pool frees at least `slots` slots between `from` and `by` (the fewest it freed in any 10 s of the last minute, kept up); checkable afterwards",
      }),
    assumedHeadroom: z
      .object({
        slots: z.number().int().positive(),
        from: isoTime,
        by: isoTime,
        peakUsed: z.number().int().nonnegative(),
      })
      .optional()
      .meta({
        description:
          "When maxWaitSeconds rests on the Lambda pool's headroom (light load): it assumes fewer than `slots` tasks dispatched or running at every instant between `from` and `by` (the pool had at most `peakUsed` in use in any 10 s of the last minute), so the scheduler's first round after the task joins starts it; checkable afterwards",
      }),
    assumedJoins: z.object({ atMost: z.number().int().nonnegative(), from: isoTime, by: isoTime }).optional().meta({
      description:
        "When the scheduler's snapshot predates the task: maxWaitSeconds assumes at most `atMost` other tenants start waiting in its pool between `from` and `by` (as many as did in the minute before the snapshot)",
    }),
    assumedBusyWeight: z.object({ atMost: z.number().positive(), from: isoTime, by: isoTime }).optional().meta({
      description:
        "When maxWaitSeconds rests on the pool's pace and its tenant is below its fair share (its weighted dominant share under 1 / the summed weight of the tenants with work): it assumes that sum stays at most `atMost` (the most in any 10 s of the last minute) between `from` and `by`, so its tenant stays below its fair share, its running tasks do not hold it up and tenants that start waiting later do not go before it; checkable afterwards",
    }),
    asOf: isoTime.optional(),
  })
  .meta({ id: 'Wait' });

export const taskDetailSchema = taskViewSchema
  .extend({
    wait: waitSchema.optional().meta({ description: 'While QUEUED: why the task waits and how long at most' }),
  })
  .meta({ id: 'TaskDetail' });

export const taskPageSchema = z
  .object({
    items: z.array(taskViewSchema),
    nextCursor: z.string().optional().meta({ description: NEXT_CURSOR_DESCRIPTION }),
  })
  .meta({ id: 'TaskPage' });

/** Who paused it and when (a tenant or a task type), while paused. */
const pauseFields = {
  pausedBy: z.string().optional().meta({ description: 'Who paused it (the IAM caller on AWS; `local` locally)' }),
  pausedAt: isoTime.optional().meta({ description: 'When it was paused' }),
};

export const tenantViewSchema = z
  .object({
    tenantId: z.string(),
    ...tenantSettingsSchema.shape,
    ...pauseFields,
    source: z.enum(['stored', 'config', 'default']),
    counts: z.object({
      queued: z
        .number()
        .int()
        .meta({ description: `Queued tasks, counted up to ${CAP_TEXT} (see queuedExact)` }),
      queuedExact: z.boolean().meta({
        description: `False when the tenant has more queued tasks than were counted: queued is then ${CAP_TEXT}`,
      }),
      dispatched: z.number().int(),
      running: z.number().int(),
    }),
    share: z
      .object({
        running: z.number(),
        queued: z.number(),
        weight: z.number(),
        maxConcurrency: z.number(),
        dominantShare: z.number(),
        entitlement: z.number(),
      })
      .optional()
      .meta({ description: "From the scheduler's latest snapshot, when it has one for this tenant" }),
  })
  .meta({ id: 'Tenant' });

export const storedTenantSchema = z
  .object({ tenantId: z.string(), ...tenantSettingsSchema.shape, ...pauseFields, updatedAt: isoTime })
  .meta({ id: 'TenantSettings' });

export const taskTypeViewSchema = z
  .object({
    type: z.string(),
    paused: z.boolean(),
    ...pauseFields,
    updatedAt: isoTime.meta({ description: 'When its settings were last stored (the epoch when never)' }),
    counts: z
      .object({
        parked: z.number().int().meta({ description: 'Its tasks the scheduler holds because it is paused' }),
      })
      .meta({ description: "From the scheduler's latest snapshot" }),
  })
  .meta({ id: 'TaskType' });

export const taskTypeListSchema = z.object({ items: z.array(taskTypeViewSchema) }).meta({ id: 'TaskTypeList' });

export const healthSchema = z.object({ status: z.literal('ok'), time: isoTime }).meta({ id: 'Health' });

/** The served OpenAPI document: its required top-level fields (the rest is free-form). */
export const openApiDocumentSchema = z
  .looseObject({
    openapi: z.string().regex(/^3\.1\.\d+$/),
    info: z.looseObject({ title: z.string(), version: z.string() }),
    paths: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'OpenApiDocument' });

export const errorResponseSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'Stable machine-readable code, e.g. "task_not_found"' }),
      message: z.string(),
      details: z.unknown().optional(),
    }),
  })
  .meta({ id: 'Error' });
export type ErrorResponse = z.infer<typeof errorResponseSchema>;

export function presentTask(task: Task): TaskView {
  return {
    taskId: task.taskId,
    tenantId: task.tenantId,
    type: task.type,
    priority: task.priority,
    state: task.state,
    attempts: task.attempts,
    maxAttempts: task.maxAttempts,
    runtime: task.runtime,
    resources: { vcpu: task.resources.vcpu, memoryMiB: task.resources.memoryMiB },
    timeoutSeconds: task.timeoutSeconds,
    payload: task.payload ?? null,
    idempotencyKey: task.idempotencyKey,
    ...(task.concurrencyKey === undefined
      ? {}
      : { concurrencyKey: task.concurrencyKey, concurrencyLimit: task.concurrencyLimit ?? 1 }),
    submittedAt: task.submittedAt,
    runAt: task.runAt,
    dispatchedAt: task.dispatchedAt ?? null,
    startedAt: task.startedAt ?? null,
    finishedAt: task.finishedAt ?? null,
    result: task.result ?? null,
    ...(task.dependsOn === undefined ? {} : { dependsOn: [...task.dependsOn] }),
    ...(task.waitingOn === undefined || task.state !== 'QUEUED' ? {} : { waitingOn: [...task.waitingOn] }),
    error: task.error
      ? {
          name: task.error.name,
          message: task.error.message,
          retryable: task.error.retryable,
          ...(task.error.code === undefined ? {} : { code: task.error.code }),
        }
      : null,
    ...(task.cancelRequested ? { cancelRequested: true as const } : {}),
  };
}

/**
 * The longest prefix of `items` whose size in a Lambda response stays within `budgetBytes`
 * (at least one item). Measured as Lambda counts it: each item's JSON, escaped again as part of
 * the body string inside the result object.
 */
export function fitToBudget<T>(items: readonly T[], budgetBytes: number): T[] {
  let used = 0;
  for (const [index, item] of items.entries()) {
    used += Buffer.byteLength(JSON.stringify(JSON.stringify(item)), 'utf8');
    if (used > budgetBytes && index > 0) return items.slice(0, index);
  }
  return [...items];
}

export function presentTaskDetail(task: Task, wait: WaitInfo | undefined) {
  return { ...presentTask(task), wait };
}

/**
 * A tenant as GET /v1/tenants/{tenantId} answers it: the snapshot's share with the fields the
 * view documents, not the scheduler's bookkeeping beside them (`hold`, `parked`, `waitingTaskId`,
 * `longestRunSeconds`).
 */
export function presentTenant(tenant: TenantView): z.infer<typeof tenantViewSchema> {
  const { share, ...rest } = tenant;
  if (!share) return rest;
  const { running, queued, weight, maxConcurrency, dominantShare, entitlement } = share;
  return { ...rest, share: { running, queued, weight, maxConcurrency, dominantShare, entitlement } };
}

export function presentStoredTenant(tenant: StoredTenant): StoredTenant {
  return {
    tenantId: tenant.tenantId,
    ...pickTenantSettings(tenant),
    ...pickPause(tenant),
    updatedAt: tenant.updatedAt,
  };
}

const batchCountsSchema = z.object({
  succeeded: z.number().int(),
  failed: z.number().int(),
  cancelled: z.number().int(),
  excluded: z.number().int().meta({ description: 'Items refused at submit, or never written' }),
  pending: z.number().int().meta({ description: 'Members that have not ended yet' }),
});

export const batchItemResultSchema = z
  .union([
    z.object({ taskId: z.string(), state: z.enum(TASK_STATES), created: z.boolean() }),
    z.object({ error: z.object({ code: z.string(), message: z.string() }) }),
  ])
  .meta({ id: 'BatchItemResult' });

export const batchSubmitResultSchema = z
  .object({
    batchId: z.string(),
    results: z.array(batchItemResultSchema).meta({ description: 'One per item, in the order given' }),
  })
  .meta({ id: 'BatchSubmitResult' });

export const batchViewSchema = z
  .object({
    batchId: z.string(),
    tenantId: z.string(),
    createdAt: isoTime,
    total: z.number().int().meta({ description: 'Items in the request (refused ones included)' }),
    counts: batchCountsSchema
      .optional()
      .meta({ description: 'By how members ended (always on GET /v1/batches/{batchId}; in listings once ended)' }),
    endedAt: isoTime.optional().meta({ description: 'When the last member was counted' }),
    thenTaskId: z.string().optional().meta({ description: 'The then-task, once submitted' }),
  })
  .meta({ id: 'Batch' });

export const batchPageSchema = z
  .object({
    items: z.array(batchViewSchema),
    nextCursor: z.string().optional().meta({ description: NEXT_CURSOR_DESCRIPTION }),
  })
  .meta({ id: 'BatchPage' });
