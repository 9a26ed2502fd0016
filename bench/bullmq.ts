/**
 * Peer comparison: BullMQ on a local redis-server (started and stopped here) against our local
 * runtime, the same workloads on the same machine, run back to back:
 *   - throughput of no-op jobs (16 submits in flight, 50 workers / lambda pool 50);
 *   - priority flood: a stream of high-priority 200 ms jobs above capacity (10 slots) plus a few
 *     low-priority ones at the start, all of one tenant: the low jobs' p99/max wait;
 *   - noisy neighbour: one tenant submits a burst of 200 ms jobs, three quiet tenants trickle:
 *     the quiet tenants' wait and their share of starts while the burst drains.
 * BullMQ has priorities but no tenant fairness in the open-source edition (groups are a BullMQ
 * Pro feature), so its noisy-neighbour run is one shared queue. Our runtime uses fair-share with
 * agingSeconds 2 in the contention runs, so aging shows within a short run.
 */

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Job, Queue, QueueEvents, Worker } from 'bullmq';
import { freePort } from '../local/free-port.ts';
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

const TIER_PRIORITY = { critical: 1, high: 2, normal: 3, low: 4 } as const;
/** Jobs (tasks) each side runs before its measured window. */
const WARM_UP_JOBS = 10;

interface Started {
  readonly tenantId: string;
  readonly priority: string;
  readonly waitMs: number;
  readonly startedAtMs: number;
}

interface Workload {
  /** Jobs in submission order with the time (ms from start) each is submitted. */
  readonly jobs: readonly { atMs: number; spec: SubmitSpec }[];
  readonly taskMs: number;
  readonly capacity: number;
}

// ─── Redis ──────────────────────────────────────────────────────────────────────────────────

export interface RedisServer {
  readonly port: number;
  stop(): Promise<void>;
}

/** Debian's redis-server on a free loopback port, no persistence; undefined when not installed. */
export async function startRedis(): Promise<RedisServer | undefined> {
  if (spawnSync('redis-server', ['--version']).error) return undefined;
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 100; i++) {
    if (await canConnect(port)) break;
    await sleep(50);
  }
  return {
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.connect(port, '127.0.0.1');
  });
}

// ─── BullMQ side ────────────────────────────────────────────────────────────────────────────

type RedisClient = { quit(): Promise<unknown> };

/**
 * BullMQ 6 talks to Redis through the optional peer `ioredis` (or `redis`), which it does not
 * install: the bench uses whichever the project has, and skips BullMQ with a clear note if none.
 */
async function redisClientFactory(): Promise<((port: number) => RedisClient) | undefined> {
  for (const name of ['ioredis', 'redis']) {
    try {
      const mod = (await import(name)) as Record<string, unknown>;
      if (name === 'ioredis') {
        const IORedis = (mod.default ?? mod.Redis) as new (options: object) => RedisClient;
        return (port) => new IORedis({ host: '127.0.0.1', port, maxRetriesPerRequest: null });
      }
      const createClient = mod.createClient as (options: object) => RedisClient & { connect(): Promise<unknown> };
      return (port) => {
        const client = createClient({ url: `redis://127.0.0.1:${port}` });
        void client.connect();
        return client;
      };
    } catch {
      // Not installed: try the next.
    }
  }
  return undefined;
}

