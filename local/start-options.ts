/**
 * The options of `npm start` and `tasks dev` and their help, apart from local/start.ts so the
 * installed `tasks` command can describe `tasks dev` without loading the emulators.
 */

/** The two commands that start the local system, as the user typed them (for messages). */
export type StartCommandName = 'npm start' | 'tasks dev';

export const START_OPTIONS = {
  config: { type: 'string' },
  'task-types': { type: 'string', multiple: true },
  port: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const START_SUMMARY = `Runs the scheduler locally: embedded DynamoDB and SQS emulators, the HTTP API, the scheduler,
the Lambda and Fargate worker pools and the configured schedules`;

/** Options, environment and Ctrl-C, as both commands' help prints them. */
export const START_HELP = `Options:
  --task-types PATH  a task module: a .js/.mjs/.ts file whose default export is an array of task
                     types made with defineTaskType; repeat for more modules. Its types run
                     beside the built-in ones and are checked before anything starts
  --config PATH      configuration file (default $SCHEDULER_CONFIG, else config/default.json)
  --port N           HTTP port (default $PORT, else 3000)

Environment:
  PORT              HTTP port (default 3000)
  HOST              bind address of the HTTP API and the emulators (default 127.0.0.1)
  DATA_DIR          where state persists (default .data); a restart resumes every task
  SCHEDULER_CONFIG  configuration file (default config/default.json)
  TASK_RETENTION_SECONDS
                    how long finished tasks are kept before they expire (default 3600; on AWS
                    DynamoDB's TTL expires them after 30 days)
  AWS_ENDPOINT_URL  an AWS-compatible endpoint (moto_server, LocalStack) to keep the tables,
                    queues and the examples' bucket at, instead of the embedded emulators
                    (created where missing); or per service: AWS_ENDPOINT_URL_DYNAMODB,
                    AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_S3 (all three). AWS_REGION (default
                    us-east-1) and credentials as for the AWS CLI (dummy ones when none are set)
  LOG_LEVEL         debug (every state change of every task), info (default: a line per
                    finished task, fewer under load, and a summary), warn, error or silent

Ctrl-C stops after the running tasks finish; a second Ctrl-C stops at once (those tasks are
recovered on the next start, as after a kill).`;

export function startSynopsis(command: StartCommandName): string {
  return command === 'npm start'
    ? 'npm start [-- [--task-types PATH ...] [--config PATH] [--port N]]'
    : 'tasks dev [--task-types PATH ...] [--config PATH] [--port N]';
}

export function startUsage(command: StartCommandName): string {
  return `Usage: ${startSynopsis(command)}

${START_SUMMARY}.

${START_HELP}`;
}
