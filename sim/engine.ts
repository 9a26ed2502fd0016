/**
 * The discrete-event simulator: replays a trace in virtual time through one dispatcher. At every
 * instant something changes (arrivals, completions) it calls next() until nothing more may start,
 * exactly as the scheduler loop does. Deterministic: same trace, same result.
 */

import { POLICIES, type PolicyName, type SchedulerConfig } from '../runtime/core/config.ts';
import { capacityOf, jainIndex } from '../runtime/core/policy/drf.ts';
import { SchedulingPolicy } from '../runtime/core/policy/policy.ts';
import type { Candidate, PolicyOptions } from '../runtime/core/policy/types.ts';
import { ApiBoundModel, type RunningTask } from './api-bound.ts';
import { BASELINE_NAMES, type BaselineName, createBaseline, type Dispatcher } from './baselines.ts';
import { maxHoldSeconds, type Trace, tierName } from './trace.ts';

export { maxHoldSeconds };

/** Our policies with reservations off (pure backfill): to measure what reservations buy. */
export const BACKFILL_ONLY = ['fair-share-backfill', 'priority-backfill'] as const;

export const DISPATCHER_NAMES = [...POLICIES, ...BACKFILL_ONLY, ...BASELINE_NAMES] as const;
export type DispatcherName = (typeof DISPATCHER_NAMES)[number];

export interface RunResult {
  readonly dispatcher: DispatcherName;
  /** Per task, ms from arrival to dispatch (NaN if never dispatched). */
  readonly waitMs: Float64Array;
  readonly makespanMs: number;
  readonly utilization: { readonly lambda: number; readonly fargate: number };
  /** Mean over time of Jain's index of the weighted dominant shares of backlogged tenants. */
  readonly jain: number;
  /** Per tenant, mean weighted dominant share while it had work waiting. */
  readonly meanShareWhileBacklogged: Float64Array;
  /** With `apiBounds`: per task, the maxWaitSeconds the API would have given at submit, ms (NaN: none). */
  readonly boundMs?: Float64Array;
  /** With `apiBounds`: per task, 1 when its tenant had a task running at submit (the bound then waits for it). */
  readonly tenantRanAtSubmit?: Uint8Array;
  /**
   * With `apiBounds`: per task whose bound rests on the Lambda pool's pace, the slots it assumes
   * the pool frees between fromMs and byMs (slots 0: none assumed); and when the pool freed slots.
   */
  readonly assumedFreed?: {
    readonly slots: Int32Array;
    readonly fromMs: Float64Array;
    readonly byMs: Float64Array;
    /** When it took its tenant's running tasks to end as its tasks did lately: by then (NaN: not assumed). */
    readonly tenantFreeByMs: Float64Array;
    /** When its tenant's tasks running at submit really ended. */
    readonly tenantFreedMs: Float64Array;
  };
  /**
   * With `apiBounds`: per task whose bound rests on the Lambda pool's headroom, the slots it assumes
   * never all in use between fromMs and byMs (slots 0: none assumed); and the spans the pool was
   * full, [fromMs, toMs), in time order.
   */
  readonly assumedHeadroom?: {
    readonly slots: Int32Array;
    readonly fromMs: Float64Array;
    readonly byMs: Float64Array;
  };
  readonly lambdaFullSpans?: readonly { readonly fromMs: number; toMs: number }[];
  /**
   * With `apiBounds`: per task whose bound counted tenants joining after the snapshot, at most how
   * many (-1: none assumed) between fromMs and byMs; and per pool (0 Lambda, 1 Fargate) when each
   * tenant started waiting there (its waiting count going from 0 to 1).
   */
  readonly assumedJoins?: {
    readonly atMost: Int32Array;
    readonly fromMs: Float64Array;
    readonly byMs: Float64Array;
    /** The task's pool (0 Lambda, 1 Fargate) and tenant. */
    readonly pool: Uint8Array;
    readonly tenant: Int32Array;
  };
  readonly joinsByPool?: readonly (readonly { readonly atMs: number; readonly tenant: number }[])[];
  readonly lambdaFreedMs?: readonly number[];
  /**
   * With `apiBounds`: per task whose bound took its tenant to stay below its fair share, the most
   * summed weight of tenants with work it assumed (NaN: none assumed) between fromMs and byMs; and
   * the engine's summed weight as it moved (each value from `atMs` on).
   */
  readonly assumedBusyWeight?: {
    readonly atMost: Float64Array;
    readonly fromMs: Float64Array;
    readonly byMs: Float64Array;
  };
  readonly busyWeightSteps?: readonly { readonly atMs: number; readonly weight: number }[];
  readonly wallMs: number;
}

