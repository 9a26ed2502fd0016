#!/usr/bin/env node
/**
 * `npm start`: the whole scheduler on this machine. See README "Running locally" and
 * `npm start -- --help` (local/start.ts, shared with the installed package's `tasks dev`).
 */
import { consoleLogger, logLevelFrom } from '../local/console-logger.ts';
import { isStartRefusal, runLocalSystem, startSettings, startUsage } from '../local/start.ts';

async function main(): Promise<void> {
  const logger = consoleLogger({ level: logLevelFrom(process.env.LOG_LEVEL) });
  const settings = await startSettings(process.argv.slice(2), process.env, 'npm start');
  if (!settings) {
    console.log(startUsage('npm start'));
    return;
  }
  await runLocalSystem(settings, logger, 'npm start');
}

main().catch((error) => {
  console.error(isStartRefusal(error) ? error.message : error);
  process.exit(1);
});