async function runBullmq(
  client: (port: number) => RedisClient,
  port: number,
  name: string,
  workload: Workload,
  submitConcurrency = 16,
): Promise<{ seconds: number; started: Started[] }> {
  const redisClient = client(port);
  // biome-ignore lint/suspicious/noExplicitAny: BullMQ accepts either client type as its connection.
  const connection = redisClient as any;
  const queue = new Queue(name, { connection });
  const events = new QueueEvents(name, { connection });
  await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
  const started: Started[] = [];
  let completed = 0;
  let allDone: (() => void) | undefined;
  let warmLeft = WARM_UP_JOBS;
  let warmed: (() => void) | undefined;
  const worker = new Worker(
    name,
    async (job: Job) => {
      if (job.data.warmUp) {
        if (--warmLeft === 0) warmed?.();
        return {};
      }
      const now = Date.now();
      started.push({
        tenantId: job.data.tenantId,
        priority: job.data.priority,
        waitMs: now - job.timestamp,
        startedAtMs: now,
      });
      if (workload.taskMs > 0) await sleep(workload.taskMs);
      return { echo: job.data.payload };
    },
    { connection, concurrency: workload.capacity },
  );
  worker.on('completed', (job: Job) => {
    if (job.data.warmUp) return;
    completed++;
    if (completed >= workload.jobs.length) allDone?.();
  });
  await worker.waitUntilReady();
  // Warm up outside the measured window, as ours is (runOurs): connections, scripts, the JIT.
  const warm = new Promise<void>((resolve) => {
    warmed = resolve;
  });
  await queue.addBulk(
    Array.from({ length: WARM_UP_JOBS }, () => ({
      name: 'warm-up',
      data: { warmUp: true },
      opts: { removeOnComplete: true },
    })),
  );
  await warm;
  await sleep(300);
  const done = new Promise<void>((resolve) => {
    allDone = resolve;
  });
  const t0 = performance.now();
  const add = (spec: SubmitSpec) =>
    queue.add(
      'task',
      { tenantId: spec.tenantId, priority: spec.priority ?? 'normal', payload: spec.payload },
      { priority: TIER_PRIORITY[spec.priority ?? 'normal'], removeOnComplete: true },
    );
  if (workload.jobs.every((j) => j.atMs === 0)) {
    let next = 0;
    await Promise.all(
      Array.from({ length: submitConcurrency }, async () => {
        while (next < workload.jobs.length) await add(workload.jobs[next++]!.spec);
      }),
    );
  } else {
    await schedule(workload, async (spec) => {
      await add(spec);
      return '';
    });
  }
  await done;
  const seconds = (performance.now() - t0) / 1000;
  await worker.close();
  await events.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await redisClient.quit();
  return { seconds, started };
}

/** Submit each job at its time (open loop). */
async function schedule(workload: Workload, send: (spec: SubmitSpec) => Promise<string>): Promise<string[]> {
  const t0 = performance.now();
  const pending: Promise<string>[] = [];
  for (const job of workload.jobs) {
    const wait = t0 + job.atMs - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(send(job.spec));
  }
  return Promise.all(pending);
}

// ─── Our side ───────────────────────────────────────────────────────────────────────────────

async function runOurs(workload: Workload, agingSeconds: number): Promise<{ seconds: number; started: Started[] }> {
  const run = await startCountedServer(
    benchConfig({
      agingSeconds,
      pools: { lambda: { concurrency: workload.capacity }, fargate: { vcpu: 16, memoryMiB: 32768 } },
      tenantDefaults: { weight: 1, maxConcurrency: workload.capacity },
    }),
  );
  try {
    const { url } = run.server;
    const warm = run.finished(WARM_UP_JOBS);
    await submitAll(
      url,
      Array.from({ length: WARM_UP_JOBS }, () => ({ tenantId: 'warm-up' })),
      WARM_UP_JOBS,
    );
    await warm;
    await sleep(300);
    const withType = (spec: SubmitSpec): SubmitSpec =>
      workload.taskMs > 0 ? { ...spec, type: 'demo.sleep', payload: { ms: workload.taskMs } } : spec;
    const t0 = performance.now();
    const done = run.finished(workload.jobs.length);
    let ids: string[];
    if (workload.jobs.every((j) => j.atMs === 0)) {
      ids = (
        await submitAll(
          url,
          workload.jobs.map((j) => withType(j.spec)),
          16,
        )
      ).map((s) => s.taskId);
    } else {
      ids = await schedule(workload, async (spec) => (await submit(url, withType(spec))).taskId);
    }
    await done;
    const seconds = (performance.now() - t0) / 1000;
    const times = await fetchTimes(url, ids);
    return {
      seconds,
      started: times.map((t) => ({
        tenantId: t.tenantId,
        priority: t.priority,
        waitMs: t.waitMs,
        startedAtMs: t.startedAtMs,
      })),
    };
  } finally {
    await run.stop();
  }
}

// ─── Workloads ──────────────────────────────────────────────────────────────────────────────

function noOp(n: number): Workload {
  return {
    jobs: Array.from({ length: n }, (_, i) => ({ atMs: 0, spec: { tenantId: `tenant-${i % 5}`, payload: { i } } })),
    taskMs: 0,
    capacity: 50,
  };
}

/**
 * High-priority jobs at 1.5× capacity for `seconds`, plus `lows` low-priority jobs at t = 0, all of
 * one tenant: what bounds the low jobs' wait is aging (ours) or nothing (BullMQ's strict priorities).
 */
