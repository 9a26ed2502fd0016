/**
 * The task types this deployment runs. Add your own here (see docs/task-types.md).
 */
import { TaskTypeRegistry } from './define.ts';
import { DEMO_TASK_TYPES } from './demo.ts';
import { EXAMPLE_TASK_TYPES } from './examples/index.ts';

export function defaultRegistry(): TaskTypeRegistry {
  return new TaskTypeRegistry([...DEMO_TASK_TYPES, ...EXAMPLE_TASK_TYPES]);
}
