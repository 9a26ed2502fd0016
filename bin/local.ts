#!/usr/bin/env node
/**
 * `npm start`: the whole scheduler on this machine. See README "Running locally".
 *   PORT (default 3000), HOST (default 127.0.0.1), DATA_DIR (default .data),
 *   --config PATH or SCHEDULER_CONFIG.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { consoleLogger } from '../local/console-logger.ts';
import { DataDirInUseError } from '../local/data-dir-lock.ts';
import { ExternalAwsError } from '../local/emulators.ts';
import { describeExternalAws, externalAwsFromEnvironment } from '../local/external-aws.ts';
import { configPathFrom, loadConfig } from '../local/load-config.ts';
import { startLocalServer } from '../local/server.ts';
import { LOCAL_RETENTION_SECONDS } from '../local/task-expiry.ts';
import { ConfigError } from '../runtime/core/errors.ts';

const USAGE = `Usage: npm start [-- --config PATH]

Runs the scheduler locally: embedded DynamoDB and SQS emulators, the HTTP API, the scheduler,
the Lambda and Fargate worker pools and the configured schedules.

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

Ctrl-C stops after the running tasks finish; a second Ctrl-C stops at once (those tasks are
recovered on the next start, as after a kill).`;

/** A refusal the user can act on: printed as one line, no stack. */
class StartError extends Error {}

const logger = consoleLogger();

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let help: boolean | undefined;
  try {
    // Strict: a mistyped option is refused, not ignored. Arguments are checked by configPathFrom.
    ({ help } = parseArgs({
      args: argv,
      options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    }).values);
  } catch (error) {
    throw new StartError(`${(error as Error).message}. See: npm start -- --help`);
  }
  if (help) {
    console.log(USAGE);
    return;
  }
  const { config, source } = loadConfig(configPathFrom(argv, process.env));
  const port = Number(process.env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new StartError(`PORT must be an integer 0-65535, got "${process.env.PORT}".`);
  }
  const host = process.env.HOST || '127.0.0.1';
  const retentionSeconds = Number(process.env.TASK_RETENTION_SECONDS ?? LOCAL_RETENTION_SECONDS);
  if (!Number.isInteger(retentionSeconds) || retentionSeconds < 1) {
    throw new StartError(
      `TASK_RETENTION_SECONDS must be a whole number of seconds, 1 or more, got "${process.env.TASK_RETENTION_SECONDS}".`,
    );
  }
  // AWS_ENDPOINT_URL (or per service): the tables and queues at that endpoint, no emulators.
  const externalAws = externalAwsFromEnvironment(process.env);
  if (externalAws) logger.info(describeExternalAws(externalAws));
  const dataDir = resolve(process.env.DATA_DIR || '.data');
  let server: Awaited<ReturnType<typeof startLocalServer>>;
  try {
    server = await startLocalServer({ config, dataDir, port, host, logger, retentionSeconds, externalAws });
  } catch (error) {
    if (error instanceof ExternalAwsError) throw new StartError(error.message);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new StartError(
        `Port ${port} on ${host} is already in use (another npm start?): stop it, or set PORT, e.g. PORT=${port + 1} npm start.`,
      );
    }
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new StartError(
        `Cannot listen on ${host}:${port} (${code}): set HOST and PORT to an address of this machine.`,
      );
    }
    throw error;
  }
  logger.info(`scheduler running at ${server.url}`, { config: source, dataDir, policy: config.policy });
  logger.info(
    `try: curl -s -X POST ${server.url}/v1/tasks -H 'content-type: application/json' -d '{"tenantId":"acme","type":"demo.sleep","payload":{"ms":500}}'`,
  );

  const running = () => server.runtime.workers.reduce((sum, worker) => sum + worker.inFlight, 0);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      // Like a kill: the tasks' leases lapse and the next start dispatches them again.
      logger.warn(
        `${signal} again: stopping now; ${plural(running(), 'running task')} will be recovered on the next start`,
      );
      process.exit(130);
    }
    stopping = true;
    const count = running();
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
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

main().catch((error) => {
  if (error instanceof StartError || error instanceof DataDirInUseError || error instanceof ConfigError) {
    console.error(error.message);
  } else {
    console.error(error);
  }
  process.exit(1);
});
