/**
 * `tasks types list|pause|resume`: task types, paused or not, in every tenant.
 */
import { type Command, UsageError } from '../command.ts';
import { formatTaskTypes } from '../format.ts';

export const typesCommand: Command = {
  summary: 'List task types; pause or resume one in every tenant',
  usage: 'tasks types list | tasks types pause|resume TYPE',
  help: `Subcommands:
  list           every task type: paused or not, who paused it and when, its parked tasks
  pause TYPE     its queued tasks are held in every tenant once this answers (running ones go on;
                 the tenants' other work goes ahead of them)
  resume TYPE    its queued tasks are eligible at once

Pausing a type acts for every tenant: on AWS the caller needs "*" in deploy.callers.`,
  options: {},
  async run(ctx) {
    const [sub, type, ...rest] = ctx.positionals;
    if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}"`, ctx.name);
    if (sub === 'list') {
      if (type !== undefined) throw new UsageError(`Unexpected argument "${type}"`, ctx.name);
      const types = await ctx.client().listTaskTypes();
      ctx.print(types, () => formatTaskTypes(types, ctx.style));
      return 0;
    }
    if (sub !== 'pause' && sub !== 'resume') throw new UsageError('Give a subcommand: list, pause or resume', ctx.name);
    if (!type) throw new UsageError(`types ${sub} needs a task type`, ctx.name);
    const stored = await ctx.client().putTaskType(type, { paused: sub === 'pause' });
    ctx.print(stored, () => formatTaskTypes([stored], ctx.style));
    return 0;
  },
};
