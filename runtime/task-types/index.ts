/**
 * The task types this deployment runs: the built-in demo and example types, and the types of
 * the user's task modules (modules.ts) beside them.
 */
import { type AnyTaskTypeDefinition, TaskTypeRegistry } from './define.ts';
import { DEMO_TASK_TYPES } from './demo.ts';
import { EXAMPLE_TASK_TYPES } from './examples/index.ts';
import { installedTaskTypes } from './installed.ts';

/** The types that ship with the scheduler; a task module may not reuse their names. */
export const BUILT_IN_TASK_TYPES: readonly AnyTaskTypeDefinition[] = [...DEMO_TASK_TYPES, ...EXAMPLE_TASK_TYPES];

export const BUILT_IN_TASK_TYPE_NAMES: readonly string[] = BUILT_IN_TASK_TYPES.map((definition) => definition.type);

/**
 * The built-in types and `extra` (the task modules' types, checked by modules.ts); by default
 * the modules a deployed bundle installed (installed.ts).
 */
export function defaultRegistry(extra: readonly AnyTaskTypeDefinition[] = installedTaskTypes()): TaskTypeRegistry {
  return new TaskTypeRegistry([...BUILT_IN_TASK_TYPES, ...extra]);
}
