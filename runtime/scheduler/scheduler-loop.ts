/**
 * Runs schedulers one at a time. A scheduler ticks only while it holds the `scheduler` lease in
 * the control table; a second instance waits for the lease, and when the holder crashes its
 * lease lapses and the waiting one takes over, rebuilding its view from DynamoDB (`resume`).
 * A holder that fails to renew (paused, partitioned) stops dispatching at once and starts over
 * with a fresh Scheduler, because its in-memory view may be stale.
 */
import { randomUUID } from 'node:crypto';
import type { Lease } from '../adapters/control-store.ts';
import type { TaskLogger } from '../core/logger.ts';
import { schedulerLeaseName } from '../core/shards.ts';
import type { LeaseStore } from './ports.ts';
import type { Scheduler, TickResult } from './scheduler.ts';

export interface SchedulerLoopOptions {
  readonly control: LeaseStore;
  /** A fresh scheduler for each lease held. */
  readonly createScheduler: () => Scheduler;
  readonly signal: AbortSignal;
  /** Stop once this returns false (the Lambda stops shortly before its timeout). */
  readonly keepGoing?: () => boolean;
  /**
   * When it will stop (a Lambda invocation's end, then handing over) and how long an invocation
   * runs: published in the snapshot, so the API counts only the handovers a wait reaches.
   */
  readonly plannedStop?: (nowMs: number) => { readonly atMs: number; readonly everyMs: number };
  readonly ownerId?: string;
  readonly leaseTtlMs?: number;
  /** Long-poll wait of a tick holding tasks (on the completions queue). */
  readonly waitSeconds?: number;
  /**
   * Long-poll wait of a tick holding nothing (on the tier queues); default `waitSeconds`. A
   * function is asked before each tick (the Lambda shortens it as its time runs out).
   */
  readonly idleWaitSeconds?: number | (() => number);
  readonly now?: () => Date;
  readonly logger?: TaskLogger;
  readonly onTick?: (result: TickResult, scheduler: Scheduler) => void;
  readonly onLease?: (event: 'acquired' | 'lost' | 'released', lease: Lease) => void;
  /** How long after the previous holder's last possible write to wait before resuming. */
  readonly indexSettleMs?: number;
  /**
   * Scale to zero (runtime/scheduler/activation.ts): stop once the scheduler has had nothing to
   * hold or run for `afterMs` and `hasWork` finds nothing due soon, first publishing the stop as
   * a lease expiring `graceMs` ahead and polling until then. Undefined: loop until stopped.
   */
  readonly idleStop?: {
    readonly afterMs: number;
    readonly graceMs: number;
    /**
     * `keepAlive` renews the lease when due, and throws when it was lost: a check that reads many
     * registrations calls it between reads (2,000 of them outlast a 30 s lease).
     */
    readonly hasWork: (keepAlive: () => Promise<void>) => Promise<boolean>;
  };
  /** Return at once when another scheduler holds the lease, instead of waiting for it. */
  readonly waitForLease?: boolean;
  /** Told of every tick that failed (the loop survives it: it starts over with a fresh scheduler). */
  readonly onTickError?: (error: unknown) => void;
  /** The lease this loop holds: its shard's (`schedulerLeaseName`). @default SCHEDULER_LEASE */
  readonly leaseName?: string;
}

/** Why the loop returned: stopped (signal or keepGoing), idle (scale to zero), or lease held elsewhere. */
export type SchedulerLoopEnd = 'stopped' | 'idle' | 'lease-held';

/**
 * A new scheduler rebuilds its running counts from the lease ledger, read consistently (every
 * dispatch is on a page before its write), and for one release from the `byLeased` GSI an older
 * version wrote, which lags the table (typically well under a second): a dispatch such a
 * predecessor made just before handing over could be missing from that read and its tenant's
 * quota exceeded. So a new holder resumes no sooner than this long after the predecessor's
 * release (or lease expiry). The queue index's lag is covered by the intake's own margins.
 */
