/**
 * Runs schedulers one at a time. A scheduler ticks only while it holds the `scheduler` lease in
 * the control table; a second instance waits for the lease, and when the holder crashes its
 * lease lapses and the waiting one takes over, rebuilding its view from DynamoDB (`resume`).
 * A holder that fails to renew (paused, partitioned) stops dispatching at once and starts over
 * with a fresh Scheduler, because its in-memory view may be stale.
 */
import { randomUUID } from 'node:crypto';
import type { ControlStore, Lease } from '../adapters/control-store.ts';
import type { TaskLogger } from '../task-types/define.ts';
import type { Scheduler, TickResult } from './scheduler.ts';

export interface SchedulerLoopOptions {
  readonly control: ControlStore;
  /** A fresh scheduler for each lease held. */
  readonly createScheduler: () => Scheduler;
  readonly signal: AbortSignal;
  /** Stop once this returns false (the Lambda stops shortly before its timeout). */
  readonly keepGoing?: () => boolean;
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
}

/**
 * A new scheduler rebuilds its running counts from the `byActive` GSI, which lags the table
 * (DynamoDB: typically well under a second). A dispatch its predecessor made just before handing
 * over could be missing from that read and its tenant's quota exceeded. So a new holder resumes
 * no sooner than this long after the predecessor's release (or lease expiry).
 */
export const INDEX_SETTLE_MS = 2_000;

export const SCHEDULER_LEASE = 'scheduler';

/**
 * Long-poll waits of the scheduler Lambda on AWS. Busy (holding tasks): on the completions queue,
 * short enough that newly arrived tier messages are seen within 2 s. Idle (holding nothing): on
 * the tier queues, long, since an idle tick wakes as soon as any tier gets a message; it only
 * cuts empty receives (fivefold against 2 s). The local runtime polls every second: its polls are
 * free, and Ctrl-C waits for them.
 */
export const LAMBDA_POLL_SECONDS = { busy: 2, idle: 10 } as const;

export async function runSchedulerLoop(options: SchedulerLoopOptions): Promise<void> {
  const { control, signal } = options;
  const owner = options.ownerId ?? `scheduler-${randomUUID()}`;
  const ttlMs = options.leaseTtlMs ?? 30_000;
  const now = options.now ?? (() => new Date());
  const keepGoing = () => !signal.aborted && (options.keepGoing?.() ?? true);

  while (keepGoing()) {
    const lease = await control.acquireLease(SCHEDULER_LEASE, owner, now().getTime(), ttlMs);
    if (!lease) {
      await sleep(Math.min(ttlMs / 3, 2_000), signal);
      continue;
    }
    options.onLease?.('acquired', lease);
    if (lease.predecessorUntilMs !== undefined) {
      const settleMs = lease.predecessorUntilMs + (options.indexSettleMs ?? INDEX_SETTLE_MS) - now().getTime();
      if (settleMs > 0) await sleep(settleMs, signal);
    }
    const scheduler = options.createScheduler();
    let held: Lease | undefined = lease;
    try {
      await scheduler.resume();
      let renewedAtMs = now().getTime();
      while (keepGoing()) {
        const { idleWaitSeconds } = options;
        const result = await scheduler.tick({
          waitSeconds: options.waitSeconds ?? 1,
          ...(idleWaitSeconds === undefined
            ? {}
            : { idleWaitSeconds: typeof idleWaitSeconds === 'number' ? idleWaitSeconds : idleWaitSeconds() }),
        });
        options.onTick?.(result, scheduler);
        const nowMs = now().getTime();
        if (nowMs - renewedAtMs >= ttlMs / 3) {
          held = await control.acquireLease(SCHEDULER_LEASE, owner, nowMs, ttlMs);
          if (!held) {
            options.logger?.warn('scheduler lease lost; starting over', { owner });
            options.onLease?.('lost', lease);
            break;
          }
          renewedAtMs = nowMs;
        }
      }
    } catch (error) {
      options.logger?.error('scheduler tick failed', { error: String(error) });
      await sleep(1_000, signal);
    } finally {
      if (held) {
        await scheduler.releaseHeld().catch(() => {});
        await control.releaseLease(held, now().getTime()).catch(() => {});
        options.onLease?.('released', held);
      }
    }
  }
}

function sleep(millis: number, signal: AbortSignal): Promise<void> {
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
