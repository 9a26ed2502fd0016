#!/usr/bin/env node
/**
 * `npm start`: the whole scheduler on this machine. See README "Running locally".
 *   PORT (default 3000), DATA_DIR (default .data), --config PATH or SCHEDULER_CONFIG.
 */
import { resolve } from 'node:path';
import { ConfigError } from '../lambda/core/errors.ts';
import { consoleLogger } from '../lambda/local/console-logger.ts';
import { configPathFrom, loadConfig } from '../lambda/local/load-config.ts';
import { startLocalServer } from '../lambda/local/server.ts';

const logger = consoleLogger();

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(`Usage: npm start [-- --config PATH]

Runs the scheduler locally: embedded DynamoDB and SQS emulators, the HTTP API, the scheduler,
the Lambda and Fargate worker pools and the configured schedules.

Environment:
  PORT              HTTP port (default 3000)
  HOST              HTTP bind address (default 127.0.0.1)
  DATA_DIR          where state persists (default .data); a restart resumes every task
  SCHEDULER_CONFIG  configuration file (default config/default.json)`);
    return;
  }
  const { config, source } = loadConfig(configPathFrom(process.argv.slice(2), process.env));
  const port = Number(process.env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new Error(`PORT must be 0-65535, got ${process.env.PORT}`);
  const dataDir = resolve(process.env.DATA_DIR ?? '.data');
  const server = await startLocalServer({ config, dataDir, port, host: process.env.HOST ?? '127.0.0.1', logger });
  logger.info(`scheduler running at ${server.url}`, { config: source, dataDir, policy: config.policy });
  logger.info(
    `try: curl -s -X POST ${server.url}/v1/tasks -H 'content-type: application/json' -d '{"tenantId":"acme","type":"demo.sleep","payload":{"ms":500}}'`,
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      logger.warn('forced exit');
      process.exit(1);
    }
    stopping = true;
    logger.info(`${signal}: stopping (running tasks finish or are recovered on next start)`);
    await server.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((error) => {
  if (error instanceof ConfigError) {
    console.error(error.message);
  } else {
    console.error(error);
  }
  process.exit(1);
});
