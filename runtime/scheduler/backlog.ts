/**
 * The real backlog per tenant and tier, for `/v1/status`, the dashboard, `tasks watch` and the
 * backlog metrics (issue 27). The intake holds only a window of each tenant-tier's work (about
 * twice its quota), so what it holds says 5 where 288 wait. This counts each active tenant-tier's
 * QUEUED entries in `byTenantQueue` instead, at a paced interval, so no request pays for a count:
 *
 *   active tenant-tier ─(due: never counted, or its interval passed)─▶ COUNT query, at most
 *   BACKLOG_COUNT_CAP + 1 entries ─▶ { queued, capped, countedAt }
 *   between counts: queued − dispatched since, never below what the intake holds of it
 *
 * A count reads every entry it counts (~0.05 read units each), so a big backlog is counted less
 * often: the interval grows with the last count, 10 ms per queued task, from 15 s to 2 minutes.
 * A tenant-tier at 3,000 is counted every 30 s, about 190 read units, ~$0.0000235.
 */

import { QUEUED_COUNT_CAP } from '../app/task-service.ts';
import type { RecentlyFinished, SchedulerSnapshot, TenantTierBacklog } from '../core/scheduler-snapshot.ts';
import type { PriorityTier, TaskState } from '../core/task.ts';
import type { TaskRepository } from './ports.ts';

/** A tenant-tier's backlog is counted up to this many (as `GET /v1/tenants/{id}` counts). */
export const BACKLOG_COUNT_CAP = QUEUED_COUNT_CAP;
export const BACKLOG_COUNT_MIN_EVERY_MS = 15_000;
export const BACKLOG_COUNT_MAX_EVERY_MS = 120_000;
/** Counts issued per scheduler tick at most (each is one or a few sequential pages). */
const COUNTS_PER_TICK = 4;
/** Tenant-tiers the snapshot lists at most, the largest backlogs first (the item stays small). */
export const SNAPSHOT_BACKLOG_ENTRIES = 200;
/** How long a tenant whose work finished stays in view. */
export const RECENTLY_FINISHED_SECONDS = 900;
const RECENTLY_FINISHED_TENANTS = 100;

export interface TenantTierHead {
  readonly tenantId: string;
  readonly tier: PriorityTier;
  /** Refs the intake holds of it. */
  readonly held: number;
  readonly oldestAgingFromMs: number | undefined;
}

interface Counted {
  queued: number;
  capped: boolean;
  countedAtMs: number;
  /** Dispatched since the count. */
  dispatched: number;
  counting: boolean;
}

const keyOf = (tenantId: string, tier: PriorityTier) => `${tier}\u0000${tenantId}`;

/** How long until a tenant-tier of `queued` tasks is counted again. */
export function countIntervalMs(queued: number): number {
  return Math.min(BACKLOG_COUNT_MAX_EVERY_MS, Math.max(BACKLOG_COUNT_MIN_EVERY_MS, queued * 10));
}

export class BacklogCounter {
  readonly #store: Pick<TaskRepository, 'countQueued'>;
  readonly #counts = new Map<string, Counted>();

  constructor(store: Pick<TaskRepository, 'countQueued'>) {
    this.#store = store;
  }

  /** A task of this tenant-tier was dispatched: one fewer waits than last counted. */
  dispatched(tenantId: string, tier: PriorityTier): void {
    const counted = this.#counts.get(keyOf(tenantId, tier));
    if (counted) counted.dispatched++;
  }

