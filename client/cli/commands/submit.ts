/**
 * `tasks submit`: submit a task, optionally wait for it to finish.
 */
import { PRIORITY_TIERS, type PriorityTier } from '../../../runtime/core/task.ts';
import type { SubmitTaskInput } from '../../sdk/types.ts';
import { type Command, integer, noPositionals, oneOf, payloadOf, required, str, UsageError } from '../command.ts';
import { formatTask } from '../format.ts';

export const submitCommand: Command = {
  summary: 'Submit a task (and optionally wait for it)',
  usage:
    'tasks submit --tenant T --type X [--payload JSON|@file] [--priority P] [--idempotency-key K] [--delay S] [--depends-on ID,...] [--wait]',
  help: `Options:
  --tenant T            tenant the task belongs to (required)
  --type X              task type, e.g. demo.sleep (required)
  --payload JSON|@file  payload as JSON text, or @path to read it from a file (default {})
  --priority P          ${PRIORITY_TIERS.join(' | ')} (default: the task type's, else normal)
  --idempotency-key K   submitting again with the same key returns the original task
  --delay S             do not start before S seconds from now
  --depends-on ID,...   start only after these tasks of the tenant SUCCEEDED (held until then;
                        cancelled with DEPENDENCY_FAILED if one fails or is cancelled)
  --wait                wait until the task finishes; exit 1 unless it SUCCEEDED
  --wait-timeout S      give up waiting after S seconds (default 300)

Example:
  tasks submit --tenant acme --type demo.sleep --payload '{"ms":500}' --wait`,
  options: {
    tenant: { type: 'string' },
    type: { type: 'string' },
    payload: { type: 'string' },
    priority: { type: 'string' },
    'idempotency-key': { type: 'string' },
    delay: { type: 'string' },
    'depends-on': { type: 'string' },
    wait: { type: 'boolean' },
    'wait-timeout': { type: 'string' },
  },
  async run(ctx) {
    noPositionals(ctx);
    const input: SubmitTaskInput = {
      tenantId: required(ctx, 'tenant'),
      type: required(ctx, 'type'),
      payload: await payloadOf(ctx),
      priority: oneOf(ctx, 'priority', PRIORITY_TIERS) as PriorityTier | undefined,
      idempotencyKey: str(ctx, 'idempotency-key'),
      delaySeconds: integer(ctx, 'delay', 0),
      dependsOn: str(ctx, 'depends-on')
        ?.split(',')
        .map((id) => id.trim())
        .filter((id) => id.length > 0),
    };
    const waitTimeout = integer(ctx, 'wait-timeout', 1);
    if (waitTimeout !== undefined && !ctx.values.wait) throw new UsageError('--wait-timeout needs --wait', ctx.name);
    const task = await ctx.client().submit(input, ctx.io.signal ? { signal: ctx.io.signal } : {});
    if (!ctx.values.wait) {
      ctx.print(task, () => `Submitted ${task.taskId} (${ctx.style.state(task.state)}, ${task.priority} priority)`);
      return 0;
    }
    if (!ctx.json) ctx.io.stderr(`Submitted ${task.taskId}; waiting for it to finish…\n`);
    const done = await ctx.client().waitFor(task.taskId, {
      timeoutMs: (waitTimeout ?? 300) * 1000,
      signal: ctx.io.signal,
    });
    ctx.print(done, () => formatTask(done, ctx.style));
    return done.state === 'SUCCEEDED' ? 0 : 1;
  },
};