export const INDEX_SETTLE_MS = 2_000;

/** Shard 0's lease: the one a single scheduler holds (runtime/core/shards.ts `schedulerLeaseName`). */
export const SCHEDULER_LEASE = schedulerLeaseName(0);

/**
 * Long-poll waits of the scheduler Lambda on AWS. Busy (holding tasks): on the completions queue,
 * short enough that newly arrived tier messages are seen within 2 s. Idle (holding nothing): on
 * the tier queues, long, since an idle tick wakes as soon as any tier gets a message; it only
 * cuts empty receives (fivefold against 2 s). The local runtime polls every second: its polls are
 * free, and Ctrl-C waits for them.
 */
export const LAMBDA_POLL_SECONDS = { busy: 2, idle: 10 } as const;

/** The scheduler Lambda stops this long before its timeout, to hand back its lease and held messages. */
export const LAMBDA_SAFETY_MARGIN_MS = 15_000;

/** The configured idle poll, shortened to end within `msLeft`; at least 1 s (SQS whole seconds). */
export function idleWait(configuredSeconds: number, msLeft: number): number {
  return Math.max(1, Math.min(configuredSeconds, Math.floor(msLeft / 1000)));
}

/**
 * The loop timing of one scheduler Lambda invocation with `remainingMs()` left: the handler and
 * the simulations' modelled invocations share it, so they cannot drift apart. Every poll ends
 * before the safety margin begins, so handing back never waits on one.
 */
export function lambdaInvocationTiming(remainingMs: () => number) {
  // Taken at the invocation's start: how long each invocation of this function runs, at least.
  const runMs = remainingMs() - LAMBDA_SAFETY_MARGIN_MS;
  return {
    keepGoing: () => remainingMs() > LAMBDA_SAFETY_MARGIN_MS,
    plannedStop: (nowMs: number) => ({ atMs: nowMs + remainingMs() - LAMBDA_SAFETY_MARGIN_MS, everyMs: runMs }),
    waitSeconds: LAMBDA_POLL_SECONDS.busy,
    idleWaitSeconds: () => idleWait(LAMBDA_POLL_SECONDS.idle, remainingMs() - LAMBDA_SAFETY_MARGIN_MS),
  };
}

