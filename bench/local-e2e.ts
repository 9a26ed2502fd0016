/**
 * Local end to end vs the local limit. No-op tasks (demo.echo) through the whole local runtime
 * over HTTP (API → DynamoDB + tier queue → scheduler → worker queue → worker), next to the same
 * DynamoDB and SQS calls issued directly against a fresh pair of the same emulators with no
 * scheduler logic: the floor any design making these calls could reach on this machine.
 *
 * Floor, per task: PutItem (create) + SendMessageBatch (tier) from 16 concurrent submitters; one
 * dispatch loop: ReceiveMessage (tier, 10) → PutItem (dispatch) each → SendMessageBatch (worker)
 * → DeleteMessageBatch (tier); one worker loop (≤ 50 in flight): ReceiveMessage (worker, 10) →
 * PutItem (start) → PutItem (succeed) each → DeleteMessageBatch (worker). Three conditional
 * writes per task and no reads: the floor keeps every task in memory.
 */

import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEmulators } from '../local/emulators.ts';
import type { ReceivedMessage, TierMessage, WorkerMessage } from '../runtime/adapters/queues.ts';
import { buildServices } from '../runtime/app/wiring.ts';
import { createTask, dispatch, start, succeed } from '../runtime/core/lifecycle.ts';
import type { Task } from '../runtime/core/task.ts';
import { TASKS_TABLE, tierQueue, workerQueue } from '../runtime/infra/resources.ts';
import {
  type BenchOptions,
  benchConfig,
  fetchTimes,
  fmt,
  isMain,
  machineLoad,
  percentile,
  ratio,
  type SubmitSpec,
  startCountedServer,
  submit,
  submitAll,
  textTable,
  writeBarChart,
} from './lib.ts';
import { CallCounter, type CallStat, formatCallTable } from './metering/call-counter.ts';

const SUBMIT_CONCURRENCY = 16;
const TENANTS = 5;

export interface PhaseResult {
  readonly tasks: number;
  readonly seconds: number;
  readonly tasksPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuMsPerTask: number;
  readonly stats: Map<string, CallStat>;
}

function phaseResult(
  tasks: number,
  seconds: number,
  cpu: NodeJS.CpuUsage,
  waits: number[],
  stats: Map<string, CallStat>,
): PhaseResult {
  return {
    tasks,
    seconds,
    tasksPerSecond: tasks / seconds,
    p50Ms: percentile(waits, 50),
    p99Ms: percentile(waits, 99),
    cpuMsPerTask: (cpu.user + cpu.system) / 1000 / tasks,
    stats,
  };
}

export interface LocalE2EResult {
  readonly ours: PhaseResult;
  readonly floor: PhaseResult;
  readonly paced: {
    readonly rate: number;
    readonly p50Ms: number;
    readonly p99Ms: number;
    readonly floorP50Ms: number;
    readonly floorP99Ms: number;
  };
}

const specs = (n: number): SubmitSpec[] =>
  Array.from({ length: n }, (_, i) => ({ tenantId: `tenant-${i % TENANTS}`, payload: { i } }));

/** Saturated: submit `n` tasks with 16 requests in flight and wait for every one to finish. */
async function runOurs(
  n: number,
  pacedN: number,
): Promise<{ saturated: PhaseResult; paced: { rate: number; p50Ms: number; p99Ms: number } }> {
  const run = await startCountedServer(benchConfig());
  try {
    const { url } = run.server;
    // Warm up (JIT, connections, the scheduler's lease) outside the measured window.
    const warm = run.finished(40);
    await submitAll(url, specs(40), SUBMIT_CONCURRENCY);
    await warm;
    await sleep(300);

    run.counter.reset();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const done = run.finished(n);
    const submitted = await submitAll(url, specs(n), SUBMIT_CONCURRENCY);
    await done;
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const stats = run.counter.snapshot();
    const times = await fetchTimes(
      url,
      submitted.map((s) => s.taskId),
    );
    const waits = times.map((t) => t.waitMs);
    const saturated = phaseResult(n, seconds, cpu, waits, stats);

    // Paced: an open-loop stream at half the saturated rate, the latency a lightly loaded system gives.
    const rate = Math.max(1, saturated.tasksPerSecond / 2);
    const pacedDone = run.finished(pacedN);
    const ids = await paced(pacedN, rate, async (spec) => (await submit(url, spec)).taskId);
    await pacedDone;
    const pacedWaits = (await fetchTimes(url, ids)).map((t) => t.waitMs);
    return { saturated, paced: { rate, p50Ms: percentile(pacedWaits, 50), p99Ms: percentile(pacedWaits, 99) } };
  } finally {
    await run.stop();
  }
}

