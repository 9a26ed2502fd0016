/**
 * `tasks watch`: live view of tiers, pools, tenants and recent tasks (drawn by ../watch.ts).
 */
import { type Command, integer, noPositionals, number, str, UsageError } from '../command.ts';
import { watch } from '../watch.ts';

export const watchCommand: Command = {
  summary: 'Live view of tiers, pools, tenants and recent tasks',
  usage: 'tasks watch [--interval S] [--tenants a,b] [--recent N] [--once]',
  help: `Redraws every second: per tier the tasks waiting and the oldest wait; pool usage; each
tenant's running tasks against its quota and its share against its entitlement (│ marks the
entitlement); the newest tasks with progress (running) or why they wait (queued). Ctrl-C quits.

Options:
  --interval S    seconds between refreshes (default 1)
  --tenants a,b   also show these tenants when they have no work
  --recent N      newest tasks per tenant, 0-20 (default 5)
  --once          print one frame and exit (with --json: one status object)

With --json: one status object per line (NDJSON) per refresh.`,
  options: {
    interval: { type: 'string' },
    tenants: { type: 'string' },
    recent: { type: 'string' },
    once: { type: 'boolean' },
  },
  async run(ctx) {
    noPositionals(ctx);
    const interval = number(ctx, 'interval') ?? 1;
    if (interval < 0.2) throw new UsageError('--interval must be at least 0.2 seconds', ctx.name);
    const recent = integer(ctx, 'recent', 0, 20);
    const tenants = str(ctx, 'tenants')
      ?.split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    const client = ctx.client();
    return watch({
      client,
      render: { style: ctx.style, endpoint: client.endpoint, columns: ctx.io.columns },
      intervalMs: interval * 1000,
      once: ctx.values.once === true,
      json: ctx.json,
      redraw: ctx.io.isTTY === true && ctx.values.once !== true,
      recent,
      tenants,
      write: ctx.io.stdout,
      signal: ctx.io.signal,
      hint: (error) => ctx.unreachableHint(error),
    });
  },
};