function priorityFlood(seconds: number, lows: number): Workload {
  const taskMs = 200;
  const capacity = 10;
  const rate = (1.5 * capacity * 1000) / taskMs;
  const jobs: { atMs: number; spec: SubmitSpec }[] = [];
  // One tenant: ours orders a tenant's own work by tier with aging, and shares the pool between
  // tenants. With the low jobs of tenants of their own (as before), fair share started them while
  // the flood's tenants ran (ours: in under a second, before aging had moved them one tier), and
  // the comparison measured tenant fairness, which the noisy-neighbour run already does.
  for (let i = 0; i < lows; i++) jobs.push({ atMs: 0, spec: { tenantId: 'flood', priority: 'low' } });
  for (let i = 0; i < seconds * rate; i++) {
    jobs.push({ atMs: (i * 1000) / rate, spec: { tenantId: 'flood', priority: 'high' } });
  }
  jobs.sort((a, b) => a.atMs - b.atMs);
  return { jobs, taskMs, capacity };
}

/** A burst of `burst` jobs from one tenant at t = 0; three quiet tenants submit 2/s each. */
function noisyNeighbour(burst: number, seconds: number): Workload {
  const jobs: { atMs: number; spec: SubmitSpec }[] = [];
  for (let i = 0; i < burst; i++) jobs.push({ atMs: 0, spec: { tenantId: 'noisy' } });
  for (let t = 100; t < seconds * 1000; t += 500) {
    for (const quiet of ['quiet-a', 'quiet-b', 'quiet-c']) jobs.push({ atMs: t, spec: { tenantId: quiet } });
  }
  jobs.sort((a, b) => a.atMs - b.atMs);
  return { jobs, taskMs: 200, capacity: 10 };
}

// ─── Report ─────────────────────────────────────────────────────────────────────────────────

export interface BullmqResult {
  readonly throughputRatio: number;
  readonly lowP99Ratio: number;
  readonly quietP99Ratio: number;
}

