/**
 * The package's public surface: the client SDK for services that submit work, and the
 * task-handler API for those who write task types.
 */
export * from './client/sdk/index.ts';
export { NonRetryableError } from './runtime/core/errors.ts';
export {
  type AnyTaskTypeDefinition,
  defineTaskType,
  type TaskContext,
  type TaskLogger,
  type TaskServices,
  type TaskTypeDefaults,
  type TaskTypeDefinition,
} from './runtime/task-types/define.ts';
