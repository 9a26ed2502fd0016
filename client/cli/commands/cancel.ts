/**
 * `tasks cancel`: cancel a waiting task, or ask a running one to stop.
 */
import { type Command, onePositional } from '../command.ts';

export const cancelCommand: Command = {
  summary: 'Cancel a waiting task, or ask a running one to stop',
  usage: 'tasks cancel TASK_ID',
  help: 'A QUEUED task becomes CANCELLED; a RUNNING one is asked to stop (its handler sees the abort signal).',
  options: {},
  async run(ctx) {
    const task = await ctx.client().cancel(onePositional(ctx, 'TASK_ID'));
    ctx.print(task, () =>
      task.state === 'CANCELLED'
        ? `Cancelled ${task.taskId}`
        : `Asked ${task.taskId} to stop (${ctx.style.state(task.state)}, cancel requested)`,
    );
    return 0;
  },
};
