/**
 * `tasks get`: a task and, while it waits, why.
 */
import { type Command, onePositional } from '../command.ts';
import { formatTask } from '../format.ts';

export const getCommand: Command = {
  summary: 'Show a task and, while it waits, why',
  usage: 'tasks get TASK_ID',
  help: 'Shows state, attempts, result or error, and for a QUEUED task the wait reason and its bound.',
  options: {},
  async run(ctx) {
    const task = await ctx.client().get(onePositional(ctx, 'TASK_ID'));
    ctx.print(task, () => formatTask(task, ctx.style));
    return 0;
  },
};
