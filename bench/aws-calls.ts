/**
 * AWS calls and cost per task. N no-op tasks through the local runtime over HTTP with the call
 * counter on every client; prints calls per task by service and operation, what the idle runtime
 * calls per second, and the cost per million tasks at list prices beside the same workload on a
 * minimal Step Functions Standard state machine.
 *
 * The local pools run the same store, queue and attempt code as the Lambda and Fargate workers,
 * so the calls counted here are the calls made on AWS, with one difference: on AWS the Lambda
 * event source mapping receives and deletes the worker messages (still billed as SQS requests;
 * the local Lambda pool deletes and reports one message at a time, as the mapping does). The
 * cost is for the Lambda pool; the same tasks on the Fargate pool are counted after it.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import { LAMBDA_ENTRY_CLASS, LAMBDA_WORKER } from '../runtime/infra/resources.ts';
import { defaultStackIdleCost, printIdleCost } from './idle-cost.ts';
import {
  type BenchOptions,
  benchConfig,
  fmt,
  isMain,
  machineLoad,
  type SubmitSpec,
  startCountedServer,
  submitAll,
  submitBatches,
  writeBarChart,
} from './lib.ts';
import {
  type CallStat,
  costPerMillionTasks,
  formatCallTable,
  formatCost,
  formatSqsByQueue,
  STEP_FUNCTIONS_MINIMAL,
  stepFunctionsUsage,
  usageFromCalls,
} from './metering/call-counter.ts';
import { workerLambdaUsage } from './metering/lambda-workers.ts';
import { NO_OP_TASK_EVENTS, taskEventsUsage } from './metering/task-events.ts';

/**
 * Lambda durations are not measured locally; they are modelled from the calls each function
 * makes in sequence at typical in-region latencies (DynamoDB ~6 ms, SQS ~12 ms) plus 5 ms.
 */
const AWS_LATENCY_MS = { DynamoDB: 6, SQS: 12 } as const;
const API_MEMORY_GB = 0.5; // lib/task-api.ts
/** Tasks per batch request in the batched measurement (the pinned line's "batches of 100"). */
const BATCH_OF = 100;
export interface AwsCallsResult {
  readonly tasks: number;
  readonly callsPerTask: number;
  readonly fargateCallsPerTask: number;
  readonly stats: Map<string, CallStat>;
  readonly idleCallsPerSecond: number;
  readonly oursUsdPerMillion: number;
  readonly oursBatchedUsdPerMillion: number;
  readonly stepFunctionsUsdPerMillion: number;
}