/** Submit one task every 1/rate seconds (open loop: a slow submit does not delay the next). */
async function paced(n: number, rate: number, send: (spec: SubmitSpec) => Promise<string>): Promise<string[]> {
  const all = specs(n);
  const t0 = performance.now();
  const pending: Promise<string>[] = [];
  for (let i = 0; i < n; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(send(all[i]!));
  }
  return Promise.all(pending);
}

/** The same calls, issued directly: see the header. */
async function runFloor(n: number, pacedN: number, pacedRate: number) {
  const emulators = await startEmulators();
  const config = benchConfig();
  const services = buildServices({
    config,
    clients: emulators.clients,
    resources: { tables: emulators.tables, queueUrls: emulators.queueUrls },
  });
  const { store, queues } = services;
  const counter = new CallCounter({ indexes: { [emulators.tables.tasks ?? 'tasks']: TASKS_TABLE.indexes } });
  counter.attach(emulators.clients.dynamodb, emulators.clients.sqs);
  const tasks = new Map<string, Task>();
  const startedAt = new Map<string, number>();
  let running = true;
  let finished = 0;
  let onFinished: (() => void) | undefined;
  const tierId = tierQueue('normal').id;
  const workerId = workerQueue('lambda').id;

  const submitOne = async (spec: SubmitSpec) => {
    const now = new Date();
    const task = createTask(
      randomUUID(),
      {
        tenantId: spec.tenantId,
        type: 'demo.echo',
        payload: spec.payload,
        priority: 'normal',
        resources: { vcpu: 0.25, memoryMiB: 512 },
        runtime: 'lambda',
        timeoutSeconds: 300,
        maxAttempts: 3,
      },
      now,
    );
    await store.create(task);
    tasks.set(task.taskId, task);
    await queues.announce([task], now);
    return task.taskId;
  };

  const dispatcher = (async () => {
    while (running) {
      const messages: ReceivedMessage<TierMessage>[] = await queues.receive<TierMessage>(tierId, {
        max: 10,
        waitSeconds: 1,
        visibilitySeconds: 120,
      });
      if (messages.length === 0) continue;
      const dispatched = await Promise.all(
        messages.map(async ({ body }) => {
          const task = await store.apply(dispatch(tasks.get(body.taskId)!, new Date(), 120));
          tasks.set(task.taskId, task);
          return task;
        }),
      );
      await queues.sendToWorkers(
        'lambda',
        dispatched.map((t) => ({ taskId: t.taskId, fence: t.fence, tenantId: t.tenantId, type: t.type })),
      );
      await queues.delete(
        tierId,
        messages.map((m) => m.receiptHandle),
      );
    }
  })();

  let inFlight = 0;
  let wake: (() => void) | undefined;
  const worker = (async () => {
    while (running) {
      const free = 50 - inFlight;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        continue;
      }
      const messages = await queues.receive<WorkerMessage>(workerId, {
        max: Math.min(10, free),
        waitSeconds: 1,
        visibilitySeconds: 60,
      });
      if (messages.length === 0) continue;
      inFlight += messages.length;
      void Promise.all(
        messages.map(async ({ body }) => {
          const now = new Date();
          startedAt.set(body.taskId, now.getTime());
          const runningTask = await store.apply(start(tasks.get(body.taskId)!, body.fence, now, 60));
          const result = { echo: runningTask.payload };
          const done = await store.apply(succeed(runningTask, body.fence, new Date(), result));
          tasks.set(done.taskId, done);
        }),
      ).then(async () => {
        await queues.delete(
          workerId,
          messages.map((m) => m.receiptHandle),
        );
        inFlight -= messages.length;
        finished += messages.length;
        wake?.();
        wake = undefined;
        onFinished?.();
      });
    }
  })();

  const waitFor = (target: number) =>
    new Promise<void>((resolve) => {
      onFinished = () => {
        if (finished >= target) resolve();
      };
      onFinished();
    });
  const waitsOf = (ids: readonly string[]) =>
    ids.map((id) => startedAt.get(id)! - Date.parse(tasks.get(id)!.submittedAt));

  try {
    // Warm up as for ours.
    let target = 40;
    const warmIds: string[] = [];
    for (const spec of specs(40)) warmIds.push(await submitOne(spec));
    await waitFor(target);
    await sleep(300);

    counter.reset();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    target += n;
    const all = specs(n);
    const ids: string[] = new Array(n);
    let next = 0;
    await Promise.all(
      Array.from({ length: SUBMIT_CONCURRENCY }, async () => {
        while (next < n) {
          const index = next++;
          ids[index] = await submitOne(all[index]!);
        }
      }),
    );
    await waitFor(target);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const stats = counter.snapshot();
    const waits = waitsOf(ids);
    const saturated = phaseResult(n, seconds, cpu, waits, stats);
    target += pacedN;
    const pacedIds = await paced(pacedN, pacedRate, submitOne);
    await waitFor(target);
    const pacedWaits = waitsOf(pacedIds);
    return { saturated, pacedP50: percentile(pacedWaits, 50), pacedP99: percentile(pacedWaits, 99) };
  } finally {
    running = false;
    await Promise.all([dispatcher, worker]);
    await emulators.stop();
  }
}

