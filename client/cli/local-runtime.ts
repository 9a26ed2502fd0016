/**
 * Finding the local runtime (`npm start`, `tasks dev`) from the command line: the runtime writes
 * DATA_DIR/runtime.json while it runs (local/runtime-file.ts), so commands run beside it, with
 * the same DATA_DIR (default .data), find its API on whatever port and its emulators, as they
 * find a stack's resources on AWS.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { RUNTIME_FILE, type RuntimeDescription } from '../../local/runtime-file.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** Where a local runtime on this DATA_DIR describes itself. */
export function localRuntimeFile(env: Env): string {
  return resolve(env.DATA_DIR || '.data', RUNTIME_FILE);
}

/** What a running local runtime wrote to DATA_DIR/runtime.json; undefined when none runs. */
export function readLocalRuntime(env: Env): RuntimeDescription | undefined {
  let description: RuntimeDescription;
  try {
    description = JSON.parse(readFileSync(localRuntimeFile(env), 'utf8')) as RuntimeDescription;
  } catch {
    return undefined;
  }
  try {
    process.kill(description.pid, 0);
  } catch (error) {
    // EPERM: alive, another user's; anything else: left by a runtime that was killed.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  return description;
}
