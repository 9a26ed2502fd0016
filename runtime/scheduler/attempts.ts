/**
 * The attempts a scheduler counts against capacity: dispatched or running tasks, from their
 * reservation's commit (or their adoption from DynamoDB) until they end. Together with the
 * reservations (reservation.ts: from the pick to the write) this is the one place that keeps the
 * engine's count in step: an attempt counted here is counted by the engine, and its end lets go
 * of both, and of its concurrency key's place.
 *
 *   Reservation.commit ────────────────▶ committed ─┐
 *   the ledger at resume, the reconciler ▶ adopted ─┴▶ end: a completion, its task queued again,
 *                                                       the reconciler ─▶ engine release, key place back
 */

import type { TaskLogger } from '../core/logger.ts';
import type { SchedulingPolicy } from '../core/policy/index.ts';
import type { ActiveCandidate } from '../core/policy/types.ts';
import type { Task } from '../core/task.ts';
import type { FlowControl } from './ports.ts';

export interface ActiveAttempt {
  readonly fence: number;
  readonly sinceMs: number;
  /** Its concurrency key, when this scheduler dispatched it (its place is handed back at the end). */
  readonly key?: { readonly tenantId: string; readonly name: string } | undefined;
}

export interface ActiveAttemptsDeps {
  readonly policy: Pick<SchedulingPolicy, 'markActive' | 'heldUntil' | 'release'>;
  readonly flow: Pick<FlowControl, 'releaseKey'>;
  readonly logger?: TaskLogger | undefined;
  /** Told when an attempt stops counting (the lease ledger settles it: lease-ledger.ts). */
  readonly ended?: ((taskId: string, fence: number) => void) | undefined;
}

export class ActiveAttempts {
  readonly #deps: ActiveAttemptsDeps;
  readonly #attempts = new Map<string, ActiveAttempt>();

  constructor(deps: ActiveAttemptsDeps) {
    this.#deps = deps;
  }

  get size(): number {
    return this.#attempts.size;
  }

  /** taskId → attempt (the reconciler's view of what this scheduler counts). */
  get view(): ReadonlyMap<string, ActiveAttempt> {
    return this.#attempts;
  }

  get(taskId: string): ActiveAttempt | undefined {
    return this.#attempts.get(taskId);
  }

  has(taskId: string): boolean {
    return this.#attempts.has(taskId);
  }

  /**
   * Its dispatch write landed (Reservation.commit): the capacity the engine counts since the
   * pick is the attempt's now, held until `holdUntilMs` at the latest (its timeout and leases).
   */
  committed(task: Task, nowMs: number, holdUntilMs: number): void {
    this.#attempts.set(task.taskId, {
      fence: task.fence,
      sinceMs: nowMs,
      key: task.concurrencyKey === undefined ? undefined : { tenantId: task.tenantId, name: task.concurrencyKey },
    });
    this.#deps.policy.heldUntil(task.taskId, holdUntilMs);
  }

  /**
   * Found holding capacity in DynamoDB (the lease index at resume, the reconciler): counted from
   * now, by the engine too. False when already counted.
   */
  adopt(task: ActiveCandidate & { readonly fence: number }, nowMs: number): boolean {
    if (this.#attempts.has(task.taskId)) return false;
    this.#attempts.set(task.taskId, { fence: task.fence, sinceMs: nowMs });
    this.#deps.policy.markActive(task);
    return true;
  }

  /**
   * The attempt is over: the engine lets its capacity go, and its concurrency key's place (when
   * this scheduler dispatched it) is handed back. Returns that write, which never rejects (a
   * holder left behind is found stale by the next start of its key: dispatch.ts staleHolders).
   */
  end(taskId: string): Promise<void> | undefined {
    const attempt = this.#attempts.get(taskId);
    this.#attempts.delete(taskId);
    this.#deps.policy.release(taskId);
    if (attempt) this.#deps.ended?.(taskId, attempt.fence);
    if (!attempt?.key) return undefined;
    const { tenantId, name } = attempt.key;
    return this.#deps.flow.releaseKey(tenantId, name, taskId, attempt.fence).catch((error: unknown) => {
      this.#deps.logger?.warn('could not release a concurrency key', { taskId, key: name, error: String(error) });
    });
  }
}
