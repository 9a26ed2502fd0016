/**
 * `tasks trace export`: a running system's recorded tasks as a trace for `npm run sim -- replay`
 * (runtime/ops/trace-file.ts), read through the HTTP API, so an operator can replay their own
 * traffic under a proposed configuration before changing it.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { traceOfTasks } from '../../../runtime/ops/trace-export.ts';
import type { Task } from '../../sdk/types.ts';
import { type Command, str, UsageError } from '../command.ts';

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export const traceCommand: Command = {
  summary: 'Export the recorded tasks as a trace to replay (npm run sim -- replay)',
  usage: 'tasks trace export [--tenants A,B] [--since 1h|ISO] [--out FILE] [--config PATH]',
  help: `Subcommands:
  export      the tasks that ran (submitted since --since), each from when it became due to how
              long its last attempt ran, with its tenant's weight and quota and the configuration

Options:
  --tenants A,B    the tenants to export (default: those GET /v1/status shows, at most 20)
  --since T        tasks submitted since T: a duration back from now (90s, 30m, 1h, 2d) or an
                   ISO 8601 time (default 1h)
  --out FILE       write the trace there (default: standard output)
  --config PATH    the configuration file to put in the trace (default: what GET /v1/status
                   says: policy, aging and the pools' capacity)

Then: npm run sim -- replay --trace FILE [--config proposed.json]`,
  options: {
    tenants: { type: 'string' },
    since: { type: 'string' },
    out: { type: 'string' },
    config: { type: 'string' },
  },
  async run(ctx) {
    const [sub, ...rest] = ctx.positionals;
    if (sub !== 'export') throw new UsageError('Give a subcommand: export', ctx.name);
    if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}"`, ctx.name);
    const sinceMs = sinceOf(str(ctx, 'since') ?? '1h', Date.now(), ctx.name);
    const configPath = str(ctx, 'config');
    const client = ctx.client();
    const status = await client.status({ recent: 0 });
    const tenants =
      str(ctx, 'tenants')
        ?.split(',')
        .map((id) => id.trim())
        .filter((id) => id !== '') ?? status.tenants.map((tenant) => tenant.tenantId);
    if (tenants.length === 0) throw new UsageError('No tenants to export: give --tenants A,B', ctx.name);
    const tasks: Task[] = [];
    const settings: Record<string, { weight: number; maxConcurrency: number }> = {};
    for (const tenantId of tenants) {
      // Newest first: stop at the first task submitted before the window.
      for await (const task of client.list({ tenantId, limit: 100 })) {
        if (Date.parse(task.submittedAt) < sinceMs) break;
        tasks.push(task);
      }
      const tenant = await client.getTenant(tenantId);
      settings[tenantId] = { weight: tenant.weight, maxConcurrency: tenant.maxConcurrency };
    }
    const config = configPath
      ? await readConfig(configPath, ctx.name, ctx.io.readFile)
      : {
          policy: status.policy,
          agingSeconds: status.agingSeconds,
          pools: {
            lambda: { concurrency: status.pools.lambda.capacity },
            fargate: { vcpu: status.pools.fargate.vcpu, memoryMiB: status.pools.fargate.memoryMiB },
          },
        };
    const trace = traceOfTasks(tasks, { config, tenants: settings });
    const text = `${JSON.stringify(trace, null, 2)}\n`;
    const out = str(ctx, 'out');
    if (!out) {
      ctx.io.stdout(text);
      return 0;
    }
    await writeFile(out, text);
    const summary = {
      out,
      tasks: trace.tasks.length,
      // The tenants whose tasks it holds: one asked for without a task in the window adds nothing.
      tenants: new Set(trace.tasks.map((task) => task.tenantId)).size,
      skipped: tasks.length - trace.tasks.length,
    };
    ctx.print(
      summary,
      () =>
        `${summary.tasks} tasks of ${summary.tenants} tenants written to ${out}${summary.skipped ? ` (${summary.skipped} that have not run left out)` : ''}; replay them with: npm run sim -- replay --trace ${out}`,
    );
    return 0;
  },
};

/** `--since`: a duration back from `nowMs` (90s, 30m, 1h, 2d) or an ISO 8601 time. */
export function sinceOf(value: string, nowMs: number, command: string): number {
  const relative = /^([0-9]+(?:\.[0-9]+)?)([smhd])$/.exec(value);
  if (relative) return nowMs - Number(relative[1]) * (UNITS[relative[2] as string] as number);
  const absolute = Date.parse(value);
  if (/^\d{4}-\d{2}-\d{2}/.test(value) && Number.isFinite(absolute)) return absolute;
  throw new UsageError(`--since must be a duration (90s, 30m, 1h, 2d) or an ISO 8601 time, got "${value}"`, command);
}

async function readConfig(
  path: string,
  command: string,
  read: ((path: string) => Promise<string>) | undefined,
): Promise<unknown> {
  let text: string;
  try {
    text = await (read ?? ((p: string) => readFile(p, 'utf8')))(path);
  } catch (error) {
    throw new UsageError(`Cannot read configuration file ${path}: ${(error as Error).message}`, command);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${path} is not JSON: ${(error as Error).message}`, command);
  }
}
