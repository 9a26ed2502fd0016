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
 *   npm run bench -- rotation-live
 *   node --experimental-strip-types bench/rotation-live.ts
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
}

async function crowd(): Promise<RotationLiveResult['crowd']> {
  return withServer(
    {
      pools: { lambda: { concurrency: 8 }, fargate: { vcpu: 4, memoryMiB: 8192 } },
      tenantDefaults: { weight: 1, maxConcurrency: 10 },
      taskDefaults: { timeoutSeconds: 30 },
    },
    async (url) => {
      const spec = (tenantId: string, ms: number): SubmitSpec => ({
        tenantId,
        type: 'demo.sleep',
        payload: { ms },
        runtime: 'lambda',
      });
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
    },
  );
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
  const { quietWaitMs } = crowdResult;
  process.stdout.write(
    [
      `rotation-live (${load}; ${fmt((performance.now() - started) / 1000, 0)} s wall)`,
      `crowd: 8 tenants x 30 tasks of 1.5 s on 8 Lambda slots, 3 quiet tenants one 0.2 s task every 3 s (${crowdResult.quietTasks} quiet tasks)`,
      `  quiet submit→start p50 ${fmt(quietWaitMs.p50 / 1000, 2)} s, p99 ${fmt(quietWaitMs.p99 / 1000, 2)} s, max ${fmt(quietWaitMs.max / 1000, 2)} s`,
      `  bounds the API gave at submit: ${crowdResult.boundsGiven}, median ${fmt(crowdResult.boundSecondsMedian, 0)} s`,
      'whole pool: 4 vCPU Fargate pool, a 1 vCPU 20 s task every 5 s, a 4 vCPU task at 25 s (another at its quota)',
      `  its submit→start ${fmt(whole.waitMs / 1000, 1)} s; the drain of the tasks running at its submit ${fmt(whole.drainMs / 1000, 1)} s`,
      '',
    ].join('\n'),
  );
  return { crowd: crowdResult, wholePool: whole };
}

if (isMain(import.meta.url)) await runRotationLive();
