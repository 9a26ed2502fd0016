/**
 * What `npm start` (bin/local.ts) and `tasks dev` (the installed package's command) share: their
 * options, the checks made before anything starts, the start itself and Ctrl-C.
 *
 * The options and their help are in start-options.ts (the command line reads them without
 * loading the emulators).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { SchedulerConfig } from '../runtime/core/config.ts';
import { ConfigError } from '../runtime/core/errors.ts';
import type { TaskLogger } from '../runtime/core/logger.ts';
import type { AnyTaskTypeDefinition } from '../runtime/task-types/define.ts';
import { BUILT_IN_TASK_TYPE_NAMES, defaultRegistry } from '../runtime/task-types/index.ts';
import { loadTaskModules } from '../runtime/task-types/modules.ts';
import { handlerErrorListener } from '../runtime/worker/run-attempt.ts';
import { LogLevelError } from './console-logger.ts';
import { DataDirInUseError } from './data-dir-lock.ts';
import { ExternalAwsError } from './emulators.ts';
import { describeExternalAws, externalAwsFromEnvironment } from './external-aws.ts';
import { configPathFrom, loadConfig } from './load-config.ts';
import { type LocalServer, startLocalServer } from './server.ts';
import { START_OPTIONS, type StartCommandName } from './start-options.ts';
import { LOCAL_RETENTION_SECONDS } from './task-expiry.ts';

/** A refusal the user can act on: printed as one line, no stack. */
export class StartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartError';
  }
}

/** Whether `error` is one of the refusals printed as their message alone. */
export function isStartRefusal(error: unknown): error is Error {
  return (
    error instanceof StartError ||
    error instanceof DataDirInUseError ||
    error instanceof ConfigError ||
    error instanceof LogLevelError
  );
}

export interface StartSettings {
  readonly config: SchedulerConfig;
  /** Where the configuration came from (a path, or "built-in defaults"). */
  readonly source: string;
  /** The task modules' types (checked), and the modules as given. */
  readonly taskTypes: readonly AnyTaskTypeDefinition[];
  readonly taskModules: readonly string[];
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly retentionSeconds: number;
}

/** The options as parsed (START_OPTIONS): `npm start` parses them here, `tasks` with its own. */
export interface StartOptionValues {
  readonly config?: string | undefined;
  readonly 'task-types'?: readonly string[] | undefined;
  readonly port?: string | undefined;
}

/**
 * Parse and check everything before anything starts: options, configuration, task modules, and
 * the schedules against the task types (the latter when the runtime starts). `undefined`: help.
 */
export async function startSettings(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  command: StartCommandName,
): Promise<StartSettings | undefined> {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: typeof START_OPTIONS; allowPositionals: true }>>;
  try {
    // Strict: a mistyped option is refused, not ignored.
    parsed = parseArgs({ args: [...argv], options: START_OPTIONS, strict: true, allowPositionals: true });
  } catch (error) {
    throw new StartError(
      `${(error as Error).message}. See: ${command === 'npm start' ? 'npm start -- --help' : 'tasks dev --help'}`,
    );
  }
  const { values, positionals } = parsed;
  if (values.help) return undefined;
  return startSettingsFrom(values, positionals, env, command);
}

/** {@link startSettings} for options already parsed. */
export async function startSettingsFrom(
  values: StartOptionValues,
  positionals: readonly string[],
  env: NodeJS.ProcessEnv,
  command: StartCommandName,
): Promise<StartSettings> {
  if (command === 'npm start' && env.npm_lifecycle_event) {
    // `npm start --port 3001` (no `--`): npm keeps the flag for itself and passes only the value.
    for (const [flag, variable] of [
      ['--port', 'npm_config_port'],
      ['--task-types', 'npm_config_task_types'],
    ] as const) {
      if (env[variable]) throw new StartError(`npm kept ${flag} for itself: write npm start -- ${flag} ...`);
    }
  }
  if (command === 'tasks dev' && positionals.length > 0) {
    throw new StartError(`Unexpected argument ${positionals.join(' ')}. See: tasks dev --help`);
  }
  const { config, source } = loadConfig(configPathFrom(values.config, positionals, env));
  const port = portFrom(values.port, env.PORT);
  const host = env.HOST || '127.0.0.1';
  const retentionSeconds = Number(env.TASK_RETENTION_SECONDS ?? LOCAL_RETENTION_SECONDS);
  if (!Number.isInteger(retentionSeconds) || retentionSeconds < 1) {
    throw new StartError(
      `TASK_RETENTION_SECONDS must be a whole number of seconds, 1 or more, got "${env.TASK_RETENTION_SECONDS}".`,
    );
  }
  const taskModules = values['task-types'] ?? [];
  const taskTypes = await loadTaskModules(taskModules, BUILT_IN_TASK_TYPE_NAMES);
  return {
    config,
    source,
    taskTypes,
    taskModules,
    port,
    host,
    dataDir: resolve(env.DATA_DIR || '.data'),
    retentionSeconds,
  };
}

