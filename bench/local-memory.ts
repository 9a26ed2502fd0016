/**
 * Local runtime memory over many tasks (issue 15): no-op tasks (demo.echo) through the whole
 * local runtime, persisted to a data folder as `npm start` runs it, printing after every 10,000
 * finished tasks the process RSS, the V8 heap, the data folder's size and how many tasks the
 * table still holds, and the ratio of RSS to RSS at 20,000 tasks (the end of warm-up) in the same
 * run. With the local task expiry (local/task-expiry.ts) finished tasks are deleted after
 * the retention, and with dynalite's iterators closed (local/dynalite-iterators.ts) LevelDB
 * can drop the files they held, so memory and disk level off after warm-up instead of growing
 * with every task.
 *
 * The bench's retention is 30 s, not the runtime's default hour: at the 20–120 tasks/s this runs at here,
 * an hour's retention is ~70,000 tasks held, so warm-up would take most of a 100,000-task run.
 * What is measured is whether memory grows with tasks *processed* once the held set is steady;
 * that steady set scales with the retention (`--retention` to try another).
 *
 * `--store-only` drives the same emulators, task service, store transitions and expiry without
 * the scheduler and worker loops (each task: submit → its tier message received and deleted →
 * dispatch, start, succeed written as the runtime writes them), many times faster on a busy
 * machine; it measures what the tasks leave behind in the emulators, not the loops' own memory.
 *
 *   npm run bench -- local-memory [--quick] [--tasks N] [--step N] [--retention SECONDS] [--no-expiry] [--store-only]
 *   node --experimental-strip-types bench/local-memory.ts [same flags]
 */

import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { startEmulators } from '../local/emulators.ts';
import { startLocalRuntime } from '../local/runtime.ts';
import { startTaskExpiry } from '../local/task-expiry.ts';
import { buildServices, type Services } from '../runtime/app/wiring.ts';
import { dispatch, start, succeed } from '../runtime/core/lifecycle.ts';
import { type BenchOptions, benchConfig, fmt, isMain, machineLoad, silentLogger } from './lib.ts';

const SUBMIT_CONCURRENCY = 16;
/** Submitted but unfinished tasks at most: the bench measures retention, not a backlog. */
const MAX_BACKLOG = 2_000;
/** Tasks after which memory should stay flat; the ratios are taken against the row here. */
const WARM_UP_TASKS = 20_000;

export interface MemoryRow {
  readonly finished: number;
  readonly rssMiB: number;
  readonly heapMiB: number;
  /** Memory of C++ objects bound to JS objects (Buffers, SQLite and LevelDB handles). */
  readonly externalMiB: number;
  /** The whole data folder, and its DynamoDB (LevelDB) and SQS (SQLite) parts. */
  readonly dataMiB: number;
  readonly dynamodbMiB: number;
  readonly sqsMiB: number;
  readonly tasksHeld: number;
  readonly tasksPerSecond: number;
}

function argValue(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

function folderBytes(path: string): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    total += entry.isDirectory() ? folderBytes(full) : statSync(full).size;
  }
  return total;
}

const MiB = 1024 * 1024;

