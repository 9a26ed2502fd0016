/** Shared builders and a small discrete-event driver for the policy tests. */
import type { PolicyName } from '../../../runtime/core/config.ts';
import { SchedulingPolicy } from '../../../runtime/core/policy/policy.ts';
import type { Candidate, PolicyOptions, Pools } from '../../../runtime/core/policy/types.ts';
import type { PriorityTier, Runtime, TaskResources, TenantSettings } from '../../../runtime/core/task.ts';

export const SMALL: TaskResources = { vcpu: 0.25, memoryMiB: 512 };

let seq = 0;
export function candidate(
  overrides: Partial<Candidate> & { taskId: string; tenantId?: string; priority?: PriorityTier },
): Candidate {
  seq++;
  return {
    tenantId: 't1',
    priority: 'normal',
    runtime: 'lambda' as Runtime,
    resources: SMALL,
    agingFromMs: 0,
    runAtMs: 0,
    seq,
    ...overrides,
  };
}

export function makePolicy(
  options: Partial<Omit<PolicyOptions, 'pools'>> & {
    pools?: Partial<{ slots: number; vcpu: number; memoryMiB: number }>;
  },
): SchedulingPolicy {
  const pools: Pools = {
    lambda: { concurrency: options.pools?.slots ?? 10 },
    fargate: { vcpu: options.pools?.vcpu ?? 16, memoryMiB: options.pools?.memoryMiB ?? 32_768 },
  };
  return new SchedulingPolicy({
    policy: options.policy ?? 'fair-share',
    agingSeconds: options.agingSeconds ?? 60,
    tenantDefaults: options.tenantDefaults ?? { weight: 1, maxConcurrency: 1000 },
    ...options,
    pools,
  });
}

/** Calls next() until it returns undefined; returns the dispatched candidates in order. */
export function drain(policy: SchedulingPolicy, nowMs: number): Candidate[] {
  const out: Candidate[] = [];
  for (let next = policy.next(nowMs); next; next = policy.next(nowMs)) out.push(next);
  return out;
}

export function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

/** One task of a generated workload (lambda pool). */
export interface WorkItem {
  readonly tenantId: string;
  readonly priority: PriorityTier;
  readonly arriveMs: number;
  readonly delayMs: number;
  readonly holdMs: number;
  /** A Fargate task of this size (vCPU; memory scales with it), else a Lambda task. */
  readonly fargateVcpu?: number | undefined;
}

export interface DriveResult {
  readonly dispatchedAtMs: Map<string, number>;
  readonly candidates: Map<string, Candidate>;
  /** Called at each dispatch with the policy state just before it. */
}

export interface DriveHooks {
  /** After arrivals and releases of an instant, before dispatching. */
  beforeDispatch?(policy: SchedulingPolicy, nowMs: number, waiting: ReadonlyMap<string, Candidate>): void;
  onDispatch?(
    task: Candidate,
    nowMs: number,
    waiting: ReadonlyMap<string, Candidate>,
    active: ReadonlyMap<string, Candidate>,
  ): void;
  /** After next() returned undefined at an instant. */
  afterDrain?(
    policy: SchedulingPolicy,
    nowMs: number,
    waiting: ReadonlyMap<string, Candidate>,
    active: ReadonlyMap<string, Candidate>,
  ): void;
}

/**
 * Runs a workload to completion in virtual time: tasks arrive, wait, are dispatched by the policy
 * (called until it returns undefined at every instant something changes) and hold their slot for
 * `holdMs`. Deterministic.
 */
export function drive(
  policyName: PolicyName,
  work: readonly WorkItem[],
  settings: { slots: number; agingSeconds: number; tenants: Record<string, TenantSettings>; maxHoldSeconds: number },
  hooks: DriveHooks = {},
): DriveResult {
  const policy = makePolicy({
    policy: policyName,
    agingSeconds: settings.agingSeconds,
    pools: { slots: settings.slots, vcpu: 4, memoryMiB: 4096 },
    tenants: settings.tenants,
    maxHoldSeconds: settings.maxHoldSeconds,
  });
  const byId = new Map<string, { item: WorkItem; candidate: Candidate }>();
  const events = new Map<number, { arrive: Candidate[]; finish: string[] }>();
  const at = (time: number) => {
    let event = events.get(time);
    if (!event) {
      event = { arrive: [], finish: [] };
      events.set(time, event);
    }
    return event;
  };
  work.forEach((item, index) => {
    const c: Candidate = {
      taskId: `task-${index}`,
      tenantId: item.tenantId,
      priority: item.priority,
      runtime: item.fargateVcpu ? 'fargate' : 'lambda',
      resources: item.fargateVcpu ? { vcpu: item.fargateVcpu, memoryMiB: item.fargateVcpu * 1024 } : SMALL,
      agingFromMs: item.arriveMs,
      runAtMs: item.arriveMs + item.delayMs,
      seq: index,
    };
    byId.set(c.taskId, { item, candidate: c });
    at(item.arriveMs).arrive.push(c);
    if (item.delayMs > 0) at(c.runAtMs);
  });
  const waiting = new Map<string, Candidate>();
  const active = new Map<string, Candidate>();
  const dispatchedAtMs = new Map<string, number>();
  while (events.size > 0) {
    const now = Math.min(...events.keys());
    const event = events.get(now) as { arrive: Candidate[]; finish: string[] };
    events.delete(now);
    for (const taskId of event.finish) {
      policy.release(taskId);
      active.delete(taskId);
    }
    for (const c of event.arrive) {
      policy.add(c);
      waiting.set(c.taskId, c);
    }
    hooks.beforeDispatch?.(policy, now, waiting);
    for (let next = policy.next(now); next; next = policy.next(now)) {
      waiting.delete(next.taskId);
      hooks.onDispatch?.(next, now, waiting, active);
      active.set(next.taskId, next);
      dispatchedAtMs.set(next.taskId, now);
      at(now + (byId.get(next.taskId)?.item.holdMs ?? 0)).finish.push(next.taskId);
    }
    hooks.afterDrain?.(policy, now, waiting, active);
  }
  return { dispatchedAtMs, candidates: new Map([...byId].map(([id, v]) => [id, v.candidate])) };
}
