/**
 * The whole local runtime (emulators in memory, scheduler, worker pools, HTTP API) on a free
 * port, quiet, for tests that drive it over HTTP as a user would.
 */
import { parseConfig } from '../../lambda/core/config.ts';
import { type LocalServer, startLocalServer } from '../../lambda/local/server.ts';

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
