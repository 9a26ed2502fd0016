/**
 * The local runtime in this process with the test's own task types, on a free port, quiet, without
 * the example stores: what the live end-to-end tests start, and how they call its HTTP API.
 */
import { consoleLogger } from '../../local/console-logger.ts';
import { type LocalServer, startLocalServer } from '../../local/server.ts';
import { parseConfig } from '../../runtime/core/config.ts';
import { type AnyTaskTypeDefinition, TaskTypeRegistry } from '../../runtime/task-types/define.ts';

/** `slots` Lambda slots, a quota of as many per tenant, and a small Fargate pool. */
export function startTestServer(types: readonly AnyTaskTypeDefinition[], slots: number): Promise<LocalServer> {
  return startLocalServer({
    config: parseConfig({
      pools: { lambda: { concurrency: slots }, fargate: { vcpu: 1, memoryMiB: 2048 } },
      tenantDefaults: { weight: 1, maxConcurrency: slots },
    }),
    port: 0,
    examples: false,
    summaryEverySeconds: 0,
    logger: consoleLogger({ quiet: true }),
    registry: new TaskTypeRegistry(types),
  });
}

/** One JSON request to the server at `url()`: its status and parsed body. */
export function apiOf(url: () => string) {
  return async <T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const response = await fetch(`${url()}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as T };
  };
}