export interface SimulateOptions {
  /** Compute what the API would answer at each submit (fair-share only; sim/api-bound.ts). */
  readonly apiBounds?: boolean;
  /** Our engine configured as the scheduler configures it (replay), instead of from the trace. */
  readonly engine?: PolicyOptions;
  /** The configuration the API answers with (replay); default: one derived from the trace. */
  readonly config?: SchedulerConfig;
  /** Each task's hold as the scheduler tells the engine (replay: timeout + leases); default its timeout. */
  readonly holdSeconds?: (task: number) => number;
}

export function createDispatcher(name: DispatcherName, trace: Trace): Dispatcher {
  if ((BASELINE_NAMES as readonly string[]).includes(name)) return createBaseline(name as BaselineName, trace.pools);
  const tenants: Record<string, (typeof trace.tenantSettings)[number]> = {};
  trace.tenantIds.forEach((id, i) => {
    tenants[id] = trace.tenantSettings[i] as (typeof trace.tenantSettings)[number];
  });
  const backfillOnly = (BACKFILL_ONLY as readonly string[]).includes(name);
  return new SchedulingPolicy({
    policy: (backfillOnly ? name.replace('-backfill', '') : name) as PolicyName,
    agingSeconds: trace.agingSeconds,
    pools: trace.pools,
    tenantDefaults: { weight: 1, maxConcurrency: 1_000_000 },
    tenants,
    // τ per pool: the trace's longest timeout is the cap its tasks keep (the wait bound rests on it).
    maxHoldSeconds: maxHoldSeconds(trace),
    ...(backfillOnly ? { reservations: false } : {}),
  });
}

/** Called at every instant after arrivals and completions, before dispatching (tests use it). */
export type Observer = (dispatcher: Dispatcher, nowMs: number, arrived: number) => void;

/** Min-heap of (finish time, task) in two parallel arrays: no object per running task. */
class Completions {
  #time = new Float64Array(1024);
  #task = new Int32Array(1024);
  size = 0;

