/**
 * The `tasks` command line. `runCli(argv, io)` does everything but touch the process, so tests
 * run it in-process; bin/cli.ts wires it to stdout, stderr, the environment and Ctrl-C.
 *
 * Exit codes: 0 ok, 1 the API (or the connection) refused, or a waited-for task did not
 * succeed, 2 usage error.
 */
import { parseArgs } from 'node:util';
import { SchedulerClient } from '../sdk/client.ts';
import { SchedulerApiError, SchedulerClientError, SchedulerConnectionError } from '../sdk/errors.ts';
import {
  type CliIo,
  type Command,
  type CommandContext,
  DEFAULT_ENDPOINT,
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  UsageError,
} from './command.ts';
import { cancelCommand } from './commands/cancel.ts';
import { dashboardCommand } from './commands/dashboard.ts';
import { devCommand } from './commands/dev.ts';
import { getCommand } from './commands/get.ts';
import { listCommand } from './commands/list.ts';
import { redriveCommand } from './commands/redrive.ts';
import { retryCommand } from './commands/retry.ts';
import { schedulesCommand } from './commands/schedules.ts';
import { submitCommand } from './commands/submit.ts';
import { tenantsCommand } from './commands/tenants.ts';
import { traceCommand } from './commands/trace.ts';
import { typesCommand } from './commands/types.ts';
import { watchCommand } from './commands/watch.ts';
import { ansiStyle, plainStyle } from './format.ts';
import { localRuntimeFile, readLocalRuntime } from './local-runtime.ts';

export type { CliIo };
export { DEFAULT_ENDPOINT };

/** The commands, in the order `tasks --help` lists them; each is one file under commands/. */
const COMMANDS: Record<string, Command> = {
  submit: submitCommand,
  get: getCommand,
  list: listCommand,
  cancel: cancelCommand,
  retry: retryCommand,
  tenants: tenantsCommand,
  types: typesCommand,
  redrive: redriveCommand,
  schedules: schedulesCommand,
  trace: traceCommand,
  dashboard: dashboardCommand,
  watch: watchCommand,
  dev: devCommand,
};

function mainHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  return `Usage: tasks <command> [options]

Submit, inspect and watch tasks of the task scheduler (local runtime or a deployed API).

Commands:
${Object.entries(COMMANDS)
  .map(([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`)
  .join('\n')}

${GLOBAL_HELP}

Run "tasks <command> --help" for a command's options.`;
}

function commandHelp(command: Command): string {
  return `Usage: ${command.usage}

${command.summary}.

${command.help}

${GLOBAL_HELP}`;
}

/** Run the command line; resolves with the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const env = io.env ?? process.env;
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    const topic = name === 'help' ? rest[0] : undefined;
    const command = topic ? COMMANDS[topic] : undefined;
    io.stdout(`${command ? commandHelp(command) : mainHelp()}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    io.stderr(`Unknown command "${name}".\n\n${mainHelp()}\n`);
    return 2;
  }
  let json = rest.includes('--json');
  let hintFor: ((error: unknown) => string | undefined) | undefined;
  try {
    let parsed: ReturnType<typeof parseArgs>;
    try {
      parsed = parseArgs({
        args: [...rest],
        options: { ...GLOBAL_OPTIONS, ...command.options },
        allowPositionals: true,
        strict: true,
      });
    } catch (error) {
      throw new UsageError((error as Error).message, name);
    }
    const values = parsed.values as Record<string, string | boolean | undefined>;
    json = values.json === true;
    if (values.help) {
      io.stdout(`${commandHelp(command)}\n`);
      return 0;
    }
    const style = io.isTTY && !json && env.NO_COLOR === undefined ? ansiStyle : plainStyle;
    let client: SchedulerClient | undefined;
    const endpoint = endpointOf(values, env, io.defaultEndpoint ?? DEFAULT_ENDPOINT);
    const context: CommandContext = {
      name,
      values,
      positionals: parsed.positionals,
      json,
      style,
      io,
      client() {
        client ??= createClient(endpoint.url, values.region as string | undefined, name);
        return client;
      },
      unreachableHint(error) {
        return endpoint.guessed && error instanceof SchedulerConnectionError
          ? pointingHint(env, error.endpoint)
          : undefined;
      },
      print(value, human) {
        io.stdout(`${json ? JSON.stringify(value, null, 2) : human()}\n`);
      },
    };
    hintFor = (error) => context.unreachableHint(error);
    return await command.run(context);
  } catch (error) {
    return reportError(error, json, io, hintFor?.(error));
  }
}

/** Where the API is: --endpoint, else SCHEDULER_ENDPOINT, else the local runtime on DATA_DIR, else port 3000. */
function endpointOf(
  values: Record<string, string | boolean | undefined>,
  env: Readonly<Record<string, string | undefined>>,
  fallback: string,
): { url: string; guessed: boolean } {
  const given = (values.endpoint as string | undefined) ?? env.SCHEDULER_ENDPOINT;
  if (given !== undefined) return { url: given, guessed: false };
  const local = readLocalRuntime(env);
  if (local) return { url: local.url, guessed: false };
  return { url: fallback, guessed: true };
}

function createClient(endpoint: string, region: string | undefined, command: string): SchedulerClient {
  try {
    return new SchedulerClient({ endpoint, region });
  } catch (error) {
    if (error instanceof SchedulerClientError) throw new UsageError(error.message, command);
    throw error;
  }
}

/** Said when the default endpoint did not answer: how the CLI finds a runtime, and how to point it. */
function pointingHint(env: Readonly<Record<string, string | undefined>>, endpoint: string): string {
  return `No local runtime found at ${localRuntimeFile(env)} and none answers on ${endpoint}: start one (npm start, or tasks dev), run this where it runs (or with its DATA_DIR), or point the CLI at the API: --endpoint URL or SCHEDULER_ENDPOINT=URL.`;
}

function reportError(error: unknown, json: boolean, io: CliIo, hint?: string): number {
  if (error instanceof UsageError) {
    const hint = error.command ? `Run "tasks ${error.command} --help" for usage.` : 'Run "tasks --help" for usage.';
    io.stderr(`error: ${error.message}\n${hint}\n`);
    return 2;
  }
  if (error instanceof SchedulerApiError) {
    if (json) {
      io.stderr(
        `${JSON.stringify({ error: { status: error.status, code: error.code, message: error.message, details: error.details } })}\n`,
      );
    } else {
      io.stderr(`error: ${error.code}: ${error.message}\n`);
    }
    return 1;
  }
  if (io.signal?.aborted) return 130;
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof SchedulerClientError ? error.name : 'unexpected_error';
  io.stderr(
    json
      ? `${JSON.stringify({ error: { code, message, ...(hint ? { hint } : {}) } })}\n`
      : `error: ${message}\n${hint ? `${hint}\n` : ''}`,
  );
  return 1;
}
