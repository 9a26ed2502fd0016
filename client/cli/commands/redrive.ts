/**
 * `tasks redrive`: the dead-letter queues, directly with AWS credentials (deployed) or on the
 * emulators of a running `npm start` (local), through the same code as the redrive Lambda.
 */
import type { RuntimeDescription } from '../../../local/runtime-file.ts';
import { ENV } from '../../../runtime/infra/resources.ts';
import type { RedriveReport } from '../../../runtime/ops/redrive.ts';
import { type Command, type CommandContext, integer, noPositionals, oneOf, str, UsageError } from '../command.ts';
import { localRuntimeFile, readLocalRuntime } from '../local-runtime.ts';

export const redriveCommand: Command = {
  summary: 'Redrive the dead-letter queues (operators, with AWS credentials)',
  usage: 'tasks redrive [--mode move|settle] [--queues ID,ID] [--limit N]',
  help: `Works on the queues (and, to settle, the tables) directly with your AWS credentials, not
through the HTTP API. It reads the resource names the stack sets on every function:
  QUEUE_URLS          JSON object, queue id -> URL (required)
  QUEUE_URL_PREFIX, SCHEDULER_CONFIG_JSON   every scheduler shard's queues (scheduler.shards > 1)
  TASKS_TABLE, CONTROL_TABLE, SCHEDULER_CONFIG_JSON or SCHEDULER_CONFIG   (--mode settle)
Copy them from any of the stack's functions (aws lambda get-function-configuration).
AWS credentials, region and endpoints: the SDK's default chain, as for the aws CLI.
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
      if (local) return redriveLocal(ctx, await redriveModules(), local, mode, limit);
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
    const m = await redriveModules();
    // Every scheduler shard's queues: QUEUE_URLS names shard 0's, QUEUE_URL_PREFIX the others'
    // (the configuration's shards), as the stack's functions find them.
    let queueUrls: Record<string, string>;
    try {
      queueUrls = m.queueUrlsFromEnvironment(env);
    } catch (error) {
      if (error instanceof SyntaxError)
        throw new UsageError(`${ENV.queueUrls} must be a JSON object of queue id -> URL`, ctx.name);
      throw error;
    }
    const config = m.configFromEnvironment(env);
    // Credentials, region and endpoints come from the SDK's default chain (AWS_PROFILE, SSO,
    // AWS_REGION, AWS_ENDPOINT_URL_SQS, …), as for the aws CLI; --region overrides the region.
    const clients = m.createAwsClients({ region: str(ctx, 'region') });
    const services =
      mode === 'settle' ? m.buildServices({ config, clients, resources: m.resourcesFromEnvironment(env) }) : undefined;
    return redriveAndReport(ctx, m, { sqs: clients.sqs, queueUrls, config, mode, limit, services });
  },
};

/**
 * The redrive Lambda's code and the AWS SDK clients, loaded when the command runs: they are
 * optional peer dependencies of the installed package, absent from a client-only install.
 */
async function redriveModules() {
  const [clients, wiring, ops] = await Promise.all([
    import('../../../runtime/adapters/aws-clients.ts'),
    import('../../../runtime/app/wiring.ts'),
    import('../../../runtime/ops/redrive.ts'),
  ]);
  return { ...clients, ...wiring, ...ops };
}
type RedriveModules = Awaited<ReturnType<typeof redriveModules>>;

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

/** Redrive (deployed or local alike), print the report; exit code 1 when a queue had errors. */
async function redriveAndReport(
  ctx: CommandContext,
  m: RedriveModules,
  input: {
    sqs: ReturnType<RedriveModules['createAwsClients']>['sqs'];
    queueUrls: Record<string, string>;
    /** Its scheduler shards are the tier queues redriven. */
    config: Parameters<RedriveModules['redriveDeadLetters']>[0]['config'];
    mode: 'move' | 'settle';
    limit: number | undefined;
    services: ReturnType<RedriveModules['buildServices']> | undefined;
  },
): Promise<number> {
  const { services } = input;
  const report = await m.redriveDeadLetters({
    sqs: input.sqs,
    typeQueues: Object.values(m.typeQueuesFromEnvironment(ctx.io.env ?? process.env)),
    queueUrls: input.queueUrls,
    mode: input.mode,
    queueIds: str(ctx, 'queues')?.split(',').filter(Boolean),
    limit: input.limit,
    store: services?.store,
    queues: services?.queues,
    config: input.config,
  });
  ctx.print(report, () => formatRedrive(report));
  return report.queues.some((queue) => queue.errors > 0) ? 1 : 0;
}

async function redriveLocal(
  ctx: CommandContext,
  m: RedriveModules,
  local: RuntimeDescription,
  mode: 'move' | 'settle',
  limit: number | undefined,
): Promise<number> {
  const clients = m.createAwsClients({
    ...m.localEndpoints(local.endpoints.dynamodb, local.endpoints.sqs),
    // An npm start against an external endpoint keeps its queues in that endpoint's region.
    ...(local.endpoints.region ? { region: local.endpoints.region } : {}),
  });
  try {
    const services =
      mode === 'settle'
        ? m.buildServices({
            config: local.config,
            clients,
            resources: { tables: local.tables, queueUrls: local.queueUrls },
          })
        : undefined;
    return await redriveAndReport(ctx, m, {
      sqs: clients.sqs,
      queueUrls: local.queueUrls,
      config: local.config,
      mode,
      limit,
      services,
    });
  } finally {
    clients.dynamodb.destroy();
    clients.sqs.destroy();
    clients.s3.destroy();
  }
}