export async function runLocalE2E(options: BenchOptions): Promise<LocalE2EResult> {
  const n = options.quick ? 400 : 2000;
  const pacedN = options.quick ? 100 : 400;
  console.log(
    `\n## Local end to end vs the local limit (${n} demo.echo tasks, ${TENANTS} tenants, lambda pool 50; ${await machineLoad()})`,
  );
  const ours = await runOurs(n, pacedN);
  const floor = await runFloor(n, pacedN, ours.paced.rate);
  const o = ours.saturated;
  const f = floor.saturated;
  const rows = [
    ['', 'ours (HTTP → runtime)', 'floor (same calls)', 'ours / floor'],
    ['throughput, tasks/s', fmt(o.tasksPerSecond), fmt(f.tasksPerSecond), ratio(o.tasksPerSecond, f.tasksPerSecond)],
    ['saturated submit→start p50, ms', fmt(o.p50Ms, 0), fmt(f.p50Ms, 0), ratio(o.p50Ms, f.p50Ms)],
    ['saturated submit→start p99, ms', fmt(o.p99Ms, 0), fmt(f.p99Ms, 0), ratio(o.p99Ms, f.p99Ms)],
    [
      `paced (${fmt(ours.paced.rate)}/s) submit→start p50, ms`,
      fmt(ours.paced.p50Ms, 0),
      fmt(floor.pacedP50, 0),
      ratio(ours.paced.p50Ms, floor.pacedP50),
    ],
    [
      `paced (${fmt(ours.paced.rate)}/s) submit→start p99, ms`,
      fmt(ours.paced.p99Ms, 0),
      fmt(floor.pacedP99, 0),
      ratio(ours.paced.p99Ms, floor.pacedP99),
    ],
    ['process CPU ms per task', fmt(o.cpuMsPerTask, 2), fmt(f.cpuMsPerTask, 2), ratio(o.cpuMsPerTask, f.cpuMsPerTask)],
    ['AWS calls per task', fmt(callsPerTask(o), 2), fmt(callsPerTask(f), 2), ratio(callsPerTask(o), callsPerTask(f))],
  ];
  console.log(textTable(rows));
  console.log(
    '\nWhere the time goes, ours (per SDK operation: calls per task, mean latency, share of summed call time):',
  );
  console.log(formatCallTable(o.stats, o.tasks));
  console.log('\nWhere the time goes, floor:');
  console.log(formatCallTable(f.stats, f.tasks));
  writeBarChart('local-e2e-throughput.svg', 'No-op tasks per second, one run (higher is better)', 'tasks/s', [
    { label: 'ours: HTTP → full runtime', value: o.tasksPerSecond },
    { label: 'floor: same calls, no logic', value: f.tasksPerSecond, color: '#9d9d9d' },
  ]);
  writeBarChart('local-e2e-latency.svg', 'Submit → start, ms, one run (lower is better)', 'ms', [
    { label: 'ours saturated p50', value: o.p50Ms },
    { label: 'floor saturated p50', value: f.p50Ms, color: '#9d9d9d' },
    { label: 'ours saturated p99', value: o.p99Ms },
    { label: 'floor saturated p99', value: f.p99Ms, color: '#9d9d9d' },
    { label: 'ours paced p50', value: ours.paced.p50Ms },
    { label: 'floor paced p50', value: floor.pacedP50, color: '#9d9d9d' },
    { label: 'ours paced p99', value: ours.paced.p99Ms },
    { label: 'floor paced p99', value: floor.pacedP99, color: '#9d9d9d' },
  ]);
  return {
    ours: o,
    floor: f,
    paced: { ...ours.paced, floorP50Ms: floor.pacedP50, floorP99Ms: floor.pacedP99 },
  };
}

const callsPerTask = (phase: PhaseResult) =>
  [...phase.stats.values()].reduce((sum, s) => sum + s.count, 0) / phase.tasks;

if (isMain(import.meta.url)) await runLocalE2E({ quick: process.argv.includes('--quick') });
