/**
 * The constraints on starting a task, each a small unit with one question: may this start now,
 * and if not, why (a typed `Hold`), as Kueue's admission checks each answer for themselves. The
 * engine (policy.ts) asks them, the dispatcher asks them again of the item it read (it knows the
 * task's type and key, which the queue index does not carry), the API's explanation names the
 * hold, and the wait bound lists them among its assumptions. A new constraint is one more unit
 * here and one more case of `Hold`.
 *
 * Two scopes, because they hold different things:
 * - tenant units (quota, tenant pause, start rate) hold all of a tenant's work: the engine takes
 *   the tenant out of every pool's order while one holds it;
 * - task units (task-type pause, concurrency key) hold one task: the engine parks it apart and
 *   serves the tenant's next task, so a held task never blocks the work behind it (no
 *   head-of-line blocking), and a parked task counts for nothing (no share, no slot, no quota).
 * Capacity (the pool's free resources) is the fifth, asked per pool: it holds a task the engine
 * keeps ready (the next one that fits may start beside it, or the pool is reserved for it).
 *
 * The engine's view is a cache. The durable records decide where it matters (control store):
 * the start-rate bucket and the key's holders are conditional writes in the dispatch round, and
 * pauses are read consistently after the round's picks (runtime/scheduler/dispatch.ts).
 */
import type { Runtime } from '../task.ts';
import type { StartRate, TenantSettings } from '../tenant-settings.ts';
import { nextStartUs } from './rate.ts';

export type Hold =
  | { readonly constraint: 'quota'; readonly active: number; readonly limit: number }
  | { readonly constraint: 'tenant_paused' }
  | { readonly constraint: 'rate'; readonly nextStartMs: number; readonly rate: StartRate }
  | { readonly constraint: 'type_paused'; readonly type: string }
  | { readonly constraint: 'key'; readonly key: string; readonly active: number; readonly limit: number };

export type HoldKind = Hold['constraint'];

/** What the tenant units look at. */
export interface TenantFacts {
  readonly settings: TenantSettings;
  /** Its tasks dispatched or running. */
  readonly active: number;
  /** Its start-rate limit, if any, and the bucket's theoretical arrival time (µs; undefined: full). */
  readonly rate?: StartRate | undefined;
  readonly tatUs?: number | undefined;
}

/** What the task units look at (what a task's item says; unknown fields are not held on). */
export interface TaskFacts {
  readonly type?: string | undefined;
  readonly concurrencyKey?: string | undefined;
  readonly concurrencyLimit?: number | undefined;
}

/** The default `concurrencyLimit` of a task that names a key. */
export const DEFAULT_CONCURRENCY_LIMIT = 1;

export const quota = {
  hold(tenant: TenantFacts): Hold | undefined {
    const limit = tenant.settings.maxConcurrency;
    return tenant.active >= limit ? { constraint: 'quota', active: tenant.active, limit } : undefined;
  },
};

export const tenantPause = {
  hold(tenant: TenantFacts): Hold | undefined {
    return tenant.settings.paused === true ? { constraint: 'tenant_paused' } : undefined;
  },
};

export const startRate = {
  hold(tenant: TenantFacts, nowMs: number): Hold | undefined {
    if (!tenant.rate) return undefined;
    const next = nextStartUs(tenant.rate, tenant.tatUs, nowMs * 1000);
    return next > nowMs * 1000
      ? { constraint: 'rate', nextStartMs: Math.ceil(next / 1000), rate: tenant.rate }
      : undefined;
  },
};

/** The tenant units in the order their holds are reported (the first that holds is the reason). */
export const TENANT_CONSTRAINTS = [tenantPause, quota, startRate] as const;

export function tenantHold(tenant: TenantFacts, nowMs: number): Hold | undefined {
  for (const unit of TENANT_CONSTRAINTS) {
    const hold = unit.hold(tenant, nowMs);
    if (hold) return hold;
  }
  return undefined;
}

