/**
 * Finds and validates the configuration file for the local runtime and the command-line tools:
 * `--config PATH`, else `SCHEDULER_CONFIG`, else `config/default.json` when present, else the
 * built-in defaults. Errors name the file and every offending key.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseConfig, type SchedulerConfig } from '../runtime/core/config.ts';
import { ConfigError } from '../runtime/core/errors.ts';

export const DEFAULT_CONFIG_PATH = 'config/default.json';

/**
 * The configuration file to read: `flag` (`--config PATH`), else what npm kept of a `--config`
 * given without `--`, else SCHEDULER_CONFIG, else config/default.json when present. Arguments
 * left over (`positionals`) are refused, except the path npm passed on.
 */
export function configPathFrom(
  flag: string | undefined,
  positionals: readonly string[],
  env: NodeJS.ProcessEnv,
): string | undefined {
  if (flag !== undefined) {
    if (!flag) throw new ConfigError('--config needs a path', { problems: ['--config: missing path'] });
    if (positionals.length > 0) throw unexpected(positionals);
    return flag;
  }
  const fromNpm = npmConfigFlag(env, positionals);
  if (fromNpm) return fromNpm;
  if (positionals.length > 0) throw unexpected(positionals);
  if (env.SCHEDULER_CONFIG) return env.SCHEDULER_CONFIG;
  return existsSync(DEFAULT_CONFIG_PATH) ? DEFAULT_CONFIG_PATH : undefined;
}

function unexpected(positionals: readonly string[]): ConfigError {
  return new ConfigError(`Unexpected argument ${positionals.join(' ')}; the configuration is given as --config PATH`, {
    problems: positionals.map((arg) => `${arg}: unexpected argument`),
  });
}

/**
 * `npm start --config x.json` (no `--`): npm keeps the flag for itself, as the boolean
 * npm_config_config=true, and passes `x.json` on as an argument; `npm start --config=x.json`
 * sets npm_config_config=x.json and passes nothing. Both are honoured rather than silently
 * running the default configuration.
 */
function npmConfigFlag(env: NodeJS.ProcessEnv, positionals: readonly string[]): string | undefined {
  const flag = env.npm_config_config;
  if (!flag || !env.npm_lifecycle_event) return undefined;
  if (flag !== 'true') return flag;
  if (positionals.length === 1) return positionals[0];
  throw new ConfigError('--config needs a path: npm start -- --config PATH', { problems: ['--config: missing path'] });
}

export function loadConfig(path: string | undefined): { config: SchedulerConfig; source: string } {
  if (!path) return { config: parseConfig({}, 'built-in defaults'), source: 'built-in defaults' };
  const absolute = resolve(path);
  let text: string;
  try {
    text = readFileSync(absolute, 'utf8');
  } catch (error) {
    throw new ConfigError(`Cannot read configuration file ${absolute}: ${(error as Error).message}`, {
      problems: [`${path}: unreadable`],
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`Configuration file ${absolute} is not valid JSON: ${(error as Error).message}`, {
      problems: [`${path}: invalid JSON`],
    });
  }
  return { config: parseConfig(raw, absolute), source: absolute };
}