export async function runSchedulerLoop(options: SchedulerLoopOptions): Promise<SchedulerLoopEnd> {
  const { control, signal } = options;
  const owner = options.ownerId ?? `scheduler-${randomUUID()}`;
  const ttlMs = options.leaseTtlMs ?? 30_000;
  const now = options.now ?? (() => new Date());
  const keepGoing = () => !signal.aborted && (options.keepGoing?.() ?? true);
  const leaseName = options.leaseName ?? SCHEDULER_LEASE;

  while (keepGoing()) {
    const acquiredAtMs = now().getTime();
    const lease = await control.acquireLease(leaseName, owner, acquiredAtMs, ttlMs);
    if (!lease) {
      if (options.waitForLease === false) return 'lease-held';
      await sleep(Math.min(ttlMs / 3, 2_000), signal);
      continue;
    }
    options.onLease?.('acquired', lease);
    if (lease.predecessorUntilMs !== undefined) {
      const settleMs = lease.predecessorUntilMs + (options.indexSettleMs ?? INDEX_SETTLE_MS) - now().getTime();
      if (settleMs > 0) await sleep(settleMs, signal);
    }
    const scheduler = options.createScheduler();
    if (lease.predecessorUntilMs !== undefined) scheduler.tookOver();
    const plannedStop = options.plannedStop?.(now().getTime());
    if (plannedStop) scheduler.planHandover(plannedStop);
    let held: Lease | undefined = lease;
    const idle = new IdleStop(options.idleStop);
    // Dispatch stops a third of the TTL before the lease's end, by this host's clock; renewals
    // come every third, so a healthy holder never reaches the margin.
    const marginMs = ttlMs / 3;
    scheduler.holdLease({ token: lease.token, expiresAtMs: lease.expiresAt, marginMs });
    /** Renew when a third of the TTL passed since the last renewal; false: lost or lapsed (start over). */
    let renewedAtMs = acquiredAtMs;
    const renewIfDue = async (nowMs: number): Promise<boolean> => {
      if (nowMs - renewedAtMs < ttlMs / 3) return true;
      held = await control.acquireLease(leaseName, owner, nowMs, ttlMs);
      if (!held) {
        options.logger?.warn('scheduler lease lost; starting over', { owner });
        options.onLease?.('lost', lease);
        return false;
      }
      if (held.token !== lease.token) {
        // The lease had lapsed and was taken again (a new token): another scheduler may have
        // held it meanwhile, so this view is stale. Start over from DynamoDB.
        options.logger?.warn('scheduler lease lapsed and re-taken; starting over', { owner });
        options.onLease?.('lost', lease);
        return false;
      }
      scheduler.holdLease({ token: held.token, expiresAtMs: held.expiresAt, marginMs });
      renewedAtMs = nowMs;
      return true;
    };
    /** For a long idle check: renew when due (one renewal at a time), throw once the lease is lost. */
    let renewal: Promise<boolean> | undefined;
    const keepAlive = async (): Promise<void> => {
      renewal ??= renewIfDue(now().getTime()).finally(() => {
        renewal = undefined;
      });
      if (!(await renewal)) throw new LeaseLostDuringCheck();
    };
    try {
      await scheduler.resume();
      // The lease runs from its acquisition, not from the end of the resume: a resume that took
      // most of it (10,000 tenant-tiers to restore on a loaded host) renews before the first tick.
      // Counted from the resume's end, the next renewal came after the lease had lapsed, and each
      // start-over resumed again: lapses in a row.
      if (!(await renewIfDue(now().getTime()))) continue;
      while (keepGoing()) {
        const { idleWaitSeconds } = options;
        const configuredIdleWait = typeof idleWaitSeconds === 'function' ? idleWaitSeconds() : idleWaitSeconds;
        const idleWait = idle.shortenWait(configuredIdleWait, now().getTime());
        const result = await scheduler.tick({
          waitSeconds: options.waitSeconds ?? 1,
          // A stop during the tick's long poll dispatches nothing more (Ctrl-C, the Lambda's end).
          signal,
          ...(idleWait === undefined ? {} : { idleWaitSeconds: idleWait }),
        });
        options.onTick?.(result, scheduler);
        let step: Awaited<ReturnType<IdleStop['next']>>;
        try {
          step = await idle.next(result, scheduler, now, keepAlive);
        } catch (error) {
          if (error instanceof LeaseLostDuringCheck) break;
          throw error;
        }
        // After the check, which may have read for a while: a stop published from an earlier
        // instant would expire sooner than the grace period that submitters' cached reads rely on.
        const nowMs = now().getTime();
        if (step === 'stop') break;
        if (step === 'publish-stop' || step === 'cancel-stop') {
          // Stopping idle is a handover too (the next task needs a wake): the snapshot says so, and
          // the Lambda's own end again once work cancels the stop.
          if (plannedStop) {
            scheduler.planHandover(
              step === 'publish-stop' ? { atMs: nowMs + idle.graceMs, everyMs: plannedStop.everyMs } : plannedStop,
            );
          }
          // Publishing the stop shortens the lease to the grace period; cancelling renews it.
          held = await control.acquireLease(leaseName, owner, nowMs, step === 'publish-stop' ? idle.graceMs : ttlMs);
          if (!held || held.token !== lease.token) {
            options.logger?.warn('scheduler lease lost; starting over', { owner });
            options.onLease?.('lost', lease);
            break;
          }
          scheduler.holdLease({ token: held.token, expiresAtMs: held.expiresAt, marginMs });
          renewedAtMs = nowMs;
          continue;
        }
        if (step === 'stopping') continue;
        if (!(await renewIfDue(nowMs))) break;
      }
    } catch (error) {
      options.logger?.error('scheduler tick failed', { error: String(error) });
      options.onTickError?.(error);
      await sleep(1_000, signal);
    } finally {
      if (held) {
        await scheduler.releaseHeld().catch(() => {});
        // An idle holder made its last dispatch before its idle spell began: a successor need
        // not wait for the index to settle after the hand-back, only after that.
        await control.releaseLease(held, idle.quietSinceMs ?? now().getTime()).catch(() => {});
        options.onLease?.('released', held);
      }
    }
    if (idle.stopped) return 'idle';
  }
  return 'stopped';
}