export const typePause = {
  hold(task: TaskFacts, pausedTypes: ReadonlySet<string>): Hold | undefined {
    return task.type !== undefined && pausedTypes.has(task.type)
      ? { constraint: 'type_paused', type: task.type }
      : undefined;
  },
};

export const concurrencyKey = {
  /** `active`: the key's tasks dispatched or running (the caller's count: engine, or the key's holders item). */
  hold(task: TaskFacts, active: number): Hold | undefined {
    if (task.concurrencyKey === undefined) return undefined;
    const limit = task.concurrencyLimit ?? DEFAULT_CONCURRENCY_LIMIT;
    return active >= limit ? { constraint: 'key', key: task.concurrencyKey, active, limit } : undefined;
  },
};

/** A pool's resources, used or asked for (drf.ts's `ResourceVector`: Lambda slots, Fargate vCPU and memory). */
export interface PoolAmounts {
  readonly slots: number;
  readonly milliVcpu: number;
  readonly memoryMiB: number;
}

const NOTHING: PoolAmounts = { slots: 0, milliVcpu: 0, memoryMiB: 0 };

/** True when `demand` fits in `size − used` on every resource. */
export function fits(demand: PoolAmounts, used: PoolAmounts, size: PoolAmounts): boolean {
  return (
    used.slots + demand.slots <= size.slots &&
    used.milliVcpu + demand.milliVcpu <= size.milliVcpu &&
    used.memoryMiB + demand.memoryMiB <= size.memoryMiB
  );
}

/** The capacity unit's hold: the pool has no room for the task now, or never (bigger than the pool). */
export interface CapacityHold {
  readonly constraint: 'capacity';
  readonly runtime: Runtime;
  readonly never: boolean;
  /** It would fit what the pool has free, but not this scheduler shard's allowance of it. */
  readonly byAllowance?: true;
}

export const capacity = {
  /**
   * `size`: the whole pool (a task bigger never fits). `allowance`: what this scheduler may use
   * of it, when pools are shared among sharded schedulers (runtime/core/capacity-slices.ts);
   * "fits now" is asked of it instead.
   */
  hold(
    demand: PoolAmounts,
    used: PoolAmounts,
    size: PoolAmounts,
    runtime: Runtime,
    allowance: PoolAmounts = size,
  ): CapacityHold | undefined {
    if (!fits(demand, NOTHING, size)) return { constraint: 'capacity', runtime, never: true };
    if (fits(demand, used, allowance)) return undefined;
    return fits(demand, used, size)
      ? { constraint: 'capacity', runtime, never: false, byAllowance: true }
      : { constraint: 'capacity', runtime, never: false };
  },
  describe(hold: CapacityHold): string {
    if (hold.never) return `It is bigger than the whole ${hold.runtime} pool`;
    return hold.byAllowance
      ? `Its scheduler shard's allowance of the ${hold.runtime} pool is in use (the other shards hold the rest, by their demand)`
      : `The ${hold.runtime} pool has no room for it now`;
  },
};

/** A hold in words (the API's `wait.message`, logs). */
export function describeHold(hold: Hold, tenantId: string): string {
  switch (hold.constraint) {
    case 'quota':
      return `Tenant ${tenantId} has ${hold.active} of ${hold.limit} tasks dispatched or running (its maxConcurrency)`;
    case 'tenant_paused':
      return `Tenant ${tenantId} is paused: nothing of it starts until it is resumed`;
    case 'rate':
      return `Tenant ${tenantId} is at its start-rate limit (${hold.rate.perSecond}/s, burst ${hold.rate.burst}); its next start is allowed at ${new Date(hold.nextStartMs).toISOString()}`;
    case 'type_paused':
      return `Task type ${hold.type} is paused: its tasks start when it is resumed`;
    case 'key':
      return `Concurrency key ${hold.key} has ${hold.active} of ${hold.limit} tasks dispatched or running; it starts when one ends`;
  }
}
