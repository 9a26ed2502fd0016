/**
 * The `tasks` command line. `runCli(argv, io)` does everything but touch the process, so tests
 * run it in-process; bin/cli.ts wires it to stdout, stderr, the environment and Ctrl-C.
 *
 * Exit codes: 0 ok, 1 the API (or the connection) refused, or a waited-for task did not
 * succeed, 2 usage error.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { configPathFrom, loadConfig } from '../../local/load-config.ts';
import { RUNTIME_FILE, type RuntimeDescription } from '../../local/runtime-file.ts';
import { createAwsClients, localEndpoints } from '../../runtime/adapters/aws-clients.ts';
import { scheduledSubmitInput } from '../../runtime/app/scheduled.ts';
import { buildServices, configFromEnvironment, resourcesFromEnvironment } from '../../runtime/app/wiring.ts';
import { parseAwsCron } from '../../runtime/core/cron.ts';
import { PRIORITY_TIERS, type PriorityTier, TASK_STATES } from '../../runtime/core/task.ts';
import { ENV } from '../../runtime/infra/resources.ts';
import { type RedriveReport, redriveDeadLetters } from '../../runtime/ops/redrive.ts';
import { startDashboardProxy } from '../dashboard/proxy.ts';
import { SchedulerClient } from '../sdk/client.ts';
import { SchedulerApiError, SchedulerClientError } from '../sdk/errors.ts';
import type { SubmitTaskInput, Task, TaskState } from '../sdk/types.ts';
import {
  ansiStyle,
  formatStoredTenant,
  formatTask,
  formatTaskRows,
  formatTenant,
  plainStyle,
  type Style,
} from './format.ts';
import { watch } from './watch.ts';

export interface CliIo {
  /** Standard output; text is written as given (lines end in `\n`). */
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Colours and in-place redraw (`watch`) when true. @default false */
  readonly isTTY?: boolean;
  /** Terminal width (`watch` cuts lines to it). @default no limit */
  readonly columns?: () => number;
  /** Aborted on Ctrl-C: `watch` and `submit --wait` stop. */
  readonly signal?: AbortSignal;
  /** Reads `--payload @file`. @default fs.readFile */
  readonly readFile?: (path: string) => Promise<string>;
}

export const DEFAULT_ENDPOINT = 'http://127.0.0.1:3000';

class UsageError extends Error {
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}