  /**
   * Count the tenant-tiers that are due (never counted first, then the stalest), a few per call;
   * forget those no longer active (a tenant-tier leaves the intake only once it found none queued).
   */
  async maybeCount(active: readonly TenantTierHead[], nowMs: number): Promise<void> {
    const activeKeys = new Set(active.map(({ tenantId, tier }) => keyOf(tenantId, tier)));
    for (const key of this.#counts.keys()) if (!activeKeys.has(key)) this.#counts.delete(key);
    const due = active
      .map((head) => ({ head, counted: this.#counts.get(keyOf(head.tenantId, head.tier)) }))
      .filter(
        ({ counted }) =>
          !counted || (!counted.counting && nowMs - counted.countedAtMs >= countIntervalMs(counted.queued)),
      )
      .sort((a, b) => (a.counted?.countedAtMs ?? -1) - (b.counted?.countedAtMs ?? -1))
      .slice(0, COUNTS_PER_TICK);
    await Promise.all(
      due.map(async ({ head }) => {
        const key = keyOf(head.tenantId, head.tier);
        const before = this.#counts.get(key);
        if (before) before.counting = true;
        try {
          const counted = await this.#store.countQueued(head.tenantId, head.tier, BACKLOG_COUNT_CAP + 1);
          this.#counts.set(key, {
            queued: Math.min(counted, BACKLOG_COUNT_CAP),
            capped: counted > BACKLOG_COUNT_CAP,
            countedAtMs: nowMs,
            dispatched: 0,
            counting: false,
          });
        } catch {
          // Counted again at the next interval; the view keeps the last count meanwhile.
          if (before) before.counting = false;
        }
      }),
    );
  }

  /** The backlog per tenant and tier, the largest first, for the snapshot. */
  view(active: readonly TenantTierHead[], nowMs: number): NonNullable<SchedulerSnapshot['backlog']> {
    const rows = active.map((head) => {
      const counted = this.#counts.get(keyOf(head.tenantId, head.tier));
      const estimate = counted ? counted.queued - counted.dispatched : 0;
      const row: TenantTierBacklog = {
        queued: Math.max(head.held, estimate),
        ...(counted?.capped ? { capped: true as const } : {}),
        oldestWaitSeconds:
          head.oldestAgingFromMs === undefined
            ? 0
            : Math.max(0, Math.round((nowMs - head.oldestAgingFromMs) / 100) / 10),
        ...(counted ? { countedAt: new Date(counted.countedAtMs).toISOString() } : {}),
      };
      return { head, row };
    });
    rows.sort((a, b) => b.row.queued - a.row.queued);
    const backlog: Record<string, Partial<Record<PriorityTier, TenantTierBacklog>>> = {};
    for (const { head, row } of rows.slice(0, SNAPSHOT_BACKLOG_ENTRIES)) {
      if (row.queued === 0 && head.held === 0) continue;
      // Own keys only: a tenant named `__proto__` must not reach the prototype.
      if (!Object.hasOwn(backlog, head.tenantId)) {
        Object.defineProperty(backlog, head.tenantId, {
          value: {},
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      backlog[head.tenantId]![head.tier] = row;
    }
    return backlog;
  }
}

/**
 * Tenants whose tasks finished in the last RECENTLY_FINISHED_SECONDS, from the completions the
 * scheduler drains: so an idle tenant stays in the views a while after its work ended. Carried
 * over from the previous snapshot when a scheduler starts (on AWS each invocation starts afresh).
 */
export class RecentlyFinishedTenants {
  /** tenantId → counts per minute bucket (epoch minute → counts), and the latest finish. */
  readonly #tenants = new Map<string, { buckets: Map<number, [number, number, number]>; lastMs: number }>();

  /** Seed from the previous snapshot: its counts as one bucket at their last finish. */
  restore(previous: SchedulerSnapshot['recentlyFinished'] | undefined, nowMs: number): void {
    for (const [tenantId, finished] of Object.entries(previous?.tenants ?? {})) {
      const lastMs = Date.parse(finished.lastFinishedAt);
      if (!(nowMs - lastMs < RECENTLY_FINISHED_SECONDS * 1000) || this.#tenants.has(tenantId)) continue;
      const buckets = new Map<number, [number, number, number]>([
        [Math.floor(lastMs / 60_000), [finished.succeeded, finished.failed, finished.cancelled]],
      ]);
      this.#tenants.set(tenantId, { buckets, lastMs });
    }
  }

  finished(tenantId: string, state: TaskState, nowMs: number): void {
    const slots: Partial<Record<TaskState, 0 | 1 | 2>> = { SUCCEEDED: 0, FAILED: 1, CANCELLED: 2 };
    const slot = slots[state];
    if (slot === undefined) return;
    let tenant = this.#tenants.get(tenantId);
    if (!tenant) {
      tenant = { buckets: new Map(), lastMs: nowMs };
      this.#tenants.set(tenantId, tenant);
    }
    const minute = Math.floor(nowMs / 60_000);
    const bucket = tenant.buckets.get(minute) ?? [0, 0, 0];
    bucket[slot]++;
    tenant.buckets.set(minute, bucket);
    tenant.lastMs = Math.max(tenant.lastMs, nowMs);
  }

  view(nowMs: number): NonNullable<SchedulerSnapshot['recentlyFinished']> {
    const oldestMinute = Math.floor((nowMs - RECENTLY_FINISHED_SECONDS * 1000) / 60_000);
    const rows: [string, RecentlyFinished][] = [];
    for (const [tenantId, tenant] of this.#tenants) {
      for (const minute of tenant.buckets.keys()) if (minute < oldestMinute) tenant.buckets.delete(minute);
      if (tenant.buckets.size === 0) {
        this.#tenants.delete(tenantId);
        continue;
      }
      const sum = [0, 0, 0];
      for (const bucket of tenant.buckets.values()) for (let i = 0; i < 3; i++) sum[i]! += bucket[i]!;
      rows.push([
        tenantId,
        {
          succeeded: sum[0]!,
          failed: sum[1]!,
          cancelled: sum[2]!,
          lastFinishedAt: new Date(tenant.lastMs).toISOString(),
        },
      ]);
    }
    rows.sort((a, b) => (a[1].lastFinishedAt < b[1].lastFinishedAt ? 1 : -1));
    return {
      windowSeconds: RECENTLY_FINISHED_SECONDS,
      tenants: Object.fromEntries(rows.slice(0, RECENTLY_FINISHED_TENANTS)),
    };
  }
}