function portFrom(flag: string | undefined, variable: string | undefined): number {
  const [text, name] = flag !== undefined ? [flag, '--port'] : [variable ?? '3000', 'PORT'];
  const port = Number(text);
  if (!/^[0-9]+$/.test(text.trim()) || !Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new StartError(`${name} must be an integer 0-65535, got "${text}".`);
  }
  return port;
}

/**
 * Start the local system with `settings`; Ctrl-C (SIGINT) or SIGTERM stops it after the running
 * tasks finish, a second one at once (exit 130). Resolves once it serves.
 */
export async function runLocalSystem(
  settings: StartSettings,
  logger: TaskLogger,
  command: StartCommandName,
): Promise<LocalServer> {
  const { config, port, host, dataDir } = settings;
  // AWS_ENDPOINT_URL (or per service): the tables and queues at that endpoint, no emulators.
  const externalAws = externalAwsFromEnvironment(process.env);
  if (externalAws) logger.info(describeExternalAws(externalAws));
  // Handlers run in this process: an error one of them leaves unhandled (a throw in a timer, a
  // rejection it never awaited) fails that attempt instead of stopping the API, the scheduler and
  // every other running task, and a restart running the culprit again. Anything else is still a
  // crash, as without this listener.
  process.on(
    'uncaughtException',
    handlerErrorListener((taskId, origin, error) =>
      logger.warn(`task handler left an error unhandled (${origin}); its attempt fails with it`, {
        taskId,
        error: String(error),
      }),
    ),
  );
  let server: LocalServer;
  try {
    server = await startLocalServer({
      config,
      dataDir,
      port,
      host,
      logger,
      retentionSeconds: settings.retentionSeconds,
      registry: defaultRegistry(settings.taskTypes),
      externalAws,
    });
  } catch (error) {
    if (error instanceof ExternalAwsError) throw new StartError(error.message);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      const again = command === 'npm start' ? `npm start -- --port ${port + 1}` : `tasks dev --port ${port + 1}`;
      throw new StartError(
        `Port ${port} on ${host} is already in use (another ${command}?): stop it, or pick another, e.g. ${again}.`,
      );
    }
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new StartError(
        `Cannot listen on ${host}:${port} (${code}): set HOST and --port to an address of this machine.`,
      );
    }
    throw error;
  }
  logger.info(`scheduler running at ${server.url}`, { config: settings.source, dataDir, policy: config.policy });
  if (settings.taskTypes.length > 0) {
    logger.info(`task types from ${settings.taskModules.join(', ')}`, {
      types: settings.taskTypes.map((definition) => definition.type).join(','),
    });
  }
  logger.info(`try: ${tryCommand(server.url, settings.taskTypes)}`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    const count = server.runtime.running();
    if (stopping) {
      // Like a kill: the tasks' leases are recovered by the next start.
      logger.warn(
        `${signal} again: stopping now; ${plural(count, 'running task')} will be recovered on the next start`,
      );
      process.exit(130);
    }
    stopping = true;
    logger.info(
      count === 0
        ? `${signal}: stopping`
        : `${signal}: stopping; waiting for ${plural(count, 'running task')} to finish (at most their timeout). Ctrl-C again stops now; the next start recovers them`,
    );
    await server.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  return server;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/**
 * The submit printed at start, a command that works as printed: the first of the user's task
 * types whose payload may be `{}`, else `demo.sleep` (a type whose payload needs fields would be
 * refused with 400 invalid_payload).
 */
export function tryCommand(url: string, taskTypes: readonly AnyTaskTypeDefinition[]): string {
  const own = taskTypes.find((definition) => definition.payload.safeParse({}).success);
  const body = own ? { tenantId: 'acme', type: own.type, payload: {} } : DEFAULT_TRY;
  return `curl -s -X POST ${url}/v1/tasks -H 'content-type: application/json' -d '${JSON.stringify(body)}'`;
}
const DEFAULT_TRY = { tenantId: 'acme', type: 'demo.sleep', payload: { ms: 500 } };

export { type StartCommandName, startUsage } from './start-options.ts';