const GLOBAL_OPTIONS = {
  endpoint: { type: 'string' },
  region: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const GLOBAL_HELP = `Global options:
  --endpoint URL   API base URL (default $SCHEDULER_ENDPOINT or ${DEFAULT_ENDPOINT});
                   a non-local endpoint is signed with SigV4 using the standard AWS credentials
  --region R       signing region (default: from an execute-api URL, else $AWS_REGION)
  --json           machine-readable output (errors go to stderr as {"error":{...}})
  -h, --help       help for a command`;

interface Command {
  readonly summary: string;
  readonly usage: string;
  readonly help: string;
  readonly options: NonNullable<Parameters<typeof parseArgs>[0]>['options'];
  run(context: CommandContext): Promise<number>;
}

interface CommandContext {
  readonly name: string;
  readonly values: Record<string, string | boolean | undefined>;
  readonly positionals: string[];
  readonly json: boolean;
  readonly style: Style;
  readonly io: CliIo;
  client(): SchedulerClient;
  print(value: unknown, human: () => string): void;
}

const COMMANDS: Record<string, Command> = {
  submit: {
    summary: 'Submit a task (and optionally wait for it)',
    usage:
      'tasks submit --tenant T --type X [--payload JSON|@file] [--priority P] [--idempotency-key K] [--delay S] [--wait]',
    help: `Options:
  --tenant T            tenant the task belongs to (required)
  --type X              task type, e.g. demo.sleep (required)
  --payload JSON|@file  payload as JSON text, or @path to read it from a file (default {})
  --priority P          ${PRIORITY_TIERS.join(' | ')} (default: the task type's, else normal)
  --idempotency-key K   submitting again with the same key returns the original task
  --delay S             do not start before S seconds from now
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
      wait: { type: 'boolean' },
      'wait-timeout': { type: 'string' },
    },
    async run(ctx) {
      noPositionals(ctx);
      const input: SubmitTaskInput = {
        tenantId: required(ctx, 'tenant'),
        type: required(ctx, 'type'),
        payload: await payloadOf(ctx),
        ...optional('priority', oneOf(ctx, 'priority', PRIORITY_TIERS) as PriorityTier | undefined),
        ...optional('idempotencyKey', str(ctx, 'idempotency-key')),
        ...optional('delaySeconds', integer(ctx, 'delay', 0)),
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
        ...(ctx.io.signal ? { signal: ctx.io.signal } : {}),
      });
      ctx.print(done, () => formatTask(done, ctx.style));
      return done.state === 'SUCCEEDED' ? 0 : 1;
    },
  },
  get: {
    summary: 'Show a task and, while it waits, why',
    usage: 'tasks get TASK_ID',
    help: 'Shows state, attempts, result or error, and for a QUEUED task the wait reason and its bound.',
    options: {},
    async run(ctx) {
      const task = await ctx.client().get(onePositional(ctx, 'TASK_ID'));
      ctx.print(task, () => formatTask(task, ctx.style));
      return 0;
    },
  },
  list: {
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
        ...optional('state', oneOf(ctx, 'state', TASK_STATES) as TaskState | undefined),
        ...optional('limit', limit),
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
  },
  cancel: {
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
  },
  retry: {
    summary: 'Queue a FAILED or CANCELLED task again',
    usage: 'tasks retry TASK_ID',
    help: 'The task gets a fresh attempt budget and is QUEUED again.',
    options: {},
    async run(ctx) {
      const task = await ctx.client().retry(onePositional(ctx, 'TASK_ID'));
      ctx.print(task, () => `Queued ${task.taskId} again (${ctx.style.state(task.state)})`);
      return 0;
    },
  },
  tenants: {
    summary: "Show or set a tenant's weight and quota",
    usage: 'tasks tenants get T | tasks tenants set T --weight W --max-concurrency N',
    help: `Subcommands:
  get T                                 settings (and where they come from), running vs quota, share
  set T --weight W --max-concurrency N  store settings; they override the configuration file

Options:
  --weight W            fair-share weight (> 0)
  --max-concurrency N   tasks dispatched or running at once (>= 1)`,
    options: {
      weight: { type: 'string' },
      'max-concurrency': { type: 'string' },
    },
    async run(ctx) {
      const [sub, tenantId, ...rest] = ctx.positionals;
      if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}"`, ctx.name);
      if (sub !== 'get' && sub !== 'set') throw new UsageError('Give a subcommand: get or set', ctx.name);
      if (!tenantId) throw new UsageError(`tenants ${sub} needs a tenant id`, ctx.name);
      if (sub === 'get') {
        if (ctx.values.weight !== undefined || ctx.values['max-concurrency'] !== undefined) {
          throw new UsageError('--weight and --max-concurrency go with "tenants set"', ctx.name);
        }
        const tenant = await ctx.client().getTenant(tenantId);
        ctx.print(tenant, () => formatTenant(tenant, ctx.style));
        return 0;
      }
      const weight = number(ctx, 'weight');
      const maxConcurrency = integer(ctx, 'max-concurrency', 1);
      if (weight === undefined || maxConcurrency === undefined) {
        throw new UsageError('tenants set needs --weight and --max-concurrency', ctx.name);
      }
      const stored = await ctx.client().putTenant(tenantId, { weight, maxConcurrency });
      ctx.print(stored, () => formatStoredTenant(stored, ctx.style));
      return 0;
    },
  },
  redrive: {
    summary: 'Redrive the dead-letter queues (operators, with AWS credentials)',
    usage: 'tasks redrive [--mode move|settle] [--queues ID,ID] [--limit N]',
    help: `Works on the queues (and, to settle, the tables) directly with your AWS credentials, not
through the HTTP API. It reads the resource names the stack sets on every function:
  QUEUE_URLS          JSON object, queue id -> URL (required)
  TASKS_TABLE, CONTROL_TABLE, SCHEDULER_CONFIG_JSON or SCHEDULER_CONFIG   (--mode settle)
Copy them from any of the stack's functions (aws lambda get-function-configuration).
Without QUEUE_URLS it works on the local runtime (npm start) running on DATA_DIR (default
.data): it reads the emulators' addresses from DATA_DIR/runtime.json.

Options:
  --mode move     put dead letters back on their source queue (default); stale ones are
                  skipped by their fence when received again
  --mode settle   decide each worker dead letter now: a retry, or FAILED with the last error
  --queues a,b    source queue ids (default: every queue with a dead-letter queue)
  --limit N       stop after N messages per queue`,
    options: {
      mode: { type: 'string' },
      queues: { type: 'string' },
      limit: { type: 'string' },
    },
    async run(ctx) {
      noPositionals(ctx);
      const mode = (oneOf(ctx, 'mode', ['move', 'settle']) ?? 'move') as 'move' | 'settle';
      const limit = integer(ctx, 'limit', 1);
      const env = ctx.io.env ?? process.env;
      if (!env[ENV.queueUrls]) {
        const local = readLocalRuntime(env);
        if (local) return redriveLocal(ctx, local, mode, limit);
      }
      const missing = [ENV.queueUrls, ...(mode === 'settle' ? [ENV.tasksTable, ENV.controlTable] : [])].filter(
        (name) => !env[name],
      );
      if (missing.length > 0) {
        throw new UsageError(
          `Set ${missing.join(', ')} for a deployed stack (see "tasks redrive --help"), or run it beside npm start (no local runtime found at ${localRuntimeFile(env)})`,
          ctx.name,
        );
      }
      let queueUrls: Record<string, string>;
      try {
        queueUrls = JSON.parse(env[ENV.queueUrls]!) as Record<string, string>;
      } catch {
        throw new UsageError(`${ENV.queueUrls} must be a JSON object of queue id -> URL`, ctx.name);
      }
      const region = str(ctx, 'region') ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
      const clients = createAwsClients({
        ...optional('region', region),
        ...optional('sqs', env.AWS_ENDPOINT_URL_SQS),
        ...optional('dynamodb', env.AWS_ENDPOINT_URL_DYNAMODB),
        ...(env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
          ? {
              credentials: {
                accessKeyId: env.AWS_ACCESS_KEY_ID,
                secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
                ...optional('sessionToken', env.AWS_SESSION_TOKEN),
              },
            }
          : {}),
      });
      const services =
        mode === 'settle'
          ? buildServices({ config: configFromEnvironment(env), clients, resources: resourcesFromEnvironment(env) })
          : undefined;
      return redriveAndReport(ctx, { sqs: clients.sqs, queueUrls, mode, limit, services });
    },
  },
  schedules: {
    summary: 'List the configured schedules, or fire one now',
    usage: 'tasks schedules list | tasks schedules run NAME [--config PATH]',
    help: `Subcommands:
  list        the schedules of the configuration and when each fires next
  run NAME    submit NAME's task now, through the API, exactly as its firing at this minute
              would (same payload, {{date}} = today UTC, idempotency key schedule:NAME:minute:
              a second run in the same minute returns the same task)

Options:
  --config PATH   configuration file (default $SCHEDULER_CONFIG, else config/default.json)`,
    options: { config: { type: 'string' } },
    async run(ctx) {
      const [sub, name, ...rest] = ctx.positionals;
      if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}"`, ctx.name);
      if (sub !== 'list' && sub !== 'run') throw new UsageError('Give a subcommand: list or run', ctx.name);
      const env = ctx.io.env ?? process.env;
      const configFlag = str(ctx, 'config');
      const { config, source } = loadConfig(configPathFrom(configFlag ? ['--config', configFlag] : [], env));
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
      const input = scheduledSubmitInput({ scheduleName: name, scheduledTime: now.toISOString(), task: schedule.task });
      const task = await ctx.client().submit(input as SubmitTaskInput);
      ctx.print(task, () => formatTask(task, ctx.style));
      return 0;
    },
  },
  dashboard: {
    summary: 'Serve the web dashboard for a deployed API on localhost (signing its reads)',
    usage: 'tasks dashboard --endpoint URL [--port P] [--host H]',
    help: `The deployed API requires SigV4 on every route, which a browser cannot sign. This serves the
dashboard page on localhost and answers its status reads through the signing client, with your
AWS credentials. Against the local runtime, open http://127.0.0.1:3000/ instead. Ctrl-C quits.

Options:
  --port P   local port (default 8080; 0 picks a free one)
  --host H   bind address (default 127.0.0.1)`,
    options: { port: { type: 'string' }, host: { type: 'string' } },
    async run(ctx) {
      noPositionals(ctx);
      const port = integer(ctx, 'port', 0, 65_535) ?? 8080;
      const proxy = await startDashboardProxy({
        client: ctx.client(),
        port,
        host: str(ctx, 'host') ?? '127.0.0.1',
      });
      ctx.print({ url: proxy.url }, () => `Dashboard at ${proxy.url} (Ctrl-C to stop)`);
      await new Promise<void>((resolve) => {
        if (!ctx.io.signal || ctx.io.signal.aborted) return resolve();
        ctx.io.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      await proxy.close();
      return 0;
    },
  },
  watch: {
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
        render: { style: ctx.style, endpoint: client.endpoint, ...optional('columns', ctx.io.columns) },
        intervalMs: interval * 1000,
        once: ctx.values.once === true,
        json: ctx.json,
        redraw: ctx.io.isTTY === true && ctx.values.once !== true,
        ...optional('recent', recent),
        ...optional('tenants', tenants),
        write: ctx.io.stdout,
        ...optional('signal', ctx.io.signal),
      });
    },
  },
};

