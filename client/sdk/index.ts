/**
 * The client SDK: `import { SchedulerClient } from 'serverless-task-scheduler/client'`.
 */

/**
 * For a webhook receiver (docs/events.md): the delivered body's type, and the check of its
 * `x-signature` header over the raw body, in constant time (`signatureOf` makes one, for tests).
 */
export { signatureOf, type TaskEvent, verifySignature } from '../../runtime/api/contract.ts';
export {
  SchedulerClient,
  type SchedulerClientOptions,
  type SubmitBatchOptions,
  type SubmitBatchResult,
  type SubmitManyOptions,
  type SubmitOutcome,
  type WaitForOptions,
} from './client.ts';
export {
  type ApiErrorCode,
  ConflictError,
  ForbiddenError,
  InvalidRequestError,
  type KnownApiErrorCode,
  NotFoundError,
  SchedulerApiError,
  SchedulerClientError,
  SchedulerConnectionError,
  WaitTimeoutError,
} from './errors.ts';
export type { AwsCredentials, CredentialsOption } from './signing.ts';
export type {
  Batch,
  BatchItemResult,
  BatchPage,
  BatchSubmitResult,
  ListTasksQuery,
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
} from './types.ts';
