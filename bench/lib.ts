/**
 * Shared pieces of the benchmarks: the local runtime with a call counter on its clients, an HTTP
 * load driver, percentiles, and hand-rolled SVG bar charts (no dependencies).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerPlacement } from '../local/lambda-pool.ts';
import { type LocalServer, startLocalServer } from '../local/server.ts';
import { type Bar, horizontalBarChart } from '../report/chart.ts';
import { formatTable } from '../report/table.ts';
import { type ConfigInput, parseConfig, type SchedulerConfig } from '../runtime/core/config.ts';
import type { TaskLogger } from '../runtime/core/logger.ts';
import { TASKS_TABLE } from '../runtime/infra/resources.ts';
import type { AttemptOutcome } from '../runtime/worker/run-attempt.ts';
import { CallCounter } from './metering/call-counter.ts';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const CHART_DIR = join(ROOT, 'docs', 'bench');

export interface BenchOptions {
  readonly quick: boolean;
}

export const silentLogger: TaskLogger = { info() {}, warn() {}, error() {} };

/** A benchmark configuration: defaults, with overrides (pools, tenants) per scenario. */
export function benchConfig(overrides: Partial<ConfigInput> = {}): SchedulerConfig {
  return parseConfig({
    policy: 'fair-share',
    agingSeconds: 300,
    pools: { lambda: { concurrency: 50 }, fargate: { vcpu: 16, memoryMiB: 32768 } },
    tenantDefaults: { weight: 1, maxConcurrency: 50 },
    ...overrides,
  });
}

export interface CountedServer {
  readonly server: LocalServer;
  readonly counter: CallCounter;
  /** Resolves when `n` more attempts have finished (counted from the call). */
  finished(n: number): Promise<void>;
  readonly outcomes: AttemptOutcome[];
  /** Where each finished attempt ran (pool, and the Lambda pool's memory class), in finishing order. */
  readonly placements: WorkerPlacement[];
  stop(): Promise<void>;
}

/** The whole local runtime over HTTP, with the counter on its DynamoDB and SQS clients. */
export async function startCountedServer(config: SchedulerConfig): Promise<CountedServer> {
  const outcomes: AttemptOutcome[] = [];
  const placements: WorkerPlacement[] = [];
  const waiters: { target: number; resolve: () => void }[] = [];
  let done = 0;
  const server = await startLocalServer({
    config,
    port: 0,
    examples: false,
    summaryEverySeconds: 0,
    logger: silentLogger,
    onOutcome: (outcome, where) => {
      outcomes.push(outcome);
      if (outcome.kind !== 'finished') return;
      placements.push(where);
      done++;
      for (const waiter of waiters.filter((w) => w.target <= done)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    },
  });
  const { clients, tables } = server.runtime.emulators;
  const counter = new CallCounter({ indexes: { [tables.tasks ?? 'tasks']: TASKS_TABLE.indexes } });
  // The document client shares the DynamoDB client's middleware stack.
  counter.attach(clients.dynamodb, clients.sqs);
  return {
    server,
    counter,
    outcomes,
    placements,
    finished(n: number) {
      const target = done + n;
      if (target <= done) return Promise.resolve();
      return new Promise<void>((resolve) => waiters.push({ target, resolve }));
    },
    stop: () => server.stop(),
  };
}

export interface SubmitSpec {
  readonly tenantId: string;
  readonly type?: string;
  readonly payload?: unknown;
  readonly priority?: 'critical' | 'high' | 'normal' | 'low';
  readonly runtime?: 'lambda' | 'fargate';
  readonly resources?: { readonly vcpu: number; readonly memoryMiB: number };
  /** Do not start before this many seconds from the submit. */
  readonly delaySeconds?: number;
}

export interface SubmittedTask {
  readonly taskId: string;
  readonly spec: SubmitSpec;
}

export async function submit(url: string, spec: SubmitSpec): Promise<SubmittedTask> {
  const response = await fetch(`${url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'demo.echo', payload: { n: 1 }, ...spec }),
  });
  const body = (await response.json()) as { taskId?: string; error?: unknown };
  if (response.status !== 202 || !body.taskId)
    throw new Error(`submit refused: ${response.status} ${JSON.stringify(body)}`);
  return { taskId: body.taskId, spec };
}

/**
 * Submit every spec through POST /v1/tasks/batch, `size` a request (a batch is one tenant's: the
 * specs are grouped by tenant first), at most `concurrency` requests in flight.
 */
export async function submitBatches(
  url: string,
  specs: readonly SubmitSpec[],
  size: number,
  concurrency: number,
): Promise<SubmittedTask[]> {
  const bodies: SubmitSpec[][] = [];
  for (const group of Map.groupBy(specs, (spec) => spec.tenantId).values()) {
    for (let from = 0; from < group.length; from += size) bodies.push(group.slice(from, from + size));
  }
  const submitted: SubmittedTask[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, bodies.length) }, async () => {
      while (next < bodies.length) {
        const batch = bodies[next++]!;
        const response = await fetch(`${url}/v1/tasks/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ tasks: batch.map((spec) => ({ type: 'demo.echo', payload: { n: 1 }, ...spec })) }),
        });
        const body = (await response.json()) as { results?: ({ taskId: string } | { error: unknown })[] };
        const refused = body.results?.find((result) => 'error' in result);
        if (response.status !== 200 || !body.results || refused) {
          throw new Error(`batch refused: ${response.status} ${JSON.stringify(refused ?? body)}`);
        }
        body.results.forEach((result, i) => {
          submitted.push({ taskId: (result as { taskId: string }).taskId, spec: batch[i]! });
        });
      }
    }),
  );
  return submitted;
}