export async function runLocalMemory(options: BenchOptions): Promise<MemoryRow[]> {
  const total = Number(argValue('--tasks') ?? (options.quick ? 20_000 : 100_000));
  const retentionSeconds = Number(argValue('--retention') ?? 30);
  const expiry = !process.argv.includes('--no-expiry');
  const storeOnly = process.argv.includes('--store-only');
  const STEP = Number(argValue('--step') ?? 10_000);
  const warmTarget = warmUpTarget(total, STEP);
  const dataDir = mkdtempSync(join(tmpdir(), 'local-memory-'));
  let finished = 0;
  const keepForever = 10 * 365 * 86_400;
  const runtime = storeOnly
    ? await startStoreOnly(dataDir, expiry ? retentionSeconds : keepForever)
    : await startLocalRuntime({
        config: benchConfig(),
        dataDir,
        logger: silentLogger,
        summaryEverySeconds: 0,
        // Without expiry: a retention longer than the run, as before the local TTL existed.
        retentionSeconds: expiry ? retentionSeconds : keepForever,
        onOutcome: (outcome) => {
          if (outcome.kind === 'finished' && outcome.task.state === 'SUCCEEDED') finished++;
        },
      });
  const { services } = runtime;
  process.stdout.write(
    `${total} no-op tasks${storeOnly ? ' (store only)' : ' (whole runtime)'}, data in ${dataDir}, ${expiry ? `finished tasks expire after ${retentionSeconds} s` : 'no expiry'}; ${await machineLoad()}\n`,
  );
  const rows: MemoryRow[] = [];
  const header =
    'finished  rss MiB  heap MiB  external MiB  data MiB  dynamodb MiB  sqs MiB  tasks held  tasks/s  rss/rss@warm';
  process.stdout.write(`${header}\n`);

  const tasksHeld = async () => {
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await services.clients.documents.send(
        new ScanCommand({ TableName: services.store.tableName, Select: 'COUNT', ExclusiveStartKey: startKey }),
      );
      count += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return count;
  };

  let submitted = 0;
  const submitters = Array.from({ length: SUBMIT_CONCURRENCY }, async (_, worker) => {
    while (submitted < total) {
      if (submitted - finished >= MAX_BACKLOG) {
        await sleep(20);
        continue;
      }
      submitted++;
      const { task } = await services.tasks.submit({
        tenantId: `tenant-${worker % 5}`,
        type: 'demo.echo',
        payload: { n: submitted },
      });
      if (storeOnly) {
        await runLikeTheRuntime(services, task.taskId);
        finished++;
      }
    }
  });
  const drain = storeOnly ? drainTierQueue(services, () => finished >= total) : Promise.resolve();

  const progress = setInterval(() => {
    process.stderr.write(`  … ${finished} finished, ${submitted} submitted\n`);
  }, 15_000);
  progress.unref();
  let stepStarted = Date.now();
  for (let target = STEP; target <= total; target += STEP) {
    while (finished < target) await sleep(100);
    const seconds = (Date.now() - stepStarted) / 1000;
    stepStarted = Date.now();
    const memory = process.memoryUsage();
    const row: MemoryRow = {
      finished: target,
      rssMiB: memory.rss / MiB,
      heapMiB: memory.heapUsed / MiB,
      externalMiB: memory.external / MiB,
      dataMiB: folderBytes(dataDir) / MiB,
      dynamodbMiB: folderBytes(join(dataDir, 'dynamodb')) / MiB,
      sqsMiB: folderBytes(join(dataDir, 'sqs')) / MiB,
      tasksHeld: await tasksHeld(),
      tasksPerSecond: STEP / seconds,
    };
    rows.push(row);
    const warm = warmRow(rows, warmTarget);
    process.stdout.write(
      `${String(row.finished).padStart(8)}  ${fmt(row.rssMiB, 0).padStart(7)}  ${fmt(row.heapMiB, 0).padStart(8)}  ${fmt(row.externalMiB, 0).padStart(12)}  ${fmt(row.dataMiB, 1).padStart(8)}  ${fmt(row.dynamodbMiB, 1).padStart(12)}  ${fmt(row.sqsMiB, 1).padStart(7)}  ${String(row.tasksHeld).padStart(10)}  ${fmt(row.tasksPerSecond, 0).padStart(7)}  ${(warm ? fmt(row.rssMiB / warm.rssMiB, 2) : 'n/a').padStart(13)}\n`,
    );
  }
  clearInterval(progress);
  await Promise.all([...submitters, drain]);
  await runtime.stop();
  rmSync(dataDir, { recursive: true, force: true });

  const warm = warmRow(rows, warmTarget) ?? rows[0]!;
  const last = rows.at(-1)!;
  process.stdout.write(
    `flatness after warm-up (${warm.finished} → ${last.finished} tasks): rss ×${fmt(last.rssMiB / warm.rssMiB, 2)}, heap ×${fmt(last.heapMiB / warm.heapMiB, 2)}, data ×${fmt(last.dataMiB / warm.dataMiB, 2)}, tasks held ×${fmt(last.tasksHeld / Math.max(1, warm.tasksHeld), 2)}\n`,
  );
  return rows;
}

/**
 * How many finished tasks warm-up ends at, the row the flatness ratios divide by: 20,000 (the
 * second row at the default step), or the second row of a shorter run, or its first when the
 * second is its last (the quick run's 20,000 tasks: a ratio of the last row to itself said
 * nothing). By then the table holds its steady number of tasks (finished ones expire
 * `--retention` seconds after finishing) and the caches are full.
 */
export function warmUpTarget(total: number, step: number): number {
  const target = total >= 2 * WARM_UP_TASKS ? WARM_UP_TASKS : 2 * step;
  return target >= total ? step : target;
}

/** The warm-up row once the run has reached it. */
function warmRow(rows: readonly MemoryRow[], target: number): MemoryRow | undefined {
  return rows.find((row) => row.finished >= target);
}

/** The emulators, services and task expiry of the local runtime, without its loops. */
async function startStoreOnly(dataDir: string, retentionSeconds: number) {
  const emulators = await startEmulators({ dataDir });
  const services = buildServices({
    config: benchConfig(),
    clients: emulators.clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
  });
  const expiry = startTaskExpiry({
    documents: emulators.clients.documents,
    tableName: services.store.tableName,
    retentionSeconds,
    logger: {
      info() {},
      warn: (message, extra) => process.stderr.write(`${message} ${JSON.stringify(extra)}\n`),
      error() {},
    },
  });
  return {
    services,
    async stop() {
      await expiry.stop();
      await emulators.stop();
    },
  };
}

/** The three writes the scheduler and a worker make for a no-op task. */
async function runLikeTheRuntime(services: Services, taskId: string): Promise<void> {
  const dispatched = await services.store.transition(taskId, (t) => dispatch(t, new Date(), 120));
  await services.store.transition(taskId, (t) => start(t, dispatched.fence, new Date(), 60), { known: dispatched });
  await services.store.transition(taskId, (t) => succeed(t, dispatched.fence, new Date(), { echo: t.payload }));
}

/** Receive and delete the tier messages submits send (the scheduler's part), so queues stay empty. */
async function drainTierQueue(services: Services, done: () => boolean): Promise<void> {
  while (!done()) {
    const messages = await services.queues.receive('tier-normal', { waitSeconds: 1 });
    if (messages.length > 0) {
      await services.queues.delete(
        'tier-normal',
        messages.map((message) => message.receiptHandle),
      );
    }
  }
}

if (isMain(import.meta.url)) await runLocalMemory({ quick: process.argv.includes('--quick') });
