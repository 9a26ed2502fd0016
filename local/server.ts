/**
 * The local runtime with its HTTP API and example data stores: what `npm start` runs and what
 * the end-to-end tests drive over HTTP.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { dashboardRoutes } from '../client/dashboard/routes.ts';
import type { SchedulerConfig } from '../runtime/core/config.ts';
import type { TaskLogger } from '../runtime/core/logger.ts';
import type { TaskTypeRegistry } from '../runtime/task-types/define.ts';
import { ensureExampleResources } from '../runtime/task-types/examples/resources.ts';
import { seedExampleData } from '../runtime/task-types/examples/seed-data.ts';
import type { ExternalAws } from './external-aws.ts';
import { type HttpServer, startHttpServer } from './http-server.ts';
import type { OutcomeObserver } from './lambda-pool.ts';
import { type LocalRuntime, startLocalRuntime } from './runtime.ts';
import { RUNTIME_FILE, type RuntimeDescription } from './runtime-file.ts';

export interface LocalServerOptions {
  readonly config: SchedulerConfig;
  readonly dataDir?: string;
  readonly port?: number;
  readonly host?: string;
  /** Tables and queues at an AWS-compatible endpoint instead of the emulators (local/external-aws.ts). */
  readonly externalAws?: ExternalAws | undefined;
  readonly logger?: TaskLogger;
  /** Create the example bucket and tables and write sample data. Default true. */
  readonly examples?: boolean;
  readonly summaryEverySeconds?: number;
  /** Told of every settled attempt and where it ran (pool, and the Lambda pool's memory class). */
  readonly onOutcome?: OutcomeObserver;
  /** Task types to run (the default registry when absent). */
  readonly registry?: TaskTypeRegistry;
  /** Serve the dashboard at GET / (and /index.html). Default true. */
  readonly dashboard?: boolean;
  /** Finished tasks are deleted this long after they finish. Default 1 h (LOCAL_RETENTION_SECONDS). */
  readonly retentionSeconds?: number;
}

export interface LocalServer {
  readonly url: string;
  readonly runtime: LocalRuntime;
  stop(): Promise<void>;
}

export async function startLocalServer(options: LocalServerOptions): Promise<LocalServer> {
  const withExamples = options.examples ?? true;
  // A taken port is the common mistake (a second npm start): say so before starting everything.
  if (options.port) await probeListen(options.port, options.host ?? '127.0.0.1');
  const runtime = await startLocalRuntime({
    config: options.config,
    dataDir: options.dataDir,
    host: options.host,
    externalAws: options.externalAws,
    logger: options.logger,
    summaryEverySeconds: options.summaryEverySeconds,
    onOutcome: options.onOutcome,
    registry: options.registry,
    retentionSeconds: options.retentionSeconds,
    taskServices: async (clients) => {
      if (!withExamples) return { aws: clients };
      const resources = await ensureExampleResources(clients, 'examples');
      await seedExampleData(clients, resources);
      return { aws: clients, resources };
    },
  });
  let http: HttpServer;
  try {
    http = await startHttpServer({
      services: runtime.services,
      port: options.port ?? 3000,
      host: options.host ?? '127.0.0.1',
      ...(options.dashboard === false ? {} : { extraRoutes: dashboardRoutes }),
    });
  } catch (error) {
    await runtime.stop();
    throw error;
  }
  // DATA_DIR/runtime.json: how `tasks redrive` finds this runtime's queues and tables.
  const discovery = options.dataDir ? join(options.dataDir, RUNTIME_FILE) : undefined;
  if (discovery) writeFileSync(discovery, `${JSON.stringify(describeRuntime(http.url, runtime), null, 2)}\n`);
  return {
    url: http.url,
    runtime,
    async stop() {
      await http.close();
      if (discovery) rmSync(discovery, { force: true });
      await runtime.stop();
    },
  };
}

/** Rejects with listen's own error (EADDRINUSE, EACCES) when `host:port` cannot be bound now. */
async function probeListen(port: number, host: string): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

function describeRuntime(url: string, runtime: LocalRuntime): RuntimeDescription {
  const { emulators, services } = runtime;
  return {
    pid: process.pid,
    url,
    endpoints: {
      dynamodb: emulators.dynamodbUrl,
      sqs: emulators.sqsUrl,
      region: emulators.endpoints.region ?? 'us-east-1',
    },
    tables: emulators.tables,
    queueUrls: emulators.queueUrls,
    config: services.config,
  };
}
