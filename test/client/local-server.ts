/**
 * The whole local runtime (emulators in memory, scheduler, worker pools, HTTP API) on a free
 * port, quiet, for tests that drive it over HTTP as a user would.
 */

import { type CliIo, runCli } from '../../client/cli/run.ts';
import { type LocalServer, startLocalServer } from '../../local/server.ts';
import { parseConfig } from '../../runtime/core/config.ts';

const quiet = { info() {}, warn() {}, error() {} };

export async function startQuietServer(): Promise<LocalServer> {
  return startLocalServer({
    config: parseConfig({}, 'test configuration'),
    port: 0,
    examples: false,
    summaryEverySeconds: 0,
    logger: quiet,
  });
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the CLI in-process against the server at `url()` (via SCHEDULER_ENDPOINT, as a user would), output captured. */
export function cliAgainst(url: () => string) {
  return async (argv: string[], io: Partial<CliIo> = {}): Promise<CliRun> => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(argv, {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
      env: { SCHEDULER_ENDPOINT: url() },
      ...io,
    });
    return { code, stdout, stderr };
  };
}
