/**
 * The task types this deployment runs. Add your own here (see README "Writing a task type").
 */
import { TaskTypeRegistry } from './define.ts';
import { DEMO_TASK_TYPES } from './demo.ts';

export function defaultRegistry(): TaskTypeRegistry {
  return new TaskTypeRegistry([...DEMO_TASK_TYPES]);
}
