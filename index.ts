/**
 * The package's public surface: the client SDK for services that submit work, and the
 * task-handler API for those who write task types (with `z`, so a task module needs no zod of
 * its own and its schemas are the zod the runtime validates with).
 */
export { z } from 'zod';
export * from './client/sdk/index.ts';
export { NonRetryableError } from './runtime/core/errors.ts';
export {
  type AnyTaskTypeDefinition,
  defineTaskType,
  isTaskTypeDefinition,
  type TaskContext,
  type TaskLogger,
  type TaskServices,
  type TaskTypeDefaults,
  type TaskTypeDefinition,
} from './runtime/task-types/define.ts';
export { TaskModuleError } from './runtime/task-types/modules.ts';
