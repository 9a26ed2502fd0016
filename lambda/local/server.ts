/**
 * The local runtime with its HTTP API and example data stores: what `npm start` runs and what
 * the end-to-end tests drive over HTTP.
 */
import type { SchedulerConfig } from '../core/config.ts';
import { dashboardRoutes } from '../dashboard/routes.ts';
import type { TaskLogger, TaskTypeRegistry } from '../task-types/define.ts';
import { ensureExampleResources } from '../task-types/examples/resources.ts';
import { seedExampleData } from '../task-types/examples/seed-data.ts';
import type { AttemptOutcome } from '../worker/run-attempt.ts';
import { startHttpServer } from './http-server.ts';
import { type LocalRuntime, startLocalRuntime } from './runtime.ts';

export interface LocalServerOptions {
  readonly config: SchedulerConfig;
  readonly dataDir?: string;
  readonly port?: number;
  readonly host?: string;
  readonly logger?: TaskLogger;
  /** Create the example bucket and tables and write sample data. Default true. */
  readonly examples?: boolean;
  readonly summaryEverySeconds?: number;
  readonly onOutcome?: (outcome: AttemptOutcome) => void;
  /** Task types to run (the default registry when absent). */
  readonly registry?: TaskTypeRegistry;
  /** Serve the dashboard at GET / (and /index.html). Default true. */
  readonly dashboard?: boolean;
}

export interface LocalServer {
  readonly url: string;
  readonly runtime: LocalRuntime;
  stop(): Promise<void>;
}

export async function startLocalServer(options: LocalServerOptions): Promise<LocalServer> {
  const withExamples = options.examples ?? true;
  const runtime = await startLocalRuntime({
    config: options.config,
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.summaryEverySeconds === undefined ? {} : { summaryEverySeconds: options.summaryEverySeconds }),
    ...(options.onOutcome ? { onOutcome: options.onOutcome } : {}),
    ...(options.registry ? { registry: options.registry } : {}),
    taskServices: async (clients) => {
      if (!withExamples) return { aws: clients };
      const resources = await ensureExampleResources(clients, 'examples');
      await seedExampleData(clients, resources);
      return { aws: clients, resources };
    },
  });
  const http = await startHttpServer({
    services: runtime.services,
    port: options.port ?? 3000,
    host: options.host ?? '127.0.0.1',
    ...(options.dashboard === false ? {} : { extraRoutes: dashboardRoutes }),
  });
  return {
    url: http.url,
    runtime,
    async stop() {
      await http.close();
      await runtime.stop();
    },
  };
}
