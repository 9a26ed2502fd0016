/**
 * The client's public types, inferred from the API's own zod schemas so the SDK cannot drift
 * from what the server validates and returns.
 */
import type { z } from 'zod';
import type { listTasksQuerySchema, submitTaskSchema, tenantSettingsSchema } from '../../runtime/api/schemas.ts';
import type { StatusView } from '../../runtime/api/status.ts';
import type {
  storedTenantSchema,
  taskDetailSchema,
  taskPageSchema,
  taskViewSchema,
  tenantViewSchema,
  waitSchema,
} from '../../runtime/api/views.ts';
import type { PriorityTier, Runtime, TaskState } from '../../runtime/core/task.ts';

export type { PriorityTier, Runtime, TaskState };

/** What `submit` takes: the body of POST /v1/tasks. */
export type SubmitTaskInput = z.input<typeof submitTaskSchema>;
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
/** GET /v1/status: tiers, pools, tenants and their newest tasks. */
export type SchedulerStatus = StatusView;

/** Filters of `list`: the query of GET /v1/tasks, `limit` being the page size. */
export interface ListTasksQuery {
  readonly tenantId: z.input<typeof listTasksQuerySchema>['tenantId'];
  readonly state?: TaskState;
  /** Page size, 1–100 (the server's default when absent). */
  readonly limit?: number;
  /** Start after this page (a previous page's `nextCursor`). */
  readonly cursor?: string;
}
