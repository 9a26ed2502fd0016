/**
 * Fair share's rotation and the reservation at once, live on the local stack (issue 22, "Done
 * when"), through the whole runtime over HTTP in a fresh data folder on a free port:
 *
 * 1. crowd: 8 tenants each queue 30 tasks of 1.5 s on 8 Lambda slots (as many backlogged tenants
 *    as slots); meanwhile 3 quiet tenants each submit one 0.2 s task every 3 s. Printed: the quiet
 *    tasks' submit→start p50/p99/max (from the task records), and the bounds the API gave them.
 * 2. whole pool: a 4 vCPU Fargate pool; "stream" submits a 1 vCPU task of 20 s every 5 s; "held"
 *    has a 4 vCPU task waiting while at its quota; at 25 s "whole" submits a 4 vCPU task.
 *    Printed: its submit→start against the drain (when the stream tasks running at its submit end).
 *
 *   npm run bench -- rotation-live [--pace]
 *   node --experimental-strip-types bench/rotation-live.ts [--pace]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLocalServer } from '../local/server.ts';
import type { ConfigInput } from '../runtime/core/config.ts';
import {
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
} from './lib.ts';

async function withServer<T>(config: Partial<ConfigInput>, body: (url: string) => Promise<T>): Promise<T> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rotation-live-'));
  const server = await startLocalServer({
    config: benchConfig(config),
    dataDir,
    port: 0,
    examples: false,
    dashboard: false,
    summaryEverySeconds: 0,
    logger: silentLogger,
  });
  try {
    return await body(server.url);
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function waitStarted(url: string, taskIds: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const taskId of taskIds) {
    for (;;) {
      const task = (await (await fetch(`${url}/v1/tasks/${taskId}`)).json()) as { startedAt?: string | null };
      if (task.startedAt) break;
      if (Date.now() > deadline) throw new Error(`task ${taskId} did not start within ${timeoutMs} ms`);
      await sleep(500);
    }
  }
}

export interface RotationLiveResult {
  readonly crowd: {
    readonly quietWaitMs: { readonly p50: number; readonly p99: number; readonly max: number };
    readonly quietTasks: number;
    readonly boundsGiven: number;
    readonly boundSecondsMedian: number;
  };
  readonly wholePool: { readonly waitMs: number; readonly drainMs: number };
  readonly pace?: PaceLiveResult;
}

/** Answers on the pool's pace, judged against what the pool really freed (task records). */
export interface PaceLiveResult {
  readonly answers: number;
  readonly onPace: number;
  /** Of those on the pace: started within the bound; late while what it assumed held (a defect); late otherwise. */
  readonly kept: number;
  readonly broken: number;
  readonly lateAssumptionBroken: number;
  readonly boundSecondsMedian: number;
  readonly worstCaseSecondsMedian: number;
  readonly waitSecondsMedian: number;
  readonly ratioMedian: number;
}

interface Answer {
  readonly taskId: string;
  readonly tenantId: string;
  readonly askedAtMs: number;
  readonly maxWaitSeconds: number;
  readonly worstCaseSeconds?: number;
  readonly assumedFreed?: { slots: number; from: string; by: string; tenantFreeBy?: string };
}

/** The crowd cases' pools: 8 Lambda slots. */
const CROWD_CONFIG: Partial<ConfigInput> = {
  pools: { lambda: { concurrency: 8 }, fargate: { vcpu: 4, memoryMiB: 8192 } },
  tenantDefaults: { weight: 1, maxConcurrency: 10 },
  taskDefaults: { timeoutSeconds: 30 },
};

/** A Lambda task of `tenantId` that sleeps `ms`. */
const spec = (tenantId: string, ms: number): SubmitSpec => ({
  tenantId,
  type: 'demo.sleep',
  payload: { ms },
  runtime: 'lambda',
});

async function crowd(): Promise<RotationLiveResult['crowd']> {
  return withServer(CROWD_CONFIG, async (url) => {
    await submitAll(
      url,
      Array.from({ length: 240 }, (_, i) => spec(`crowd-${i % 8}`, 1500)),
      8,
    );
    // The crowd drains in about 240 × 1.5 s / 8 = 45 s: quiet tasks over its first 36 s.
    const quietIds: string[] = [];
    const bounds: number[] = [];
    for (let round = 0; round < 12; round++) {
      const started = Date.now();
      for (let q = 0; q < 3; q++) {
        const { taskId } = await submit(url, spec(`quiet-${q}`, 200));
        quietIds.push(taskId);
        const described = (await (await fetch(`${url}/v1/tasks/${taskId}`)).json()) as {
          wait?: { maxWaitSeconds: number | null };
        };
        if (typeof described.wait?.maxWaitSeconds === 'number') bounds.push(described.wait.maxWaitSeconds);
      }
      await sleep(Math.max(0, 3000 - (Date.now() - started)));
    }
    await waitStarted(url, quietIds, 180_000);
    const waits = (await fetchTimes(url, quietIds)).map((t) => t.waitMs);
    return {
      quietWaitMs: { p50: percentile(waits, 50), p99: percentile(waits, 99), max: Math.max(...waits) },
      quietTasks: waits.length,
      boundsGiven: bounds.length,
      boundSecondsMedian: percentile(bounds, 50),
    };
  });
}