export async function runAwsCalls(options: BenchOptions & { readonly byQueue?: boolean }): Promise<AwsCallsResult> {
  const n = options.quick ? 300 : 2000;
  console.log(`\n## AWS calls and cost per task (${n} demo.echo tasks over HTTP; ${await machineLoad()})`);
  const run = await startCountedServer(benchConfig());
  try {
    const { url } = run.server;
    const specs = (count: number): SubmitSpec[] =>
      Array.from({ length: count }, (_, i) => ({ tenantId: `tenant-${i % 5}`, payload: { i } }));
    const warm = run.finished(20);
    await submitAll(url, specs(20), 8);
    await warm;
    await sleep(500);

    // Idle: what the runtime calls per second with nothing to do (scheduler polls, snapshots).
    run.counter.reset();
    const idleSeconds = options.quick ? 5 : 15;
    await sleep(idleSeconds * 1000);
    const idle = run.counter.snapshot();
    const idleCalls = [...idle.values()].reduce((sum, s) => sum + s.count, 0) / idleSeconds;

    run.counter.reset();
    const firstPlacement = run.placements.length;
    const t0 = performance.now();
    const done = run.finished(n);
    await submitAll(url, specs(n), 16);
    await done;
    const seconds = (performance.now() - t0) / 1000;
    const stats = run.counter.snapshot();
    const calls = [...stats.values()].reduce((sum, s) => sum + s.count, 0);
    // The memory class each measured attempt ran in (the local Lambda pool places as deployed).
    const classes = run.placements.slice(firstPlacement).map((where) => where.memoryMiB ?? LAMBDA_WORKER.memoryMiB);

    console.log(formatCallTable(stats, n));
    console.log(`(${n} tasks in ${fmt(seconds)} s; the per-time calls below are included pro rata)`);

    // The same tasks submitted in batches of 100 (POST /v1/tasks/batch, issue 25): one API request,
    // one submit invocation and 10 announcement sends per 100 tasks, plus the batch's own items
    // and each member's count (adapters/batch-store.ts).
    await sleep(500);
    run.counter.reset();
    const batchedDone = run.finished(n);
    // Whole batches: a batch holds one tenant's tasks, so the tasks go to tenants BATCH_OF at a time
    // (with specs(n)'s 5 tenants the batches of 300 tasks were 60 each).
    const batchSpecs = Array.from({ length: n }, (_, i) => ({
      tenantId: `tenant-${Math.floor(i / BATCH_OF) % 5}`,
      payload: { i },
    }));
    await submitBatches(url, batchSpecs, BATCH_OF, 4);
    await batchedDone;
    const batchedStats = run.counter.snapshot();
    console.log(`\nThe same ${n} tasks submitted in batches of ${BATCH_OF} (POST /v1/tasks/batch):`);
    console.log(formatCallTable(batchedStats, n));
    if (options.byQueue) console.log(`\n${formatSqsByQueue(run.counter.sqsByQueue(), n)}`);

    // The same tasks on the Fargate pool: its long-polling workers batch deletes and reports.
    await sleep(500);
    run.counter.reset();
    const fargateDone = run.finished(n);
    await submitAll(
      url,
      specs(n).map((spec) => ({ ...spec, runtime: 'fargate' as const })),
      16,
    );
    await fargateDone;
    await sleep(100); // the last partial delete and report batches
    const fargateStats = run.counter.snapshot();
    const fargateCalls = [...fargateStats.values()].reduce((sum, s) => sum + s.count, 0);
    console.log(`\nThe same ${n} tasks on the Fargate pool (deletes and completion reports batched across attempts):`);
    console.log(formatCallTable(fargateStats, n));
    console.log(
      `Calls per task, Fargate pool / Lambda pool: ${fmt(fargateCalls / n, 2)} / ${fmt(calls / n, 2)} = ${fmt(fargateCalls / calls, 2)}×`,
    );
    console.log(`\nIdle runtime: ${fmt(idleCalls)} calls/s:`);
    console.log(
      [...idle]
        .sort((a, b) => b[1].count - a[1].count)
        .map(([key, s]) => `  ${key.padEnd(32)}${fmt(s.count / idleSeconds, 2).padStart(8)} /s`)
        .join('\n'),
    );

    // Sequential calls per function, for the modelled Lambda durations.
    const per = (key: string) => (stats.get(key)?.count ?? 0) / n;
    const apiMs = 5 + AWS_LATENCY_MS.DynamoDB * 1 + AWS_LATENCY_MS.SQS * 1;
    const workerDynamo = 2 + per('DynamoDB.GetItem'); // start + settle, plus any read before start
    const workerMs = 5 + AWS_LATENCY_MS.DynamoDB * workerDynamo + AWS_LATENCY_MS.SQS * 1;
    const worker = workerLambdaUsage(classes, workerMs);
    const workerGbSeconds = worker.gbSeconds;
    const ours = costPerMillionTasks({
      ...usageFromCalls(stats, n),
      apiRequests: 1,
      // The submit API function, the worker (batch size 1) and the entry's hand-offs.
      lambdaInvocations: 1 + worker.invocations,
      lambdaGbSeconds: (API_MEMORY_GB * apiMs) / 1000 + workerGbSeconds,
    });
    const sfn = costPerMillionTasks(stepFunctionsUsage({ workerGbSeconds }));
    const byClass = [...Map.groupBy(classes, (memoryMiB) => memoryMiB)]
      .sort((a, b) => a[0] - b[0])
      .map(([memoryMiB, ran]) => `${ran.length} at ${memoryMiB} MiB`)
      .join(', ');
    console.log(
      `\nModelled Lambda durations: submit ${fmt(apiMs, 0)} ms at ${API_MEMORY_GB} GB, worker ${fmt(workerMs, 0)} ms in the task's memory class (DynamoDB ${AWS_LATENCY_MS.DynamoDB} ms, SQS ${AWS_LATENCY_MS.SQS} ms a call).`,
    );
    console.log(
      `Worker memory classes of the ${n} tasks, as the local Lambda pool placed them: ${byClass}; ${fmt(100 * worker.handedOff, 0)}% handed on by the ${LAMBDA_ENTRY_CLASS.memoryMiB} MiB entry.`,
    );
    console.log(formatCost('\nOurs, per million no-op tasks (variable costs):', ours));
    console.log(`ours per million tasks: $${fmt(ours.usdPerMillionTasks, 2)}`);
    // A batch request's modelled duration: the batch's items (two rounds), the creates (25 to a
    // BatchExecuteStatement call, 16 calls side by side: one round up to 400 tasks; task-store.ts
    // createMany), the announcements one SendMessageBatch of 10 after another (app/batches.ts).
    const createRounds = Math.ceil(BATCH_OF / (25 * 16));
    const batchApiMs = 5 + AWS_LATENCY_MS.DynamoDB * (2 + createRounds) + AWS_LATENCY_MS.SQS * Math.ceil(BATCH_OF / 10);
    const batched = costPerMillionTasks({
      ...usageFromCalls(batchedStats, n),
      apiRequests: 1 / BATCH_OF,
      lambdaInvocations: 1 / BATCH_OF + worker.invocations,
      lambdaGbSeconds: (API_MEMORY_GB * batchApiMs) / 1000 / BATCH_OF + workerGbSeconds,
    });
    console.log(
      formatCost(`\nOurs in batches of ${BATCH_OF} (submit request ${fmt(batchApiMs, 0)} ms modelled):`, batched),
    );
    console.log(`ours per million tasks in batches of ${BATCH_OF}: $${fmt(batched.usdPerMillionTasks, 2)}`);
    // Task events (issue 27): the bus always, and a webhook when configured (bench/metering/task-events.ts).
    const base = {
      ...usageFromCalls(stats, n),
      apiRequests: 1,
      lambdaInvocations: 1 + worker.invocations,
      lambdaGbSeconds: (API_MEMORY_GB * apiMs) / 1000 + workerGbSeconds,
    };
    const withEvents = (webhooks: number) => {
      const events = taskEventsUsage({ ...NO_OP_TASK_EVENTS, webhooks });
      return costPerMillionTasks({
        ...base,
        eventBridgeEvents: events.eventBridgeEvents,
        sqsFifoRequests: events.sqsFifoRequests,
        lambdaInvocations: base.lambdaInvocations + events.lambdaInvocations,
        lambdaGbSeconds: base.lambdaGbSeconds + events.lambdaGbSeconds,
      });
    };
    console.log(formatCost('\nThe same with task events (4 a task on the bus, the stream function):', withEvents(0)));
    console.log(`ours per million tasks with events: $${fmt(withEvents(0).usdPerMillionTasks, 2)}`);
    console.log(`ours per million tasks with events and one webhook: $${fmt(withEvents(1).usdPerMillionTasks, 2)}`);
    // The same tasks had they asked for the largest class (handed on by the entry), and had the
    // pool still one function of the largest class, for the classes' effect alone (modelled).
    const lambdaUsd = (usage: ReturnType<typeof workerLambdaUsage>) =>
      costPerMillionTasks({
        ...usageFromCalls(stats, n),
        apiRequests: 1,
        lambdaInvocations: 1 + usage.invocations,
        lambdaGbSeconds: (API_MEMORY_GB * apiMs) / 1000 + usage.gbSeconds,
      }).usdPerMillionTasks;
    const largest = LAMBDA_WORKER.memoryMiB;
    console.log(
      `The same tasks in the ${largest} MiB class (handed on): $${fmt(lambdaUsd(workerLambdaUsage([largest], workerMs)), 2)} /M; with one ${largest} MiB worker function for every task (no classes): $${fmt(lambdaUsd(workerLambdaUsage([largest], workerMs, largest)), 2)} /M`,
    );
    console.log(
      formatCost(
        `\nStep Functions Standard, minimal machine ${STEP_FUNCTIONS_MINIMAL.states.join(' → ')} (${STEP_FUNCTIONS_MINIMAL.transitionsPerTask} transitions/task):`,
        sfn,
      ),
    );
    // Fixed, whatever the load: the idle month (the scheduler scales to zero; see bench/idle-cost.ts).
    printIdleCost(defaultStackIdleCost());
    console.log(
      `Ours / Step Functions per million tasks: ${fmt(ours.usdPerMillionTasks, 2)} / ${fmt(sfn.usdPerMillionTasks, 2)} = ${fmt(ours.usdPerMillionTasks / sfn.usdPerMillionTasks, 3)}×`,
    );
    writeBarChart('cost-per-million.svg', 'USD per million no-op tasks at list prices (lower is better)', 'USD', [
      ...ours.lines.map((l) => ({ label: `ours: ${l.item}`, value: l.usdPerMillionTasks })),
      { label: 'ours: total', value: ours.usdPerMillionTasks, color: '#2f4b7c' },
      { label: 'Step Functions: total', value: sfn.usdPerMillionTasks, color: '#d45087' },
    ]);
    return {
      tasks: n,
      callsPerTask: calls / n,
      fargateCallsPerTask: fargateCalls / n,
      stats,
      idleCallsPerSecond: idleCalls,
      oursUsdPerMillion: ours.usdPerMillionTasks,
      oursBatchedUsdPerMillion: batched.usdPerMillionTasks,
      stepFunctionsUsdPerMillion: sfn.usdPerMillionTasks,
    };
  } finally {
    await run.stop();
  }
}

if (isMain(import.meta.url)) {
  await runAwsCalls({ quick: process.argv.includes('--quick'), byQueue: process.argv.includes('--by-queue') });
}