function formatRedrive(report: RedriveReport): string {
  if (report.queues.length === 0) return 'No dead-letter queues to redrive.';
  return report.queues
    .map((queue) => {
      const what =
        queue.method === 'message-move-task'
          ? `SQS move task started (${queue.taskHandle ?? 'no handle'})`
          : queue.method === 'settle'
            ? `settled: ${queue.settled?.retried ?? 0} retried, ${queue.settled?.failed ?? 0} failed, ${queue.settled?.cancelled ?? 0} cancelled, ${queue.settled?.stale ?? 0} stale`
            : `${queue.moved} moved back`;
      return `${queue.deadLetterQueueId} -> ${queue.sourceQueueId}: ${what}${queue.errors > 0 ? `, ${queue.errors} left (errors)` : ''}`;
    })
    .join('\n');
}

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
    const context: CommandContext = {
      name,
      values,
      positionals: parsed.positionals,
      json,
      style,
      io,
      client() {
        client ??= createClient(values, env, name);
        return client;
      },
      print(value, human) {
        io.stdout(`${json ? JSON.stringify(value, null, 2) : human()}\n`);
      },
    };
    return await command.run(context);
  } catch (error) {
    return reportError(error, json, io);
  }
}

function createClient(
  values: Record<string, string | boolean | undefined>,
  env: Readonly<Record<string, string | undefined>>,
  command: string,
): SchedulerClient {
  const endpoint = (values.endpoint as string | undefined) ?? env.SCHEDULER_ENDPOINT ?? DEFAULT_ENDPOINT;
  try {
    return new SchedulerClient({ endpoint, ...optional('region', values.region as string | undefined) });
  } catch (error) {
    if (error instanceof SchedulerClientError) throw new UsageError(error.message, command);
    throw error;
  }
}