/**
 * The idle-stop state machine of one lease hold: running → (idle for `afterMs`, nothing due)
 * publish-stop → stopping (polling out the grace period) → stop; any work while stopping
 * cancels the stop and renews the lease.
 */
class IdleStop {
  readonly #options: SchedulerLoopOptions['idleStop'];
  #idleSinceMs: number | undefined;
  #stopAtMs: number | undefined;
  /** When `hasWork` last found work due soon. */
  #checkedAtMs: number | undefined;
  stopped = false;

  /** When the idle spell that stopped the loop began (undefined unless it stopped idle). */
  get quietSinceMs(): number | undefined {
    return this.stopped ? this.#idleSinceMs : undefined;
  }

  constructor(options: SchedulerLoopOptions['idleStop']) {
    this.#options = options;
  }

  get graceMs(): number {
    return this.#options?.graceMs ?? 0;
  }

  /** While stopping, a poll must not outlast the grace period (SQS waits are whole seconds). */
  shortenWait(configured: number | undefined, nowMs: number): number | undefined {
    if (this.#stopAtMs === undefined) return configured;
    const left = Math.max(1, Math.ceil((this.#stopAtMs - nowMs) / 1000));
    return Math.min(configured ?? left, left);
  }

  async next(
    result: TickResult,
    scheduler: Scheduler,
    now: () => Date,
    keepAlive: () => Promise<void>,
  ): Promise<'run' | 'publish-stop' | 'stopping' | 'cancel-stop' | 'stop'> {
    const options = this.#options;
    if (!options) return 'run';
    const nowMs = now().getTime();
    // A promise in force is work: submits under it skipped their announcements (and the wake).
    const idle =
      result.received === 0 &&
      result.dispatched === 0 &&
      result.completed === 0 &&
      scheduler.heldCount === 0 &&
      scheduler.activeCount === 0 &&
      scheduler.readsPromisedUntilMs <= nowMs;
    if (!idle) {
      this.#idleSinceMs = undefined;
      this.#checkedAtMs = undefined;
      if (this.#stopAtMs === undefined) return 'run';
      this.#stopAtMs = undefined;
      return 'cancel-stop';
    }
    if (this.#stopAtMs !== undefined) {
      if (nowMs < this.#stopAtMs) return 'stopping';
      this.stopped = true;
      return 'stop';
    }
    this.#idleSinceMs ??= nowMs;
    if (nowMs - this.#idleSinceMs < options.afterMs) return 'run';
    if (this.#checkedAtMs !== undefined && nowMs - this.#checkedAtMs < options.afterMs) return 'run';
    if (await options.hasWork(keepAlive)) {
      // A task is due soon (a delay, a retry's backoff): stay, and ask again after another spell.
      this.#checkedAtMs = now().getTime();
      return 'run';
    }
    this.#stopAtMs = now().getTime() + options.graceMs;
    return 'publish-stop';
  }
}

/** The lease lapsed or was taken while the idle check read (renewIfDue has said so): start over. */
class LeaseLostDuringCheck extends Error {
  constructor() {
    super('the scheduler lease was lost during the idle check');
    this.name = 'LeaseLostDuringCheck';
  }
}

/** Wait `millis`, or less if `signal` aborts first (never rejects). */
export function sleep(millis: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, millis);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
