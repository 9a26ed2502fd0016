/**
 * The client's public types: the API's own contract (runtime/api/contract.ts, inferred from the
 * zod schemas the server validates with), so the SDK cannot drift from what the server accepts
 * and returns.
 */
import type { ListTasksQueryInput, TaskState } from '../../runtime/api/contract.ts';

export type {
  Batch,
  BatchItemResult,
  BatchPage,
  BatchSubmitResult,
  PriorityTier,
  Runtime,
  SchedulerStatus,
  StoredTenantSettings,
  SubmitBatchInput,
  SubmitTaskInput,
  Task,
  TaskDetail,
  TaskPage,
  TaskState,
  TaskTypeView,
  TaskWait,
  Tenant,
  TenantSettingsInput,
} from '../../runtime/api/contract.ts';

/** Filters of `list`: the query of GET /v1/tasks, `limit` being the page size. */
export interface ListTasksQuery {
  readonly tenantId: ListTasksQueryInput['tenantId'];
  readonly state?: TaskState | undefined;
  /** Page size, 1–100 (the server's default when absent). */
  readonly limit?: number | undefined;
  /** Start after this page (a previous page's `nextCursor`). */
  readonly cursor?: string | undefined;
}