/** Submit every spec with at most `concurrency` requests in flight. */
export async function submitAll(url: string, specs: readonly SubmitSpec[], concurrency: number) {
  const submitted: SubmittedTask[] = new Array(specs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, specs.length) }, async () => {
      while (next < specs.length) {
        const index = next++;
        submitted[index] = await submit(url, specs[index]!);
      }
    }),
  );
  return submitted;
}

export interface TaskTimes {
  readonly taskId: string;
  readonly tenantId: string;
  readonly priority: string;
  /** startedAt − submittedAt, ms. */
  readonly waitMs: number;
  readonly startedAtMs: number;
  readonly submittedAtMs: number;
  /** When the scheduler dispatched the attempt that started (NaN if the record has none). */
  readonly dispatchedAtMs: number;
}

/** The API's view of each task (after the measured window, so these reads are not counted). */
export async function fetchTimes(url: string, taskIds: readonly string[], concurrency = 8): Promise<TaskTimes[]> {
  const times: TaskTimes[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < taskIds.length) {
        const taskId = taskIds[next++]!;
        const response = await fetch(`${url}/v1/tasks/${taskId}`);
        const task = (await response.json()) as Record<string, string>;
        if (!task.startedAt) throw new Error(`task ${taskId} has not started (${task.state})`);
        const startedAtMs = Date.parse(task.startedAt);
        const submittedAtMs = Date.parse(task.submittedAt!);
        times.push({
          taskId,
          tenantId: task.tenantId!,
          priority: task.priority!,
          waitMs: startedAtMs - submittedAtMs,
          startedAtMs,
          submittedAtMs,
          dispatchedAtMs: task.dispatchedAt ? Date.parse(task.dispatchedAt) : Number.NaN,
        });
      }
    }),
  );
  return times;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const fmt = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

export function ratio(ours: number, theirs: number): string {
  if (!Number.isFinite(ours) || !Number.isFinite(theirs) || theirs === 0) return 'n/a';
  return `${(ours / theirs).toFixed(2)}×`;
}

/** Load average and CPU count, printed with each run (the machine is shared). */
export async function machineLoad(): Promise<string> {
  const os = await import('node:os');
  const [one, five] = os.loadavg();
  return `load avg ${fmt(one ?? 0, 2)} / ${fmt(five ?? 0, 2)} on ${os.availableParallelism()} cores`;
}

export type { Bar };

/** A horizontal bar chart (report/chart.ts) as a standalone SVG under docs/bench/. */
export function writeBarChart(file: string, title: string, unit: string, bars: readonly Bar[]): string {
  mkdirSync(CHART_DIR, { recursive: true });
  const path = join(CHART_DIR, file);
  writeFileSync(path, `${horizontalBarChart(title, unit, bars)}\n`);
  return path;
}

/** Plain text columns, the first left-aligned and the figures right-aligned; the first row heads them. */
export function textTable([headers = [], ...rows]: readonly (readonly string[])[]): string {
  return formatTable(headers, rows, { align: (column) => (column === 0 ? 'left' : 'right') });
}

/** True when this module is the script node was started with. */
export function isMain(moduleUrl: string): boolean {
  return process.argv[1] !== undefined && fileURLToPath(moduleUrl) === process.argv[1];
}
