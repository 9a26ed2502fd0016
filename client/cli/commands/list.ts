/**
 * `tasks list`: a tenant's tasks, newest first, one page or all.
 */
import { TASK_STATES } from '../../../runtime/core/task.ts';
import type { Task, TaskState } from '../../sdk/types.ts';
import { type Command, integer, noPositionals, oneOf, required } from '../command.ts';
import { formatTaskRows } from '../format.ts';

export const listCommand: Command = {
  summary: "List a tenant's tasks, newest first",
  usage: 'tasks list --tenant T [--state S] [--limit N] [--all]',
  help: `Options:
  --tenant T   tenant (required)
  --state S    only tasks in this state: ${TASK_STATES.join(' | ')}
  --limit N    tasks per page, 1-100 (default 20)
  --all        follow every page instead of printing the first

With --json: {"items":[...],"nextCursor":"..."} (nextCursor absent on the last page; never with --all).`,
  options: {
    tenant: { type: 'string' },
    state: { type: 'string' },
    limit: { type: 'string' },
    all: { type: 'boolean' },
  },
  async run(ctx) {
    noPositionals(ctx);
    const limit = integer(ctx, 'limit', 1, 100);
    const query = {
      tenantId: required(ctx, 'tenant'),
      state: oneOf(ctx, 'state', TASK_STATES) as TaskState | undefined,
      limit,
    };
    if (ctx.values.all) {
      const items: Task[] = [];
      for await (const task of ctx.client().list(query)) items.push(task);
      ctx.print({ items }, () => formatTaskRows(items, ctx.style));
      return 0;
    }
    const page = await ctx.client().listPage(query);
    ctx.print(page, () =>
      [
        formatTaskRows(page.items, ctx.style),
        ...(page.nextCursor ? [ctx.style.dim('(more: use --all, or a larger --limit)')] : []),
      ].join('\n'),
    );
    return 0;
  },
};
