/**
 * `tasks schedules list|run`: the configured schedules, or fire one now through the API.
 */
import { ConfigError } from '../../../runtime/core/errors.ts';
import type { SubmitTaskInput } from '../../sdk/types.ts';
import { type Command, str, UsageError } from '../command.ts';
import { formatTask } from '../format.ts';
import { localRuntimeFile, readLocalRuntime } from '../local-runtime.ts';

export const schedulesCommand: Command = {
  summary: 'List the configured schedules, or fire one now',
  usage: 'tasks schedules list | tasks schedules run NAME [--config PATH]',
  help: `Subcommands:
  list        the schedules of the configuration and when each fires next
  run NAME    submit NAME's task now, through the API, exactly as its firing at this minute
              would (same payload, {{date}} = today in the schedule's time zone, idempotency key schedule:NAME:minute:
              a second run in the same minute returns the same task)

Options:
  --config PATH   configuration file (default $SCHEDULER_CONFIG, else the configuration of the
                  local runtime running on $DATA_DIR when the CLI talks to it, else
                  config/default.json)`,
  options: { config: { type: 'string' } },
  async run(ctx) {
    const [sub, name, ...rest] = ctx.positionals;
    if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}"`, ctx.name);
    if (sub !== 'list' && sub !== 'run') throw new UsageError('Give a subcommand: list or run', ctx.name);
    const env = ctx.io.env ?? process.env;
    // Loaded here, not with the command line: cron-parser is an optional peer dependency of the
    // installed package, which a client-only install does not have.
    const [{ configPathFrom, loadConfig }, { scheduledSubmitInput }, { parseAwsCron }] = await Promise.all([
      import('../../../local/load-config.ts'),
      import('../../../runtime/app/scheduled.ts'),
      import('../../../runtime/core/cron.ts'),
    ]);
    const configFlag = str(ctx, 'config');
    // Beside a running local runtime (found as the API is: no --endpoint, no SCHEDULER_ENDPOINT),
    // its own schedules, whatever --config it was started with; else the configuration file.
    const local =
      configFlag === undefined &&
      !env.SCHEDULER_CONFIG &&
      (str(ctx, 'endpoint') ?? env.SCHEDULER_ENDPOINT) === undefined
        ? readLocalRuntime(env)
        : undefined;
    const { config, source } = local?.config
      ? { config: local.config, source: `the local runtime's configuration (${localRuntimeFile(env)})` }
      : loadGiven(() => loadConfig(configPathFrom(configFlag, [], env)), ctx.name);
    const now = new Date();
    if (sub === 'list') {
      if (name) throw new UsageError(`Unexpected argument "${name}"`, ctx.name);
      const rows = config.schedules.map((schedule) => ({
        name: schedule.name,
        cron: schedule.cron,
        timezone: schedule.timezone,
        enabled: schedule.enabled,
        type: schedule.task.type,
        tenantId: schedule.task.tenantId,
        nextFiring: schedule.enabled
          ? (parseAwsCron(schedule.cron, schedule.timezone).nextAfter(now)?.toISOString() ?? null)
          : null,
      }));
      ctx.print(rows, () =>
        rows.length === 0
          ? `No schedules in ${source}.`
          : rows
              .map(
                (row) =>
                  `${row.name}  ${row.cron} ${row.timezone}  ${row.type} for ${row.tenantId}  ${row.enabled ? `next ${row.nextFiring}` : 'disabled'}`,
              )
              .join('\n'),
      );
      return 0;
    }
    if (!name) throw new UsageError('schedules run needs a schedule name', ctx.name);
    const schedule = config.schedules.find((candidate) => candidate.name === name);
    if (!schedule) {
      const known = config.schedules.map((candidate) => candidate.name).join(', ') || 'none';
      throw new UsageError(`No schedule "${name}" in ${source} (schedules: ${known})`, ctx.name);
    }
    const input = scheduledSubmitInput({
      scheduleName: name,
      scheduledTime: now.toISOString(),
      timezone: schedule.timezone,
      task: schedule.task,
    });
    const task = await ctx.client().submit(input as SubmitTaskInput);
    ctx.print(task, () => formatTask(task, ctx.style));
    return 0;
  },
};

/** A configuration file the caller named that cannot be read or is invalid: their input, exit 2. */
function loadGiven<T>(load: () => T, command: string): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message, command);
    throw error;
  }
}