export async function runBullmqComparison(options: BenchOptions): Promise<BullmqResult | undefined> {
  console.log(`\n## Peer comparison: BullMQ on a local redis-server vs our local runtime (${await machineLoad()})`);
  const client = await redisClientFactory();
  const redis = client ? await startRedis() : undefined;
  if (!client) {
    console.log(
      'BullMQ SKIPPED: BullMQ 6 needs its optional peer `ioredis` (or `redis`), which is not installed: add `ioredis` to devDependencies. Our side still runs.',
    );
  } else if (!redis) {
    console.log(
      'BullMQ SKIPPED: redis-server is not installed (Debian: apt-get install redis-server). Our side still runs.',
    );
  }
  const none = { seconds: Number.NaN, started: [] as Started[] };
  try {
    const n = options.quick ? 400 : 2000;
    const flood = priorityFlood(options.quick ? 6 : 20, 10);
    const noisy = noisyNeighbour(options.quick ? 300 : 1000, options.quick ? 5 : 16);
    const bull = async (name: string, workload: Workload) =>
      client && redis ? runBullmq(client, redis.port, name, workload) : none;

    const bullNoOp = await bull('bench-noop', noOp(n));
    const oursNoOp = await runOurs(noOp(n), 300);
    const bullFlood = await bull('bench-flood', flood);
    const oursFlood = await runOurs(flood, 2);
    const bullNoisy = await bull('bench-noisy', noisy);
    const oursNoisy = await runOurs(noisy, 2);

    const tput = (r: { seconds: number }, count: number) => count / r.seconds;
    const waits = (r: { started: Started[] }, keep: (s: Started) => boolean) =>
      r.started.filter(keep).map((s) => s.waitMs);
    const isLow = (s: Started) => s.priority === 'low';
    const isQuiet = (s: Started) => s.tenantId.startsWith('quiet');
    const noisyBurstEnd = (r: { started: Started[] }) =>
      r.started.filter((s) => s.tenantId === 'noisy').reduce((max, s) => Math.max(max, s.startedAtMs), 0);
    const maxOf = (values: number[]) => (values.length === 0 ? Number.NaN : Math.max(...values));
    /** Share of starts that went to quiet tenants while the noisy burst was still draining. */
    const quietShare = (r: { started: Started[] }) => {
      const end = noisyBurstEnd(r);
      const during = r.started.filter((s) => s.startedAtMs <= end);
      return during.length === 0 ? Number.NaN : during.filter(isQuiet).length / during.length;
    };
    const quietDemandShare = noisy.jobs.filter((j) => j.spec.tenantId.startsWith('quiet')).length / noisy.jobs.length;

    const rows: string[][] = [['', 'ours', 'BullMQ', 'ours / BullMQ']];
    const add = (label: string, ours: number, bull: number, digits = 0) =>
      rows.push([label, fmt(ours, digits), fmt(bull, digits), ratio(ours, bull)]);
    add(`no-op throughput (${n} jobs), jobs/s`, tput(oursNoOp, n), tput(bullNoOp, n), 1);
    type Run = { started: Started[] };
    const all = () => true;
    const p = (q: number) => (values: number[]) => percentile(values, q);
    /** One wait statistic of the same starts in both runs. */
    const addWaits = (
      label: string,
      ours: Run,
      bull: Run,
      keep: (s: Started) => boolean,
      stat: (v: number[]) => number,
    ) => add(label, stat(waits(ours, keep)), stat(waits(bull, keep)));
    const notLow = (s: Started) => !isLow(s);
    const notQuiet = (s: Started) => !isQuiet(s);
    addWaits('no-op submit→start p50, ms', oursNoOp, bullNoOp, all, p(50));
    addWaits('no-op submit→start p99, ms', oursNoOp, bullNoOp, all, p(99));
    addWaits('priority flood: low-tier wait p50, ms', oursFlood, bullFlood, isLow, p(50));
    addWaits('priority flood: low-tier wait p99, ms', oursFlood, bullFlood, isLow, p(99));
    addWaits('priority flood: low-tier wait max, ms', oursFlood, bullFlood, isLow, maxOf);
    addWaits('priority flood: high-tier wait p50, ms', oursFlood, bullFlood, notLow, p(50));
    addWaits('noisy neighbour: quiet wait p50, ms', oursNoisy, bullNoisy, isQuiet, p(50));
    addWaits('noisy neighbour: quiet wait p99, ms', oursNoisy, bullNoisy, isQuiet, p(99));
    addWaits('noisy neighbour: quiet wait max, ms', oursNoisy, bullNoisy, isQuiet, maxOf);
    addWaits('noisy neighbour: noisy wait p50, ms', oursNoisy, bullNoisy, notQuiet, p(50));
    add(
      'noisy neighbour: quiet share of starts while burst drains, %',
      100 * quietShare(oursNoisy),
      100 * quietShare(bullNoisy),
      1,
    );
    console.log(
      `Flood: ${flood.jobs.length - 10} high + 10 low jobs of 200 ms, 10 slots, high arriving at 1.5× capacity. Noisy: ${noisy.jobs.filter((j) => j.spec.tenantId === 'noisy').length} noisy + ${noisy.jobs.filter((j) => j.spec.tenantId !== 'noisy').length} quiet jobs of 200 ms, 10 slots (quiet demand ${fmt(100 * quietDemandShare, 1)} % of jobs).`,
    );
    console.log('BullMQ: priorities 1..4 for critical..low; no tenant fairness (groups are BullMQ Pro only).');
    console.log(textTable(rows));

    writeBarChart('bullmq-contention.svg', 'Waits under contention, ms, one run (lower is better)', 'ms', [
      { label: 'flood low p99: ours', value: percentile(waits(oursFlood, isLow), 99) },
      { label: 'flood low p99: BullMQ', value: percentile(waits(bullFlood, isLow), 99), color: '#d45087' },
      { label: 'noisy quiet p99: ours', value: percentile(waits(oursNoisy, isQuiet), 99) },
      { label: 'noisy quiet p99: BullMQ', value: percentile(waits(bullNoisy, isQuiet), 99), color: '#d45087' },
    ]);
    writeBarChart('bullmq-throughput.svg', 'No-op jobs per second, one run (higher is better)', 'jobs/s', [
      { label: 'ours (HTTP → full runtime)', value: tput(oursNoOp, n) },
      { label: 'BullMQ (redis, in-process add)', value: tput(bullNoOp, n), color: '#d45087' },
    ]);
    return {
      throughputRatio: tput(oursNoOp, n) / tput(bullNoOp, n),
      lowP99Ratio: percentile(waits(oursFlood, isLow), 99) / percentile(waits(bullFlood, isLow), 99),
      quietP99Ratio: percentile(waits(oursNoisy, isQuiet), 99) / percentile(waits(bullNoisy, isQuiet), 99),
    };
  } finally {
    await redis?.stop();
  }
}

if (isMain(import.meta.url)) await runBullmqComparison({ quick: process.argv.includes('--quick') });
