/**
 * Fair intake on the live local stack (issue 11, "Done when"): one tenant's 1,500 tasks queued
 * ahead of quiet tenants, through the whole local runtime over HTTP (API → DynamoDB + tier queue →
 * scheduler's intake → worker queue → worker), in a fresh data folder on a free port.
 *
 * Every task is `demo.sleep` holding its Lambda-pool slot for a fixed time, so the pool's pace is
 * `pool size / task duration` tasks per second. The flooding tenant's `maxConcurrency` is set
 * above the pool (the pool, not its quota, is its limit); quiet tenants keep the default quota.
 * Once the flood is queued, quiet tenants submit a few tasks each, spread over the flood's drain.
 *
 * Printed, from one run: quiet tasks' submit→start latency p50/p99/max (from the task records'
 * `submittedAt`/`startedAt`, read through the API), the flood's drain rate over the middle 80 %
 * of its starts beside the pool's pace, the most receives of any one tier-queue message (counted
 * by message id on the runtime's SQS client), and the wall time.
 *
 * Then, in the same run, the baseline: the same tasks dealt round-robin over 20 tenants (each
 * quota above the pool), whose drain is the pace the pool delivers on this machine, slot
 * turnaround included; `flood drain / baseline drain` is the flooding tenant's share of it.
 *
 *   npm run bench -- intake-live [--quick] [--flood N] [--pool SLOTS] [--task-ms MS] [--no-baseline]
 *   node --experimental-strip-types bench/intake-live.ts [same flags]
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLocalServer } from '../local/server.ts';
import { isTerminal } from '../runtime/core/task.ts';
import { TIER_QUEUES } from '../runtime/infra/resources.ts';
import {
  type BenchOptions,
  benchConfig,
  fetchTimes,
  fmt,
  isMain,
  machineLoad,
  percentile,
  type SubmitSpec,
  silentLogger,
  submit,
  submitAll,
  type TaskTimes,
  textTable,
} from './lib.ts';

const SUBMIT_CONCURRENCY = 16;
const FLOOD_TENANT = 'flood';
/** Tenants the baseline deals the flood's tasks over. */
const BASELINE_TENANTS = 20;

export interface IntakeLiveOptions {
  readonly floodTasks: number;
  readonly quietTenants: number;
  readonly quietTasksPerTenant: number;
  /** Lambda pool size (slots). */
  readonly pool: number;
  /** How long each task holds its slot. */
  readonly taskMs: number;
  /** Quiet submissions are spread over this share of the flood's expected drain time. */
  readonly quietSpread: number;
  /**
   * Tenants the flood is dealt round-robin to (default 1). Above 1 it is the baseline: the same
   * work with no single tenant behind it, so its drain is the pace the pool delivers here.
   */
  readonly floodTenants?: number;
}

export interface IntakeLiveResult {
  readonly options: IntakeLiveOptions;
  readonly flood: readonly TaskTimes[];
  readonly quiet: readonly TaskTimes[];
  /** Quiet submit → start, ms. */
  readonly quietWaitMs: { readonly p50: number; readonly p99: number; readonly max: number };
  /** Flood starts per second over the middle 80 % of its starts. */
  readonly floodDrainPerSecond: number;
  /** pool / task duration, tasks per second. */
  readonly poolPacePerSecond: number;
  /** Quiet tasks that started after the flood's last task started (0 when the intake is fair). */
  readonly quietStartedAfterFlood: number;
  /** The most ReceiveMessage deliveries of one tier-queue message. */
  readonly maxReceivesPerTierMessage: number;
  readonly tierMessagesReceived: number;
  /** Tier receives that returned messages, their mean size, and announcements received per second over their span. */
  readonly announcementReceives: { readonly calls: number; readonly meanMessages: number; readonly perSecond: number };
  /** Quiet submit (task record) → its announcement first received by the scheduler, ms. */
  readonly quietAnnouncementWaitMs: readonly number[];
  readonly wallSeconds: number;
  /** CPU time of this process (runtime, emulators and the bench's own HTTP client), seconds. */
  readonly cpuSeconds: number;
  /** Attempts that ended otherwise than SUCCEEDED (state and error), expected empty. */
  readonly notSucceeded: readonly string[];
}