/**
 * 3. pace: the crowd of 1. for 90 s (8 tenants x 60 tasks of 1.5 s) and the quiet tenants over
 *    its first 84 s, so that the scheduler has watched the pool for a minute and the API answers
 *    on its pace (runtime/core/policy/bound.ts paceBound). Each answer is judged from the task
 *    records: kept if its task started within it; else broken if the pool freed what it assumed
 *    (tasks finishing between assumedFreed.from and .by) and its tenant's own running tasks ended
 *    by tenantFreeBy, else late with an assumption broken.
 */
async function pace(): Promise<PaceLiveResult> {
  return withServer(CROWD_CONFIG, async (url) => {
    const crowdIds = (
      await submitAll(
        url,
        Array.from({ length: 480 }, (_, i) => spec(`crowd-${i % 8}`, 1500)),
        8,
      )
    ).map((task) => task.taskId);
    const answers: Answer[] = [];
    const quietIds: string[] = [];
    for (let round = 0; round < 28; round++) {
      const started = Date.now();
      for (let q = 0; q < 3; q++) {
        const { taskId } = await submit(url, spec(`quiet-${q}`, 200));
        quietIds.push(taskId);
        const askedAtMs = Date.now();
        const described = (await (await fetch(`${url}/v1/tasks/${taskId}`)).json()) as {
          wait?: Omit<Answer, 'taskId' | 'tenantId' | 'askedAtMs' | 'maxWaitSeconds'> & {
            maxWaitSeconds: number | null;
          };
        };
        const wait = described.wait;
        if (wait && typeof wait.maxWaitSeconds === 'number') {
          answers.push({ ...wait, maxWaitSeconds: wait.maxWaitSeconds, taskId, tenantId: `quiet-${q}`, askedAtMs });
        }
      }
      await sleep(Math.max(0, 3000 - (Date.now() - started)));
    }
    const all = [...crowdIds, ...quietIds];
    await waitStarted(url, all, 300_000);
    const records = await finishedRecords(url, all);
    const finishedAt = records.map((r) => r.finishedAtMs).sort((a, b) => a - b);
    const byId = new Map(records.map((r) => [r.taskId, r]));
    let kept = 0;
    let broken = 0;
    let lateAssumptionBroken = 0;
    const onPace = answers.filter((a) => a.assumedFreed);
    const ratios: number[] = [];
    const waits: number[] = [];
    for (const answer of onPace) {
      const freed = answer.assumedFreed!;
      const record = byId.get(answer.taskId)!;
      const waitMs = record.startedAtMs - answer.askedAtMs;
      waits.push(waitMs / 1000);
      ratios.push(answer.maxWaitSeconds / Math.max(1, waitMs / 1000));
      if (waitMs <= answer.maxWaitSeconds * 1000) {
        kept++;
        continue;
      }
      const fromMs = Date.parse(freed.from);
      const byMs = Date.parse(freed.by);
      const freedThen = finishedAt.filter((at) => at >= fromMs && at <= byMs).length;
      const ownLate =
        freed.tenantFreeBy !== undefined &&
        records.some(
          (r) =>
            r.tenantId === answer.tenantId &&
            r.startedAtMs <= answer.askedAtMs &&
            r.finishedAtMs > answer.askedAtMs &&
            r.finishedAtMs > Date.parse(freed.tenantFreeBy!),
        );
      if (freedThen >= freed.slots && !ownLate) broken++;
      else lateAssumptionBroken++;
    }
    return {
      answers: answers.length,
      onPace: onPace.length,
      kept,
      broken,
      lateAssumptionBroken,
      boundSecondsMedian: percentile(
        onPace.map((a) => a.maxWaitSeconds),
        50,
      ),
      worstCaseSecondsMedian: percentile(
        onPace.map((a) => a.worstCaseSeconds ?? Number.NaN),
        50,
      ),
      waitSecondsMedian: percentile(waits, 50),
      ratioMedian: percentile(ratios, 50),
    };
  });
}

async function finishedRecords(
  url: string,
  taskIds: readonly string[],
): Promise<{ taskId: string; tenantId: string; startedAtMs: number; finishedAtMs: number }[]> {
  const deadline = Date.now() + 120_000;
  const records: { taskId: string; tenantId: string; startedAtMs: number; finishedAtMs: number }[] = [];
  for (const taskId of taskIds) {
    for (;;) {
      const task = (await (await fetch(`${url}/v1/tasks/${taskId}`)).json()) as Record<string, string | null>;
      if (task.finishedAt && task.startedAt) {
        records.push({
          taskId,
          tenantId: task.tenantId as string,
          startedAtMs: Date.parse(task.startedAt),
          finishedAtMs: Date.parse(task.finishedAt),
        });
        break;
      }
      if (Date.now() > deadline) throw new Error(`task ${taskId} did not finish`);
      await sleep(500);
    }
  }
  return records;
}

