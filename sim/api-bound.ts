/**
 * What the API would answer at submit: `maxWaitSeconds` from runtime/app/wait.ts (the same code)
 * over a snapshot the scheduler published at most 2 s before, built from the engine as the
 * scheduler builds it (runtime/scheduler/snapshot.ts), with the tenant's waiting count and
 * running tasks as the describe reads them. The engine alone has no scheduler pace or handovers;
 * the API's allowance for them is included all the same, since it is what the API reports (with
 * the handovers a default deployment's scheduler Lambda plans, SCHEDULER_RUN_MS).
 */
import { explainWait } from '../runtime/app/wait.ts';
import { parseConfig, type SchedulerConfig } from '../runtime/core/config.ts';
import type { IntakeWindows } from '../runtime/core/intake/index.ts';
import type { SchedulingPolicy } from '../runtime/core/policy/policy.ts';
import type { Candidate } from '../runtime/core/policy/types.ts';
import type { SchedulerSnapshot } from '../runtime/core/scheduler-snapshot.ts';
import type { Runtime, Task, TaskResources } from '../runtime/core/task.ts';
import { LAMBDA_SAFETY_MARGIN_MS } from '../runtime/scheduler/scheduler-loop.ts';
import { buildSnapshot } from '../runtime/scheduler/snapshot.ts';
import { maxHoldSeconds, type Trace } from './trace.ts';

/** The scheduler publishes its snapshot this often. */
export const PUBLISH_EVERY_MS = 2_000;
/** The least leases the configuration allows (5 s each); the simulated tasks hold no lease. */
export const LEASE_SECONDS = 5;
/**
 * How long one scheduler Lambda invocation runs in the default deployment (the stack's 5 minute
 * timeout, lib/scheduler-loop.ts, less the loop's safety margin): the snapshot publishes the plan
 * of handovers such a scheduler would (the first invocation starting at 0), as the API reads it.
 */
export const SCHEDULER_RUN_MS = 300_000 - LAMBDA_SAFETY_MARGIN_MS;

const NO_WINDOWS = {
  refs: () => [][Symbol.iterator](),
  oldestAgingFromMs: () => new Map(),
  unreadSinceRestore: () => 0,
} as unknown as IntakeWindows;

/** A running task as the describe reads it. */
export interface RunningTask {
  readonly dispatchedAtMs: number;
  readonly timeoutSeconds: number;
  readonly runtime: Runtime;
  readonly resources: TaskResources;
}

export class ApiBoundModel {
  readonly config: SchedulerConfig;
  readonly #engine: SchedulingPolicy;
  #snapshot: SchedulerSnapshot | undefined;
  #nextPublishMs = Number.NEGATIVE_INFINITY;

  constructor(trace: Trace, engine: SchedulingPolicy, config?: SchedulerConfig) {
    this.#engine = engine;
    const caps = maxHoldSeconds(trace);
    // Tenant settings come from the engine (the API reads them per tenant); not configured here.
    this.config =
      config ??
      parseConfig(
        {
          policy: 'fair-share',
          agingSeconds: trace.agingSeconds,
          pools: {
            lambda: { concurrency: trace.pools.lambda.concurrency, maxTimeoutSeconds: Math.min(900, caps.lambda) },
            fargate: { ...trace.pools.fargate, maxTimeoutSeconds: caps.fargate },
          },
          tenantDefaults: { weight: 1, maxConcurrency: 100_000 },
          scheduler: { dispatchLeaseSeconds: LEASE_SECONDS, runLeaseSeconds: LEASE_SECONDS, bufferSize: 10 },
        },
        'simulated configuration',
      );
  }

  /** The summed weight of the tenants with work in the engine now (what `assumedBusyWeight` bounds). */
  get busyWeight(): number {
    return this.#engine.busyWeight;
  }

  /** After the engine's decisions at `nowMs`: publish a snapshot when one is due, as the scheduler does. */
  afterDecisions(nowMs: number): void {
    if (nowMs < this.#nextPublishMs) return;
    this.#snapshot = buildSnapshot(
      {
        policy: this.#engine,
        windows: NO_WINDOWS,
        pools: this.config.pools,
        dispatchesLastMinute: 0,
        handover: { atMs: (Math.floor(nowMs / SCHEDULER_RUN_MS) + 1) * SCHEDULER_RUN_MS, everyMs: SCHEDULER_RUN_MS },
      },
      nowMs,
    );
    this.#nextPublishMs = nowMs + PUBLISH_EVERY_MS;
  }

  /**
   * `maxWaitSeconds` for a task just submitted at `nowMs`, or null; with what it assumes the Lambda
   * pool frees when it rests on the pool's pace (`assumedFreed`, epoch ms), or keeps free when it
   * rests on its headroom (`assumedHeadroom`).
   */
  atSubmit(
    candidate: Candidate,
    nowMs: number,
    tenantWaiting: number,
    running: readonly RunningTask[],
  ): {
    seconds: number;
    freed?: { slots: number; fromMs: number; byMs: number; tenantFreeByMs?: number };
    joins?: { atMost: number; fromMs: number; byMs: number };
    /** On the Lambda pool's headroom: fewer than `slots` in use at every instant of [fromMs, byMs]. */
    headroom?: { slots: number; fromMs: number; byMs: number };
    /** Below its fair share: the engine's summed weight of tenants with work at most `atMost` in [fromMs, byMs]. */
    busyWeight?: { atMost: number; fromMs: number; byMs: number };
  } | null {
    const iso = (ms: number) => new Date(ms).toISOString();
    const task = {
      taskId: candidate.taskId,
      tenantId: candidate.tenantId,
      priority: candidate.priority,
      runtime: candidate.runtime,
      resources: candidate.resources,
      agingFrom: iso(candidate.agingFromMs),
      runAt: iso(candidate.runAtMs),
      state: 'QUEUED',
    } as Task;
    const facts = {
      waiting: tenantWaiting,
      running: running.map((r) => ({
        runtime: r.runtime,
        resources: r.resources,
        dispatchedAt: iso(r.dispatchedAtMs),
        runAt: iso(r.dispatchedAtMs),
        timeoutSeconds: r.timeoutSeconds,
      })),
    };
    const wait = explainWait(task, {
      config: this.config,
      tenant: this.#engine.tenantSettings(candidate.tenantId),
      snapshot: this.#snapshot,
      now: new Date(nowMs),
      facts,
    });
    if (wait.maxWaitSeconds === null) return null;
    const freed = wait.assumedFreed;
    const joins = wait.assumedJoins;
    const room = wait.assumedHeadroom;
    const busy = wait.assumedBusyWeight;
    return {
      ...(busy
        ? { busyWeight: { atMost: busy.atMost, fromMs: Date.parse(busy.from), byMs: Date.parse(busy.by) } }
        : {}),
      seconds: wait.maxWaitSeconds,
      ...(room ? { headroom: { slots: room.slots, fromMs: Date.parse(room.from), byMs: Date.parse(room.by) } } : {}),
      ...(joins ? { joins: { atMost: joins.atMost, fromMs: Date.parse(joins.from), byMs: Date.parse(joins.by) } } : {}),
      ...(freed
        ? {
            freed: {
              slots: freed.slots,
              fromMs: Date.parse(freed.from),
              byMs: Date.parse(freed.by),
              ...(freed.tenantFreeBy ? { tenantFreeByMs: Date.parse(freed.tenantFreeBy) } : {}),
            },
          }
        : {}),
    };
  }
}