export const FULL: IntakeLiveOptions = {
  floodTasks: 1500,
  quietTenants: 20,
  quietTasksPerTenant: 3,
  pool: 20,
  taskMs: 1000,
  quietSpread: 0.6,
};

export const QUICK: IntakeLiveOptions = {
  floodTasks: 300,
  quietTenants: 10,
  quietTasksPerTenant: 2,
  pool: 20,
  taskMs: 1000,
  quietSpread: 0.6,
};

/** Counts deliveries per tier-queue message id: an SDK middleware on the runtime's SQS client. */
function tierReceiveCounter(tierQueueUrls: ReadonlySet<string>) {
  const receives = new Map<string, number>();
  /** When the task's announcement was first received (wall clock, ms), by taskId. */
  const firstReceivedMs = new Map<string, number>();
  /** Tier receives that returned messages: wall clock (ms) and how many each returned. */
  const nonEmptyReceives: { atMs: number; messages: number }[] = [];
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's middleware generics differ per client.
  const middleware = (next: (args: any) => Promise<any>, context: any) => async (args: any) => {
    const result = await next(args);
    if (context.commandName === 'ReceiveMessageCommand' && tierQueueUrls.has(args.input?.QueueUrl)) {
      const count = result.output?.Messages?.length ?? 0;
      if (count > 0) nonEmptyReceives.push({ atMs: Date.now(), messages: count });
      for (const message of result.output?.Messages ?? []) {
        receives.set(message.MessageId, (receives.get(message.MessageId) ?? 0) + 1);
        const taskId = (JSON.parse(message.Body ?? '{}') as { taskId?: string }).taskId;
        if (taskId && !firstReceivedMs.has(taskId)) firstReceivedMs.set(taskId, Date.now());
      }
    }
    return result;
  };
  return { receives, firstReceivedMs, nonEmptyReceives, middleware };
}

