/**
 * The HTTP API's contract: the request and response types of /v1, inferred from the zod schemas
 * the API validates with and answers from, and the constants a caller needs. The client SDK
 * (client/sdk) sees the server only through this module (.dependency-cruiser.cjs, rule
 * sdk-sees-only-the-contract), so it cannot drift from what the server accepts and returns.
 */
import type { z } from 'zod';
import type { listTasksQuerySchema, submitBatchSchema, submitTaskSchema, tenantSettingsSchema } from './schemas.ts';
import type { StatusView } from './status.ts';
import type {
  batchItemResultSchema,
  batchPageSchema,
  batchSubmitResultSchema,
  batchViewSchema,
  storedTenantSchema,
  taskDetailSchema,
  taskPageSchema,
  taskTypeViewSchema,
  taskViewSchema,
  tenantViewSchema,
  waitSchema,
} from './views.ts';

export { MAX_BATCH_TASKS } from '../core/batch.ts';
export { signatureOf, verifySignature } from '../core/events.ts';
export { type PriorityTier, type Runtime, type TaskEvent, type TaskState, TERMINAL_STATES } from '../core/task.ts';

/** What `submit` takes: the body of POST /v1/tasks. */
export type SubmitTaskInput = z.input<typeof submitTaskSchema>;
/** The body of POST /v1/tasks/batch. */
export type SubmitBatchInput = z.input<typeof submitBatchSchema>;
/** One item's result: the task (`created` false on a repeat), or why the item was refused. */
export type BatchItemResult = z.infer<typeof batchItemResultSchema>;
export type BatchSubmitResult = z.infer<typeof batchSubmitResultSchema>;
/** A batch: counts by how its members ended, and its then-task once submitted. */
export type Batch = z.infer<typeof batchViewSchema>;
export type BatchPage = z.infer<typeof batchPageSchema>;
/** A task as the API returns it. */
export type Task = z.infer<typeof taskViewSchema>;
/** A task with, while it is QUEUED, why it waits and for how long at most. */
export type TaskDetail = z.infer<typeof taskDetailSchema>;
export type TaskWait = z.infer<typeof waitSchema>;
export type TaskPage = z.infer<typeof taskPageSchema>;
/** A tenant's effective settings, live counts and fair share. */
export type Tenant = z.infer<typeof tenantViewSchema>;
export type TenantSettingsInput = z.input<typeof tenantSettingsSchema>;
export type StoredTenantSettings = z.infer<typeof storedTenantSchema>;
/** A task type as GET /v1/task-types lists it: paused or not, who paused it, its parked tasks. */
export type TaskTypeView = z.infer<typeof taskTypeViewSchema>;
/** GET /v1/status: tiers, pools, tenants and their newest tasks. */
export type SchedulerStatus = StatusView;
/** The query of GET /v1/tasks as the API reads it. */
export type ListTasksQueryInput = z.input<typeof listTasksQuerySchema>;
