/**
 * Test fixtures for the example task types: the in-process emulators with the example stores,
 * and a real TaskContext (abort signal, heartbeat counter, recording logger).
 */
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import type { TaskContext, TaskServices } from '../../runtime/task-types/define.ts';
import { ensureExampleResources } from '../../runtime/task-types/examples/resources.ts';
import type { ExampleResourceNames } from '../../runtime/task-types/examples/stores.ts';

export interface ExampleEnv {
  readonly emulators: Emulators;
  readonly names: ExampleResourceNames;
  readonly services: TaskServices;
  readonly bucket: string;
}

export async function startExampleEnv(): Promise<ExampleEnv> {
  const emulators = await startEmulators({ prefix: 'test' });
  const names = await ensureExampleResources(emulators.clients, 'test');
  const { documents, dynamodb, s3 } = emulators.clients;
  return {
    emulators,
    names,
    services: { aws: { documents, dynamodb, s3 }, resources: names },
    bucket: names['example-data'],
  };
}

export interface LogLine {
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
  readonly extra?: Record<string, unknown>;
}

export interface TestContext {
  readonly ctx: TaskContext;
  readonly controller: AbortController;
  readonly logs: LogLine[];
  /** Heartbeats so far. */
  heartbeats(): number;
}

let nextTask = 1;

export function makeContext(
  services: TaskServices,
  options: { type: string; taskId?: string; attempt?: number; onHeartbeat?: (count: number) => void | Promise<void> },
): TestContext {
  const controller = new AbortController();
  const logs: LogLine[] = [];
  let heartbeats = 0;
  const log =
    (level: LogLine['level']) =>
    (message: string, extra?: Record<string, unknown>): void => {
      logs.push({ level, message, ...(extra ? { extra } : {}) });
    };
  const taskId = options.taskId ?? `task-${nextTask++}`;
  const ctx: TaskContext = {
    taskId,
    tenantId: 'tenant-test',
    type: options.type,
    idempotencyKey: taskId,
    attempt: options.attempt ?? 1,
    maxAttempts: 3,
    fence: 1,
    signal: controller.signal,
    async heartbeat() {
      heartbeats += 1;
      await options.onHeartbeat?.(heartbeats);
    },
    logger: { info: log('info'), warn: log('warn'), error: log('error') },
    services,
  };
  return { ctx, controller, logs, heartbeats: () => heartbeats };
}

export async function readObject(env: ExampleEnv, key: string): Promise<Uint8Array> {
  const object = await env.emulators.clients.s3.send(new GetObjectCommand({ Bucket: env.bucket, Key: key }));
  const bytes = await object.Body?.transformToByteArray();
  if (!bytes) throw new Error(`Object ${key} has no body`);
  return bytes;
}

export async function listKeys(env: ExampleEnv, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await env.emulators.clients.s3.send(
      new ListObjectsV2Command({ Bucket: env.bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
    token = page.NextContinuationToken;
  } while (token);
  return keys.sort();
}