/** One run: the flood (or, with `floodTenants` above 1, the baseline) and the quiet tenants. */
export async function runIntakeLiveOnce(options: IntakeLiveOptions): Promise<IntakeLiveResult> {
  const { floodTasks, quietTenants, quietTasksPerTenant, pool, taskMs } = options;
  const floodTenants = Array.from({ length: options.floodTenants ?? 1 }, (_, k) =>
    k === 0 ? FLOOD_TENANT : `${FLOOD_TENANT}-${k}`,
  );
  const quietCount = quietTenants * quietTasksPerTenant;
  const total = floodTasks + quietCount;
  const poolPacePerSecond = pool / (taskMs / 1000);
  const dataDir = mkdtempSync(join(tmpdir(), 'intake-live-'));
  let finished = 0;
  /** Attempts that did not succeed (a retry or a failure): none expected. */
  const notSucceeded: string[] = [];
  let onFinished: (() => void) | undefined;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const server = await startLocalServer({
    config: benchConfig({
      pools: { lambda: { concurrency: pool }, fargate: { vcpu: 16, memoryMiB: 32768 } },
      // Quiet tenants: the default quota. The flooder: above the pool, so the pool is its limit.
      tenantDefaults: { weight: 1, maxConcurrency: 10 },
      tenants: Object.fromEntries(floodTenants.map((id) => [id, { weight: 1, maxConcurrency: pool * 5 }])),
    }),
    dataDir,
    port: 0,
    examples: false,
    dashboard: false,
    summaryEverySeconds: 0,
    logger: silentLogger,
    onOutcome: (outcome) => {
      if (outcome.kind !== 'finished') return;
      if (outcome.task.state !== 'SUCCEEDED')
        notSucceeded.push(`${outcome.task.state}: ${outcome.task.error?.message}`);
      if (!isTerminal(outcome.task.state)) return;
      finished++;
      onFinished?.();
    },
  });
  const { emulators } = server.runtime;
  const tierUrls = new Set(TIER_QUEUES.map((queue) => emulators.queueUrls[queue.id]!));
  const counter = tierReceiveCounter(tierUrls);
  emulators.clients.sqs.middlewareStack.add(counter.middleware, { step: 'initialize', name: 'benchTierReceives' });
  const allFinished = new Promise<void>((resolve) => {
    onFinished = () => {
      if (finished >= total) resolve();
    };
  });

  try {
    const { url } = server;
    const sleepSpec = (tenantId: string): SubmitSpec => ({
      tenantId,
      type: 'demo.sleep',
      payload: { ms: taskMs },
      runtime: 'lambda',
    });
    const floodIds = (
      await submitAll(
        url,
        Array.from({ length: floodTasks }, (_, i) => sleepSpec(floodTenants[i % floodTenants.length]!)),
        SUBMIT_CONCURRENCY,
      )
    ).map((s) => s.taskId);

    // The flood is queued: quiet tenants now submit one task at a time, round-robin over tenants,
    // spread over a share of the flood's expected drain.
    const spreadMs = ((floodTasks / poolPacePerSecond) * 1000 * options.quietSpread) / quietCount;
    const quietStarted = performance.now();
    const quietIds = await Promise.all(
      Array.from({ length: quietCount }, async (_, i) => {
        const due = quietStarted + i * spreadMs;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        return (await submit(url, sleepSpec(`quiet-${i % quietTenants}`))).taskId;
      }),
    );
    await allFinished;
    const wallSeconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);

    const flood = await fetchTimes(url, floodIds);
    const quiet = await fetchTimes(url, quietIds);
    const quietWaits = quiet.map((t) => t.waitMs);
    const floodStarts = flood.map((t) => t.startedAtMs).sort((a, b) => a - b);
    const from = Math.floor(floodStarts.length * 0.1);
    const to = Math.ceil(floodStarts.length * 0.9) - 1;
    const floodDrainPerSecond = ((to - from) * 1000) / (floodStarts[to]! - floodStarts[from]!);
    const lastFloodStart = floodStarts[floodStarts.length - 1]!;
    const receives = [...counter.receives.values()];
    const calls = counter.nonEmptyReceives;
    const announced = calls.reduce((sum, call) => sum + call.messages, 0);
    const receiveSpanMs = calls.length > 1 ? calls[calls.length - 1]!.atMs - calls[0]!.atMs : Number.NaN;
    return {
      options,
      flood,
      quiet,
      quietWaitMs: { p50: percentile(quietWaits, 50), p99: percentile(quietWaits, 99), max: Math.max(...quietWaits) },
      floodDrainPerSecond,
      poolPacePerSecond,
      quietStartedAfterFlood: quiet.filter((t) => t.startedAtMs > lastFloodStart).length,
      maxReceivesPerTierMessage: receives.length === 0 ? 0 : Math.max(...receives),
      tierMessagesReceived: receives.length,
      announcementReceives: {
        calls: calls.length,
        meanMessages: announced / calls.length,
        perSecond: (announced * 1000) / receiveSpanMs,
      },
      quietAnnouncementWaitMs: quiet.map(
        (t) => (counter.firstReceivedMs.get(t.taskId) ?? Number.NaN) - t.submittedAtMs,
      ),
      wallSeconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      notSucceeded,
    };
  } finally {
    emulators.clients.sqs.middlewareStack.remove('benchTierReceives');
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function argNumber(name: string): number | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : Number(process.argv[at + 1]);
}