function reportError(error: unknown, json: boolean, io: CliIo): number {
  if (error instanceof UsageError) {
    const hint = error.command ? `Run "tasks ${error.command} --help" for usage.` : 'Run "tasks --help" for usage.';
    io.stderr(`error: ${error.message}\n${hint}\n`);
    return 2;
  }
  if (error instanceof SchedulerApiError) {
    if (json) {
      io.stderr(
        `${JSON.stringify({ error: { status: error.status, code: error.code, message: error.message, ...optional('details', error.details) } })}\n`,
      );
    } else {
      io.stderr(`error: ${error.code}: ${error.message}\n`);
    }
    return 1;
  }
  if (io.signal?.aborted) return 130;
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof SchedulerClientError ? error.name : 'unexpected_error';
  io.stderr(json ? `${JSON.stringify({ error: { code, message } })}\n` : `error: ${message}\n`);
  return 1;
}

// Argument helpers: each throws a UsageError naming the flag.

function str(ctx: CommandContext, flag: string): string | undefined {
  const value = ctx.values[flag];
  return typeof value === 'string' ? value : undefined;
}

function required(ctx: CommandContext, flag: string): string {
  const value = str(ctx, flag);
  if (value === undefined || value === '') throw new UsageError(`--${flag} is required`, ctx.name);
  return value;
}