  push(time: number, task: number): void {
    if (this.size === this.#time.length) {
      const time2 = new Float64Array(this.size * 2);
      time2.set(this.#time);
      this.#time = time2;
      const task2 = new Int32Array(this.size * 2);
      task2.set(this.#task);
      this.#task = task2;
    }
    let i = this.size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((this.#time[parent] as number) <= time) break;
      this.#time[i] = this.#time[parent] as number;
      this.#task[i] = this.#task[parent] as number;
      i = parent;
    }
    this.#time[i] = time;
    this.#task[i] = task;
  }

  peekTime(): number {
    return this.size > 0 ? (this.#time[0] as number) : Number.POSITIVE_INFINITY;
  }

  pop(): number {
    const top = this.#task[0] as number;
    const lastTime = this.#time[--this.size] as number;
    const lastTask = this.#task[this.size] as number;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= this.size) break;
      const child =
        left + 1 < this.size && (this.#time[left + 1] as number) < (this.#time[left] as number) ? left + 1 : left;
      if ((this.#time[child] as number) >= lastTime) break;
      this.#time[i] = this.#time[child] as number;
      this.#task[i] = this.#task[child] as number;
      i = child;
    }
    this.#time[i] = lastTime;
    this.#task[i] = lastTask;
    return top;
  }
}

export function simulate(
  trace: Trace,
  name: DispatcherName,
  observe?: Observer,
  options: SimulateOptions = {},
): RunResult {
  const started = performance.now();
  const baseline = (BASELINE_NAMES as readonly string[]).includes(name);
  const dispatcher = options.engine && !baseline ? new SchedulingPolicy(options.engine) : createDispatcher(name, trace);
  const api =
    options.apiBounds && dispatcher instanceof SchedulingPolicy && dispatcher.policy === 'fair-share'
      ? new ApiBoundModel(trace, dispatcher, options.config)
      : undefined;
  const boundMs = api ? new Float64Array(trace.size).fill(Number.NaN) : undefined;
  const tenantRanAtSubmit = api ? new Uint8Array(trace.size) : undefined;
  const assumedFreed = api
    ? {
        slots: new Int32Array(trace.size),
        fromMs: new Float64Array(trace.size).fill(Number.NaN),
        byMs: new Float64Array(trace.size).fill(Number.NaN),
        tenantFreeByMs: new Float64Array(trace.size).fill(Number.NaN),
        tenantFreedMs: new Float64Array(trace.size).fill(Number.NaN),
      }
    : undefined;
  const lambdaFreedMs: number[] | undefined = api ? [] : undefined;
  const assumedHeadroom = api
    ? {
        slots: new Int32Array(trace.size),
        fromMs: new Float64Array(trace.size).fill(Number.NaN),
        byMs: new Float64Array(trace.size).fill(Number.NaN),
      }
    : undefined;
  const lambdaFullSpans: { fromMs: number; toMs: number }[] | undefined = api ? [] : undefined;
  let lambdaUsed = 0;
  const assumedJoins = api
    ? {
        atMost: new Int32Array(trace.size).fill(-1),
        fromMs: new Float64Array(trace.size).fill(Number.NaN),
        byMs: new Float64Array(trace.size).fill(Number.NaN),
        pool: trace.runtime,
        tenant: trace.tenant,
      }
    : undefined;
  const joinsByPool: { atMs: number; tenant: number }[][] | undefined = api ? [[], []] : undefined;
  const assumedBusyWeight = api
    ? {
        atMost: new Float64Array(trace.size).fill(Number.NaN),
        fromMs: new Float64Array(trace.size).fill(Number.NaN),
        byMs: new Float64Array(trace.size).fill(Number.NaN),
      }
    : undefined;
  const busyWeightSteps: { atMs: number; weight: number }[] | undefined = api ? [] : undefined;
  /** Record the engine's summed weight of tenants with work when it moved (the peak inside an instant included). */
  const recordBusyWeight = (atMs: number) => {
    if (!api || !busyWeightSteps) return;
    const weight = api.busyWeight;
    const last = busyWeightSteps.at(-1);
    if (last && last.atMs === atMs) last.weight = Math.max(last.weight, weight);
    else if (!last || last.weight !== weight) busyWeightSteps.push({ atMs, weight });
  };

  /** Per tenant, its running tasks (for the API's describe), only with `apiBounds`. */
  const runningOf = api ? trace.tenantIds.map(() => new Map<number, RunningTask>()) : undefined;
  const n = trace.size;
  const tenantCount = trace.tenantIds.length;
  /** Per pool and tenant, its tasks waiting there (for the joins the API's bound assumed). */
  const waitingIn = api ? [new Int32Array(tenantCount), new Int32Array(tenantCount)] : undefined;
  const waitMs = new Float64Array(n).fill(Number.NaN);
  const capacity = capacityOf(trace.pools);
  const usedSlots = new Float64Array(tenantCount);
  const usedVcpu = new Float64Array(tenantCount);
  const usedMemory = new Float64Array(tenantCount);
  const waiting = new Int32Array(tenantCount);
  const shareSum = new Float64Array(tenantCount);
  const shareSamples = new Int32Array(tenantCount);
  const weights = trace.tenantSettings.map((s) => s.weight);
  const completions = new Completions();
  const horizonMs = n > 0 ? (trace.arriveMs[n - 1] as number) : 0;
  const sampleEveryMs = Math.max(1000, horizonMs / 200);
  let nextSampleMs = 0;
  let jainSum = 0;
  let jainSamples = 0;
  let lambdaBusy = 0;
  let fargateBusy = 0;
  let lastFinish = 0;
  let arrived = 0;

  const share = (t: number) =>
    Math.max(
      (usedSlots[t] as number) / capacity.slots,
      ((usedVcpu[t] as number) * 1000) / capacity.milliVcpu,
      (usedMemory[t] as number) / capacity.memoryMiB,
    ) / (weights[t] as number);
  const account = (task: number, sign: 1 | -1) => {
    const t = trace.tenant[task] as number;
    if (trace.runtime[task] === 0) usedSlots[t] = (usedSlots[t] as number) + sign;
    else {
      usedVcpu[t] = (usedVcpu[t] as number) + sign * (trace.vcpu[task] as number);
      usedMemory[t] = (usedMemory[t] as number) + sign * (trace.memoryMiB[task] as number);
    }
  };
  const sample = () => {
    const shares: number[] = [];
    for (let t = 0; t < tenantCount; t++) {
      if ((waiting[t] as number) === 0) continue;
      const s = share(t);
      shares.push(s);
      shareSum[t] = (shareSum[t] as number) + s;
      shareSamples[t] = (shareSamples[t] as number) + 1;
    }
    if (shares.length >= 2) {
      jainSum += jainIndex(shares);
      jainSamples++;
    }
  };

  while (arrived < n || completions.size > 0) {
    const now = Math.min(
      arrived < n ? (trace.arriveMs[arrived] as number) : Number.POSITIVE_INFINITY,
      completions.peekTime(),
    );
    while (completions.peekTime() <= now) {
      const task = completions.pop();
      dispatcher.release(String(task), now);
      if (trace.runtime[task] === 0) {
        lambdaFreedMs?.push(now);
        if (lambdaUsed-- === capacity.slots) {
          const span = lambdaFullSpans?.at(-1);
          if (span) span.toMs = now;
        }
      }
      account(task, -1);
      runningOf?.[trace.tenant[task] as number]?.delete(task);
    }
    while (arrived < n && (trace.arriveMs[arrived] as number) <= now) {
      const task = arrived++;
      const fargate = trace.runtime[task] === 1;
      const candidate: Candidate = {
        taskId: String(task),
        tenantId: trace.tenantIds[trace.tenant[task] as number] as string,
        priority: tierName(trace.tier[task] as number),
        runtime: fargate ? 'fargate' : 'lambda',
        resources: { vcpu: trace.vcpu[task] as number, memoryMiB: trace.memoryMiB[task] as number },
        agingFromMs: now,
        runAtMs: now,
        seq: task,
        holdSeconds: options.holdSeconds?.(task) ?? (trace.timeoutMs[task] as number) / 1000,
      };
      dispatcher.add(candidate);
      const tenant = trace.tenant[task] as number;
      waiting[tenant] = (waiting[tenant] as number) + 1;
      if (waitingIn && joinsByPool) {
        const pool = trace.runtime[task] as number;
        const inPool = waitingIn[pool] as Int32Array;
        if ((inPool[tenant] as number) === 0) joinsByPool[pool]?.push({ atMs: now, tenant });
        inPool[tenant] = (inPool[tenant] as number) + 1;
      }
      if (api && boundMs && tenantRanAtSubmit && runningOf) {
        const running = [...(runningOf[tenant] as Map<number, RunningTask>).values()];
        const bound = api.atSubmit(candidate, now, waiting[tenant] as number, running);
        if (bound !== null) boundMs[task] = bound.seconds * 1000;
        if (bound?.busyWeight && assumedBusyWeight) {
          assumedBusyWeight.atMost[task] = bound.busyWeight.atMost;
          assumedBusyWeight.fromMs[task] = bound.busyWeight.fromMs;
          assumedBusyWeight.byMs[task] = bound.busyWeight.byMs;
        }
        if (bound?.joins && assumedJoins) {
          assumedJoins.atMost[task] = bound.joins.atMost;
          assumedJoins.fromMs[task] = bound.joins.fromMs;
          assumedJoins.byMs[task] = bound.joins.byMs;
        }
        if (bound?.headroom && assumedHeadroom) {
          assumedHeadroom.slots[task] = bound.headroom.slots;
          assumedHeadroom.fromMs[task] = bound.headroom.fromMs;
          assumedHeadroom.byMs[task] = bound.headroom.byMs;
        }
        if (bound?.freed && assumedFreed) {
          assumedFreed.slots[task] = bound.freed.slots;
          assumedFreed.fromMs[task] = bound.freed.fromMs;
          assumedFreed.byMs[task] = bound.freed.byMs;
          if (bound.freed.tenantFreeByMs !== undefined) {
            assumedFreed.tenantFreeByMs[task] = bound.freed.tenantFreeByMs;
            let freedMs = now;
            for (const [other, ran] of runningOf[tenant] as Map<number, RunningTask>) {
              freedMs = Math.max(freedMs, ran.dispatchedAtMs + (trace.holdMs[other] as number));
            }
            assumedFreed.tenantFreedMs[task] = freedMs;
          }
        }
        tenantRanAtSubmit[task] = running.length > 0 ? 1 : 0;
      }
    }
    recordBusyWeight(now);
    observe?.(dispatcher, now, arrived);
    for (let next = dispatcher.next(now); next; next = dispatcher.next(now)) {
      const task = next.seq;
      waitMs[task] = now - (trace.arriveMs[task] as number);
      const tenant = trace.tenant[task] as number;
      waiting[tenant] = (waiting[tenant] as number) - 1;
      const inPool = waitingIn?.[trace.runtime[task] as number];
      if (inPool) inPool[tenant] = (inPool[tenant] as number) - 1;
      account(task, 1);
      if (trace.runtime[task] === 0 && ++lambdaUsed === capacity.slots) {
        lambdaFullSpans?.push({ fromMs: now, toMs: Number.POSITIVE_INFINITY });
      }
      const hold = trace.holdMs[task] as number;
      completions.push(now + hold, task);
      runningOf?.[tenant]?.set(task, {
        runtime: trace.runtime[task] === 0 ? 'lambda' : 'fargate',
        resources: { vcpu: trace.vcpu[task] as number, memoryMiB: trace.memoryMiB[task] as number },
        dispatchedAtMs: now,
        timeoutSeconds: Math.ceil((trace.timeoutMs[task] as number) / 1000),
      });
      if (trace.runtime[task] === 0) lambdaBusy += hold;
      else fargateBusy += hold * (trace.vcpu[task] as number);
      lastFinish = Math.max(lastFinish, now + hold);
    }
    recordBusyWeight(now);
    api?.afterDecisions(now);
    if (now >= nextSampleMs) {
      sample();
      nextSampleMs = now + sampleEveryMs;
    }
  }
  const makespanMs = Math.max(1, lastFinish - (n > 0 ? (trace.arriveMs[0] as number) : 0));
  const meanShareWhileBacklogged = new Float64Array(tenantCount);
  for (let t = 0; t < tenantCount; t++) {
    meanShareWhileBacklogged[t] = shareSamples[t] ? (shareSum[t] as number) / (shareSamples[t] as number) : Number.NaN;
  }
  return {
    dispatcher: name,
    waitMs,
    makespanMs,
    utilization: {
      lambda: lambdaBusy / (capacity.slots * makespanMs),
      fargate: fargateBusy / ((capacity.milliVcpu / 1000) * makespanMs),
    },
    jain: jainSamples ? jainSum / jainSamples : 1,
    meanShareWhileBacklogged,
    ...(boundMs ? { boundMs } : {}),
    ...(tenantRanAtSubmit ? { tenantRanAtSubmit } : {}),
    ...(assumedFreed && lambdaFreedMs ? { assumedFreed, lambdaFreedMs } : {}),
    ...(assumedHeadroom && lambdaFullSpans ? { assumedHeadroom, lambdaFullSpans } : {}),
    ...(assumedJoins && joinsByPool ? { assumedJoins, joinsByPool } : {}),
    ...(assumedBusyWeight && busyWeightSteps ? { assumedBusyWeight, busyWeightSteps } : {}),
    wallMs: performance.now() - started,
  };
}