async function wholePool(): Promise<RotationLiveResult['wholePool']> {
  return withServer(
    {
      pools: { lambda: { concurrency: 4 }, fargate: { vcpu: 4, memoryMiB: 8192 } },
      tenantDefaults: { weight: 1, maxConcurrency: 10 },
      tenants: { held: { weight: 1, maxConcurrency: 1 } },
    },
    async (url) => {
      const fargate = (tenantId: string, vcpu: number, ms: number): SubmitSpec => ({
        tenantId,
        type: 'demo.sleep',
        payload: { ms },
        runtime: 'fargate',
        resources: { vcpu, memoryMiB: 1024 * vcpu },
      });
      // "held": a long Lambda task keeps it at its quota; its whole-pool task waits.
      await submit(url, { tenantId: 'held', type: 'demo.sleep', payload: { ms: 90_000 }, runtime: 'lambda' });
      await sleep(1000);
      await submit(url, fargate('held', 4, 1000));
      const t0 = Date.now();
      const stream: { taskId: string; atMs: number }[] = [];
      let wholeId: string | undefined;
      let wholeAtMs = 0;
      for (let tick = 0; tick <= 60; tick++) {
        const at = t0 + tick * 1000;
        await sleep(Math.max(0, at - Date.now()));
        if (tick % 5 === 0)
          stream.push({ taskId: (await submit(url, fargate('stream', 1, 20_000))).taskId, atMs: Date.now() });
        if (tick === 25) {
          wholeAtMs = Date.now();
          wholeId = (await submit(url, fargate('whole', 4, 1000))).taskId;
        }
      }
      await waitStarted(url, [wholeId as string], 120_000);
      const [whole] = await fetchTimes(url, [wholeId as string]);
      // The drain: the latest end of the stream tasks running when it was submitted.
      const running = (
        await fetchTimes(
          url,
          stream.filter((s) => s.atMs < wholeAtMs).map((s) => s.taskId),
        )
      ).filter((t) => t.startedAtMs <= wholeAtMs);
      const drainEndMs = Math.max(wholeAtMs, ...running.map((t) => t.startedAtMs + 20_000));
      return { waitMs: (whole?.waitMs ?? Number.NaN) as number, drainMs: drainEndMs - wholeAtMs };
    },
  );
}

export async function runRotationLive(): Promise<RotationLiveResult> {
  const load = await machineLoad();
  const started = performance.now();
  const crowdResult = await crowd();
  const whole = await wholePool();
  const paced = process.argv.includes('--pace') ? await pace() : undefined;
  const { quietWaitMs } = crowdResult;
  process.stdout.write(
    [
      `rotation-live (${load}; ${fmt((performance.now() - started) / 1000, 0)} s wall)`,
      `crowd: 8 tenants x 30 tasks of 1.5 s on 8 Lambda slots, 3 quiet tenants one 0.2 s task every 3 s (${crowdResult.quietTasks} quiet tasks)`,
      `  quiet submit→start p50 ${fmt(quietWaitMs.p50 / 1000, 2)} s, p99 ${fmt(quietWaitMs.p99 / 1000, 2)} s, max ${fmt(quietWaitMs.max / 1000, 2)} s`,
      `  bounds the API gave at submit: ${crowdResult.boundsGiven}, median ${fmt(crowdResult.boundSecondsMedian, 0)} s`,
      'whole pool: 4 vCPU Fargate pool, a 1 vCPU 20 s task every 5 s, a 4 vCPU task at 25 s (another at its quota)',
      `  its submit→start ${fmt(whole.waitMs / 1000, 1)} s; the drain of the tasks running at its submit ${fmt(whole.drainMs / 1000, 1)} s`,
      ...(paced
        ? [
            'pace (--pace): the crowd for 90 s (8 x 60 tasks of 1.5 s), quiet tenants over its first 84 s, each answer judged from the task records',
            `  answers ${paced.answers}, on the pool's pace ${paced.onPace}: kept ${paced.kept}, broken ${paced.broken}, late with an assumption broken ${paced.lateAssumptionBroken}`,
            `  on the pace: bound median ${fmt(paced.boundSecondsMedian, 1)} s (worst case on timeouts ${fmt(paced.worstCaseSecondsMedian, 0)} s), wait median ${fmt(paced.waitSecondsMedian, 2)} s, bound / wait median ${fmt(paced.ratioMedian, 1)}x`,
          ]
        : []),
      '',
    ].join('\n'),
  );
  return { crowd: crowdResult, wholePool: whole, ...(paced ? { pace: paced } : {}) };
}

if (isMain(import.meta.url)) await runRotationLive();
