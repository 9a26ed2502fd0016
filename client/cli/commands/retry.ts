/**
 * `tasks retry`: queue a FAILED or CANCELLED task again.
 */
import { type Command, onePositional } from '../command.ts';

export const retryCommand: Command = {
  summary: 'Queue a FAILED or CANCELLED task again',
  usage: 'tasks retry TASK_ID',
  help: 'The task gets a fresh attempt budget and is QUEUED again.',
  options: {},
  async run(ctx) {
    const task = await ctx.client().retry(onePositional(ctx, 'TASK_ID'));
    ctx.print(task, () => `Queued ${task.taskId} again (${ctx.style.state(task.state)})`);
    return 0;
  },
};