export async function runIntakeLive(options: BenchOptions): Promise<IntakeLiveResult> {
  const base = options.quick ? QUICK : FULL;
  const shape: IntakeLiveOptions = {
    ...base,
    floodTasks: argNumber('--flood') ?? base.floodTasks,
    pool: argNumber('--pool') ?? base.pool,
    taskMs: argNumber('--task-ms') ?? base.taskMs,
  };
  const loadBefore = await machineLoad();
  console.log(
    `\n## Fair intake, live local stack: ${shape.floodTasks} tasks of tenant "${FLOOD_TENANT}" (maxConcurrency ${shape.pool * 5}) ahead of ${shape.quietTenants} quiet tenants × ${shape.quietTasksPerTenant} (maxConcurrency 10); demo.sleep ${shape.taskMs} ms on a Lambda pool of ${shape.pool} (${loadBefore})`,
  );
  const result = await runIntakeLiveOnce(shape);
  // The baseline, in the same run: the same work dealt over many tenants, so that no tenant's
  // quota or window is the limit. Its drain is the pace this machine's pool actually delivers
  // (each slot also spends the completion → dispatch → start turnaround between tasks).
  const baseline = process.argv.includes('--no-baseline')
    ? undefined
    : await runIntakeLiveOnce({ ...shape, floodTenants: BASELINE_TENANTS });
  const floodSpan =
    (Math.max(...result.flood.map((t) => t.startedAtMs)) - Math.min(...result.flood.map((t) => t.submittedAtMs))) /
    1000;
  const spread = (label: string, values: readonly number[]) => [
    label,
    `${fmt(percentile(values, 50), 0)} / ${fmt(percentile(values, 99), 0)} / ${fmt(Math.max(...values), 0)}`,
  ];
  const rows = [
    ['', 'value'],
    ['quiet submit→start p50, ms', fmt(result.quietWaitMs.p50, 0)],
    ['quiet submit→start p99, ms', fmt(result.quietWaitMs.p99, 0)],
    ['quiet submit→start max, ms', fmt(result.quietWaitMs.max, 0)],
    spread(
      'quiet submit→dispatch p50 / p99 / max, ms',
      result.quiet.map((t) => t.dispatchedAtMs - t.submittedAtMs),
    ),
    spread('quiet submit→announcement received p50 / p99 / max, ms', result.quietAnnouncementWaitMs),
    spread(
      'quiet dispatch→start p50 / p99 / max, ms',
      result.quiet.map((t) => t.startedAtMs - t.dispatchedAtMs),
    ),
    spread(
      'flood dispatch→start p50 / p99 / max, ms',
      result.flood.map((t) => t.startedAtMs - t.dispatchedAtMs),
    ),
    ['quiet tasks started after the flood’s last start', `${result.quietStartedAfterFlood} of ${result.quiet.length}`],
    ['flood drain, starts/s (middle 80 % of its starts)', fmt(result.floodDrainPerSecond, 1)],
    [`pool pace, tasks/s (${shape.pool} slots / ${shape.taskMs} ms)`, fmt(result.poolPacePerSecond, 1)],
    ['flood drain / pool pace', `${(result.floodDrainPerSecond / result.poolPacePerSecond).toFixed(2)}×`],
    ...(baseline
      ? [
          [
            `baseline drain: the same tasks dealt over ${BASELINE_TENANTS} tenants, starts/s`,
            fmt(baseline.floodDrainPerSecond, 1),
          ],
          [
            'flood drain / baseline drain',
            `${(result.floodDrainPerSecond / baseline.floodDrainPerSecond).toFixed(2)}×`,
          ],
          // As many backlogged tenants as slots: ties at share 0 go to the older head (docs/policy.md, Limits).
          ['baseline quiet submit→start p99, ms (FIFO across tied tenants)', fmt(baseline.quietWaitMs.p99, 0)],
          [
            'baseline quiet submit→announcement received p99, ms',
            fmt(percentile(baseline.quietAnnouncementWaitMs, 99), 0),
          ],
          [
            'baseline tier messages received; announcements received per second',
            `${baseline.tierMessagesReceived}; ${fmt(baseline.announcementReceives.perSecond, 1)}`,
          ],
        ]
      : []),
    ['flood first submit → last start, s', fmt(floodSpan, 1)],
    ['tier messages received', String(result.tierMessagesReceived)],
    [
      'tier receives returning messages: calls, mean messages',
      `${result.announcementReceives.calls}, ${fmt(result.announcementReceives.meanMessages, 1)}`,
    ],
    ['announcements received per second (first to last)', fmt(result.announcementReceives.perSecond, 1)],
    ['max receives per tier message', String(result.maxReceivesPerTierMessage)],
    ['wall time, s', fmt(result.wallSeconds, 1)],
    [
      'process CPU, s (share of one core; ms per task)',
      `${fmt(result.cpuSeconds, 1)} (${fmt(result.cpuSeconds / result.wallSeconds, 2)}; ${fmt((result.cpuSeconds * 1000) / (result.flood.length + result.quiet.length), 1)})`,
    ],
  ];
  console.log(textTable(rows));
  if (result.notSucceeded.length > 0)
    console.log(`attempts not succeeded: ${result.notSucceeded.length}, first: ${result.notSucceeded[0]}`);
  console.log(`(${await machineLoad()} after the run)`);
  return result;
}

if (isMain(import.meta.url)) await runIntakeLive({ quick: process.argv.includes('--quick') });