function number(ctx: CommandContext, flag: string): number | undefined {
  const value = str(ctx, flag);
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || parsed <= 0) {
    throw new UsageError(`--${flag} must be a positive number, got "${value}"`, ctx.name);
  }
  return parsed;
}

function integer(ctx: CommandContext, flag: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const value = str(ctx, flag);
  if (value === undefined) return undefined;
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `${min}-${max}`;
    throw new UsageError(`--${flag} must be an integer ${range}, got "${value}"`, ctx.name);
  }
  return Number(value);
}

function oneOf(ctx: CommandContext, flag: string, allowed: readonly string[]): string | undefined {
  const value = str(ctx, flag);
  if (value !== undefined && !allowed.includes(value)) {
    throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got "${value}"`, ctx.name);
  }
  return value;
}

async function payloadOf(ctx: CommandContext): Promise<unknown> {
  const raw = str(ctx, 'payload');
  if (raw === undefined) return {};
  let text = raw;
  let source = '--payload';
  if (raw.startsWith('@')) {
    const path = raw.slice(1);
    source = path;
    try {
      text = await (ctx.io.readFile ?? ((p: string) => readFile(p, 'utf8')))(path);
    } catch (error) {
      throw new UsageError(`Cannot read payload file ${path}: ${(error as Error).message}`, ctx.name);
    }
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${source} is not valid JSON: ${(error as Error).message}`, ctx.name);
  }
}

function onePositional(ctx: CommandContext, what: string): string {
  const [value, ...extra] = ctx.positionals;
  if (!value) throw new UsageError(`${what} is required`, ctx.name);
  if (extra.length > 0) throw new UsageError(`Unexpected argument "${extra[0]}"`, ctx.name);
  return value;
}

function noPositionals(ctx: CommandContext): void {
  if (ctx.positionals.length > 0) throw new UsageError(`Unexpected argument "${ctx.positionals[0]}"`, ctx.name);
}

/** `{ key: value }` when the value is defined, else `{}` (for optional properties). */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** What `npm start` wrote to DATA_DIR/runtime.json, when that process is still alive. */
function readLocalRuntime(env: Readonly<Record<string, string | undefined>>): RuntimeDescription | undefined {
  let description: RuntimeDescription;
  try {
    description = JSON.parse(readFileSync(localRuntimeFile(env), 'utf8')) as RuntimeDescription;
  } catch {
    return undefined;
  }
  try {
    process.kill(description.pid, 0);
  } catch {
    return undefined; // left by a runtime that was killed
  }
  return description;
}

function localRuntimeFile(env: Readonly<Record<string, string | undefined>>): string {
  return resolve(env.DATA_DIR || '.data', RUNTIME_FILE);
}

/** Redrive (deployed or local alike), print the report; exit code 1 when a queue had errors. */
async function redriveAndReport(
  ctx: CommandContext,
  input: {
    sqs: ReturnType<typeof createAwsClients>['sqs'];
    queueUrls: Record<string, string>;
    mode: 'move' | 'settle';
    limit: number | undefined;
    services: ReturnType<typeof buildServices> | undefined;
  },
): Promise<number> {
  const { services } = input;
  const report = await redriveDeadLetters({
    sqs: input.sqs,
    queueUrls: input.queueUrls,
    mode: input.mode,
    ...optional('queueIds', str(ctx, 'queues')?.split(',').filter(Boolean)),
    ...optional('limit', input.limit),
    ...(services ? { store: services.store, queues: services.queues, config: services.config } : {}),
  });
  ctx.print(report, () => formatRedrive(report));
  return report.queues.some((queue) => queue.errors > 0) ? 1 : 0;
}

async function redriveLocal(
  ctx: CommandContext,
  local: RuntimeDescription,
  mode: 'move' | 'settle',
  limit: number | undefined,
): Promise<number> {
  const clients = createAwsClients(localEndpoints(local.endpoints.dynamodb, local.endpoints.sqs));
  try {
    const services =
      mode === 'settle'
        ? buildServices({
            config: local.config,
            clients,
            resources: { tables: local.tables, queueUrls: local.queueUrls },
          })
        : undefined;
    return await redriveAndReport(ctx, { sqs: clients.sqs, queueUrls: local.queueUrls, mode, limit, services });
  } finally {
    clients.dynamodb.destroy();
    clients.sqs.destroy();
    clients.s3.destroy();
  }
}
