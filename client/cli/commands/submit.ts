/**
 * `tasks submit`: submit a task, optionally wait for it to finish.
 */
import { PRIORITY_TIERS, type PriorityTier } from '../../../runtime/core/task.ts';
import type { SubmitTaskInput } from '../../sdk/types.ts';
import { type Command, integer, noPositionals, oneOf, payloadOf, required, str, UsageError } from '../command.ts';
import { formatTask } from '../format.ts';
import { submitFile } from './submit-file.ts';

export const submitCommand: Command = {
  summary: 'Submit a task (and optionally wait for it)',
  usage:
    'tasks submit --tenant T --type X [--payload JSON|@file] [--priority P] [--idempotency-key K] [--delay S] [--depends-on ID,...] [--wait]\n       tasks submit --file tasks.ndjson [--tenant T] [--type X] [--then JSON|@file] [--idempotency-key K] [--chunk N]',
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

  --file PATH           one task a line (a POST /v1/tasks body, JSON), submitted in batches of
                        up to 1,000 (POST /v1/tasks/batch) with a progress bar; --tenant and
                        --type fill what a line leaves out; exit 1 if any line was refused
  --then JSON|@file     with --file: a task submitted once every task of the file has ended,
                        with the counts in its payload's "batch" (the file must fit one batch)
  --chunk N             with --file: tasks per request (default 1000)
  --idempotency-key K   with --file: names the batch (without it the same file again is the
                        same batch, and creates nothing)

Example:
  tasks submit --tenant acme --type demo.sleep --payload '{"ms":500}' --wait
  tasks submit --file photos.ndjson --tenant acme --then '{"type":"demo.echo","payload":{"report":1}}'`,
  options: {
    tenant: { type: 'string' },
    type: { type: 'string' },
    payload: { type: 'string' },
    priority: { type: 'string' },
    'idempotency-key': { type: 'string' },
    delay: { type: 'string' },
    'depends-on': { type: 'string' },
    wait: { type: 'boolean' },
    file: { type: 'string' },
    // biome-ignore lint/suspicious/noThenProperty: the --then flag (parseArgs options), not a thenable
    then: { type: 'string' },
    chunk: { type: 'string' },
    'wait-timeout': { type: 'string' },
  },
  async run(ctx) {
    noPositionals(ctx);
    const file = str(ctx, 'file');
    if (file !== undefined) return submitFile(ctx, file);
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
