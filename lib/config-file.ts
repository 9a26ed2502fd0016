import { readFileSync } from 'node:fs';
import { parseConfig, type SchedulerConfig } from '../runtime/core/config.ts';

/**
 * The scheduler configuration from a JSON file, validated: the same file `npm start` and
 * `tasks dev --config` read. Throws an Error naming the file and every problem.
 */
export function loadConfig(file: string): SchedulerConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`Cannot read the scheduler configuration ${file}: ${reason}`, { cause: error });
  }
  return parseConfig(raw, `configuration ${file}`);
}
