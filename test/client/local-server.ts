/**
 * The whole local runtime (emulators in memory, scheduler, worker pools, HTTP API) on a free
 * port, quiet, for tests that drive it over HTTP as a user would.
 */

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
