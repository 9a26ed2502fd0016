/**
 * The scheduling-policy engine: given the waiting tasks, the active ones, the pools and the
 * tenants' settings, which task goes next. Pure: no I/O, time comes in as epoch milliseconds.
 *
 * Order (lexicographic; smaller goes first):
 *   fifo        (agingFrom, seq)
 *   priority    (effective tier, agingFrom, seq)
 *   fair-share  (tenant's weighted dominant share, effective tier, agingFrom, seq)
 * Under fair-share the share comes first: tiers order a tenant's own work, DRF orders tenants.
 * Tier-first was tried and rejected (docs/policy.md has the numbers): tiers are chosen by the
 * tenants themselves, so a tenant flooding `critical` would starve everyone, and with aging a
 * flooding tenant's backlog ages into higher tiers and overtakes other tenants' fresh work of
 * the same tier (noisy-neighbour: quiet tenants' p99 wait 601 s tier-first vs ~1 s share-first).
 * Tiers still decide between tenants of equal share (e.g. all idle) and between a tenant's own
 * tasks; the aging bound (aging.ts) holds per tenant, and across tenants because a tenant with
 * nothing running has share 0, the minimum. Deployments that want global tiers use `priority`.
 * Hard constraints apply under every policy: a task starts only if it fits its pool's free
 * capacity and its tenant is below maxConcurrency.
 *
 * Structure (all updates O(log n)):
 *   - per tenant and pool an `Entry` holding four FIFO heaps (one per base tier) keyed by
 *     (agingFrom, seq). The oldest task of a base tier is also the most aged, so an entry's best
 *     task is the best of four heads;
 *   - per pool an indexed heap of entries whose tenant is below quota, keyed by the order above;
 *   - a timer heap of entries keyed by the next instant one of their heads is promoted, so aging
 *     re-keys only the entries whose head changed tier (each head at most three times) instead
 *     of re-sorting anything as time passes;
 *   - a heap of delayed tasks keyed by runAt.
 *
 * Large Fargate tasks (backfill with a reservation, as Slurm does). When the pool's best task
 * does not fit the free capacity, a task that fits starts instead: first another tenant's best
 * task, best first, else a smaller task behind a best task that did not fit (ranked before it),
 * so a task too big for the free capacity blocks nobody, in its tenant or any other. Each such
 * start counts a pass of the pool's best task; once passed `reservationAfterSkips` times the
 * best task holds the pool: nothing else starts there until it fits (running tasks drain within
 * their hold time). The holder is recomputed at every decision: always the best-ranked task of
 * a tenant below quota, so a better-ranked task takes over the hold and a tenant at quota holds
 * nothing. The scan inspects at most `fitScanLimit` tenants' best tasks and as many tasks behind
 * them, at most `fitScanPerTenant` per tenant, which bounds the cost of one decision.
 */
import type { PolicyName } from '../config.ts';
import { PRIORITY_TIERS, type Runtime, type TenantSettings, tierRank } from '../task.ts';
import { effectiveRank, nextPromotionMs } from './aging.ts';
import { addInto, capacityOf, demandOf, fits, weightedDominantShare, zeroVector } from './drf.ts';
import { explainWait, type HoldSeconds, type PoolLeader, type WaitExplanation } from './explain.ts';
import { IndexedHeap, NOT_IN_HEAP } from './heap.ts';
import type {
  ActiveCandidate,
  Candidate,
  PolicyOptions,
  PolicySnapshot,
  PoolSnapshot,
  ResourceVector,
  TenantSnapshot,
} from './types.ts';

const DEFAULT_MAX_HOLD_SECONDS = 300;
/** Passes after which the pool's best task holds the pool (`reservationAfterSkips`). */
export const DEFAULT_RESERVATION_AFTER_SKIPS = 8;
const DEFAULT_FIT_SCAN_LIMIT = 64;
const DEFAULT_FIT_SCAN_PER_TENANT = 8;

type WaitingState = 'delayed' | 'ready' | 'unschedulable';

interface WaitingTask {
  readonly candidate: Candidate;
  readonly baseRank: number;
  readonly demand: ResourceVector;
  readonly tenant: TenantState;
  readonly pool: PoolState;
  state: WaitingState;
  /** Position in its tier heap or in the delayed heap (never both). */
  heapIndex: number;
  /** Times another task was started in its pool while it was the pool's best and did not fit. */
  skips: number;
}

interface ActiveTask {
  readonly tenant: TenantState;
  readonly demand: ResourceVector;
}

/** One tenant's ready work in one pool. */
interface Entry {
  readonly tenant: TenantState;
  readonly pool: PoolState;
  readonly tiers: readonly IndexedHeap<WaitingTask>[];
  head: WaitingTask | undefined;
  effectiveRank: number;
  nextAgingMs: number;
  poolIndex: number;
  agingIndex: number;
}

interface TenantState {
  readonly tenantId: string;
  settings: TenantSettings;
  readonly used: ResourceVector;
  share: number;
  active: number;
  waiting: number;
  readonly entries: Partial<Record<Runtime, Entry>>;
}

interface PoolState {
  readonly runtime: Runtime;
  readonly entries: IndexedHeap<Entry>;
  waiting: number;
}

/** A task to start and, when it is not its pool's best task, the best one it passes for fit. */
interface Pick {
  readonly task: WaitingTask;
  readonly entry: Entry;
  readonly passes: WaitingTask | undefined;
}

const olderTask = (a: WaitingTask, b: WaitingTask): boolean =>
  a.candidate.agingFromMs !== b.candidate.agingFromMs
    ? a.candidate.agingFromMs < b.candidate.agingFromMs
    : a.candidate.seq < b.candidate.seq;

const dueSooner = (a: WaitingTask, b: WaitingTask): boolean =>
  a.candidate.runAtMs !== b.candidate.runAtMs
    ? a.candidate.runAtMs < b.candidate.runAtMs
    : a.candidate.seq < b.candidate.seq;

const taskSlot = {
  get: (task: WaitingTask) => task.heapIndex,
  set: (task: WaitingTask, index: number) => {
    task.heapIndex = index;
  },
};

/** The entry order of each policy (see the header). Heads are never undefined inside a heap. */
function entryOrder(policy: PolicyName): (a: Entry, b: Entry) => boolean {
  const byAge = (a: Entry, b: Entry) => olderTask(a.head as WaitingTask, b.head as WaitingTask);
  if (policy === 'fifo') return byAge;
  if (policy === 'priority') {
    return (a, b) => (a.effectiveRank !== b.effectiveRank ? a.effectiveRank < b.effectiveRank : byAge(a, b));
  }
  return (a, b) => {
    if (a.tenant.share !== b.tenant.share) return a.tenant.share < b.tenant.share;
    if (a.effectiveRank !== b.effectiveRank) return a.effectiveRank < b.effectiveRank;
    return byAge(a, b);
  };
}

export class SchedulingPolicy {
  readonly policy: PolicyName;
  readonly agingSeconds: number;
  readonly #agingMs: number;
  readonly #options: PolicyOptions;
  readonly #capacity: ResourceVector;
  readonly #used: ResourceVector = zeroVector();
  readonly #holdSeconds: HoldSeconds;
  readonly #reservationAfterSkips: number;
  readonly #fitScanLimit: number;
  readonly #fitScanPerTenant: number;
  readonly #entryBefore: (a: Entry, b: Entry) => boolean;

  readonly #pools: Record<Runtime, PoolState>;
  readonly #poolList: readonly PoolState[];
  readonly #tenants = new Map<string, TenantState>();
  readonly #tenantSettings = new Map<string, TenantSettings>();
  readonly #waiting = new Map<string, WaitingTask>();
  readonly #active = new Map<string, ActiveTask>();
  readonly #delayed = new IndexedHeap<WaitingTask>(dueSooner, taskSlot);
  readonly #aging = new IndexedHeap<Entry>((a, b) => a.nextAgingMs < b.nextAgingMs, {
    get: (entry) => entry.agingIndex,
    set: (entry, index) => {
      entry.agingIndex = index;
    },
  });
  #unschedulable = 0;
  /** The latest time seen; time never runs backwards inside the policy. */
  #clockMs = Number.NEGATIVE_INFINITY;

  constructor(options: PolicyOptions) {
    this.#options = options;
    this.policy = options.policy;
    this.agingSeconds = options.agingSeconds;
    this.#agingMs = options.agingSeconds * 1000;
    this.#capacity = capacityOf(options.pools);
    const hold = options.maxHoldSeconds ?? DEFAULT_MAX_HOLD_SECONDS;
    this.#holdSeconds = typeof hold === 'number' ? { lambda: hold, fargate: hold } : hold;
    this.#reservationAfterSkips = options.reservationAfterSkips ?? DEFAULT_RESERVATION_AFTER_SKIPS;
    this.#fitScanLimit = options.fitScanLimit ?? DEFAULT_FIT_SCAN_LIMIT;
    this.#fitScanPerTenant = options.fitScanPerTenant ?? DEFAULT_FIT_SCAN_PER_TENANT;
    this.#entryBefore = entryOrder(options.policy);
    const pool = (runtime: Runtime): PoolState => ({
      runtime,
      entries: new IndexedHeap<Entry>(this.#entryBefore, {
        get: (entry) => entry.poolIndex,
        set: (entry, index) => {
          entry.poolIndex = index;
        },
      }),
      waiting: 0,
    });
    this.#pools = { lambda: pool('lambda'), fargate: pool('fargate') };
    this.#poolList = [this.#pools.lambda, this.#pools.fargate];
    for (const [tenantId, settings] of Object.entries(options.tenants ?? {}))
      this.#tenantSettings.set(tenantId, settings);
  }

  get waitingCount(): number {
    return this.#waiting.size;
  }

  get activeCount(): number {
    return this.#active.size;
  }

  /** Change (or, with undefined, reset to the defaults) a tenant's settings. Applies to queued work. */
  setTenant(tenantId: string, settings: TenantSettings | undefined): void {
    if (settings) this.#tenantSettings.set(tenantId, settings);
    else this.#tenantSettings.delete(tenantId);
    const tenant = this.#tenants.get(tenantId);
    if (!tenant) return;
    tenant.settings = this.#settingsOf(tenantId);
    this.#tenantChanged(tenant);
  }

  tenantSettings(tenantId: string): TenantSettings {
    return this.#settingsOf(tenantId);
  }

  /** A waiting task. Returns false (and changes nothing) when the task is already known. */
  add(candidate: Candidate): boolean {
    if (this.#waiting.has(candidate.taskId) || this.#active.has(candidate.taskId)) return false;
    const tenant = this.#tenant(candidate.tenantId);
    const pool = this.#pools[candidate.runtime];
    const demand = demandOf(candidate.runtime, candidate.resources);
    const task: WaitingTask = {
      candidate,
      baseRank: tierRank(candidate.priority),
      demand,
      tenant,
      pool,
      state: 'ready',
      heapIndex: NOT_IN_HEAP,
      skips: 0,
    };
    this.#waiting.set(candidate.taskId, task);
    tenant.waiting++;
    pool.waiting++;
    if (!fits(demand, zeroVector(), this.#capacity)) {
      // Bigger than the whole pool: it could only block its tenant's queue. Kept aside, explained.
      task.state = 'unschedulable';
      this.#unschedulable++;
    } else if (candidate.runAtMs > this.#clockMs) {
      task.state = 'delayed';
      this.#delayed.push(task);
    } else {
      this.#makeReady(task);
    }
    return true;
  }

  /** A waiting task is no longer waiting (cancelled, or dropped from the buffer). */
  remove(taskId: string): boolean {
    const task = this.#waiting.get(taskId);
    if (!task) return false;
    this.#forgetWaiting(task);
    this.#dropIfIdle(task.tenant);
    return true;
  }

  /** A task that already holds capacity (e.g. found DISPATCHED or RUNNING after a restart). */
  markActive(task: ActiveCandidate): void {
    if (this.#active.has(task.taskId)) return;
    const waiting = this.#waiting.get(task.taskId);
    if (waiting) this.#forgetWaiting(waiting);
    this.#activate(task.taskId, this.#tenant(task.tenantId), demandOf(task.runtime, task.resources));
  }

  /** An active task finished, or its dispatch failed: its capacity and quota are free again. */
  release(taskId: string): boolean {
    const active = this.#active.get(taskId);
    if (!active) return false;
    this.#active.delete(taskId);
    const tenant = active.tenant;
    tenant.active--;
    addInto(tenant.used, active.demand, -1);
    addInto(this.#used, active.demand, -1);
    this.#tenantChanged(tenant);
    this.#dropIfIdle(tenant);
    return true;
  }

  /** Picks the next task to dispatch at `nowMs` and marks it active, or undefined if none may start. */
  next(nowMs: number): Candidate | undefined {
    this.#advance(nowMs);
    let best: Pick | undefined;
    for (const pool of this.#poolList) {
      const pick = this.#pickInPool(pool);
      if (pick && (!best || this.#entryBefore(pick.entry, best.entry))) best = pick;
    }
    if (!best) return undefined;
    if (best.passes) best.passes.skips++;
    this.#forgetWaiting(best.task);
    this.#activate(best.task.candidate.taskId, best.task.tenant, best.task.demand);
    return best.task.candidate;
  }

  /**
   * Why a waiting task waits at `nowMs`, its effective tier and its wait bound (`explainWait`
   * over what the engine knows); undefined if not waiting. O(waiting): it counts the tasks ahead.
   */
  explain(taskId: string, nowMs: number): (WaitExplanation & { readonly taskId: string }) | undefined {
    this.#advance(nowMs);
    const task = this.#waiting.get(taskId);
    if (!task) return undefined;
    const { candidate, tenant, pool } = task;
    // k: its pool's older waiting tasks, and every other waiting task of its tenant (aging.ts).
    let aheadCount = 0;
    for (const other of this.#waiting.values()) {
      if (other === task) continue;
      if ((other.pool === pool && olderTask(other, task)) || other.tenant === tenant) aheadCount++;
    }
    const holder = this.#holder(pool);
    const explanation = explainWait({
      policy: this.policy,
      agingSeconds: this.agingSeconds,
      nowMs: this.#clockMs,
      task: {
        taskId,
        tenantId: candidate.tenantId,
        priority: candidate.priority,
        runtime: candidate.runtime,
        agingFromMs: candidate.agingFromMs,
        runAtMs: candidate.runAtMs,
        fitsPool: task.state !== 'unschedulable',
        fitsFree: this.#fitsFree(task),
      },
      tenant: { active: tenant.active, maxConcurrency: tenant.settings.maxConcurrency, weightedShare: tenant.share },
      pool: { heldForOther: holder !== undefined && holder !== task, leader: this.#leader(pool) },
      aheadCount,
      limits: {
        lambdaConcurrency: this.#capacity.slots,
        holdSeconds: this.#holdSeconds,
        reservationAfterSkips: this.#reservationAfterSkips,
      },
    });
    return { taskId, ...explanation };
  }

  /** Pool usage and per-tenant statistics at `nowMs` (O(tenants)). */
  snapshot(nowMs: number): PolicySnapshot {
    this.#advance(nowMs);
    let weightOfBusyTenants = 0;
    for (const tenant of this.#tenants.values()) weightOfBusyTenants += tenant.settings.weight;
    const tenants: TenantSnapshot[] = [];
    for (const tenant of this.#tenants.values()) {
      tenants.push({
        tenantId: tenant.tenantId,
        weight: tenant.settings.weight,
        maxConcurrency: tenant.settings.maxConcurrency,
        active: tenant.active,
        queued: tenant.waiting,
        usage: { lambdaSlots: tenant.used.slots, vcpu: tenant.used.milliVcpu / 1000, memoryMiB: tenant.used.memoryMiB },
        weightedDominantShare: tenant.share,
        entitlement: weightOfBusyTenants > 0 ? tenant.settings.weight / weightOfBusyTenants : 0,
      });
    }
    const lambda = this.#pools.lambda;
    const fargate = this.#pools.fargate;
    const pools: PoolSnapshot[] = [
      {
        runtime: 'lambda',
        capacity: { slots: this.#capacity.slots },
        used: { slots: this.#used.slots },
        waiting: lambda.waiting,
        reservedForTaskId: null,
        leader: this.#leader(lambda),
      },
      {
        runtime: 'fargate',
        capacity: { vcpu: this.#capacity.milliVcpu / 1000, memoryMiB: this.#capacity.memoryMiB },
        used: { vcpu: this.#used.milliVcpu / 1000, memoryMiB: this.#used.memoryMiB },
        waiting: fargate.waiting,
        reservedForTaskId: this.#holder(fargate)?.candidate.taskId ?? null,
        leader: this.#leader(fargate),
      },
    ];
    return {
      nowMs: this.#clockMs,
      policy: this.policy,
      waiting: this.#waiting.size,
      active: this.#active.size,
      unschedulable: this.#unschedulable,
      pools,
      tenants,
    };
  }

  // ---- internals ----

  #settingsOf(tenantId: string): TenantSettings {
    return this.#tenantSettings.get(tenantId) ?? this.#options.tenantDefaults;
  }

  #tenant(tenantId: string): TenantState {
    let tenant = this.#tenants.get(tenantId);
    if (!tenant) {
      tenant = {
        tenantId,
        settings: this.#settingsOf(tenantId),
        used: zeroVector(),
        share: 0,
        active: 0,
        waiting: 0,
        entries: {},
      };
      this.#tenants.set(tenantId, tenant);
    }
    return tenant;
  }

  /** Tenants with nothing waiting or running hold no state (settings are kept separately). */
  #dropIfIdle(tenant: TenantState): void {
    if (tenant.active === 0 && tenant.waiting === 0) this.#tenants.delete(tenant.tenantId);
  }

  #entry(tenant: TenantState, pool: PoolState): Entry {
    let entry = tenant.entries[pool.runtime];
    if (!entry) {
      entry = {
        tenant,
        pool,
        tiers: PRIORITY_TIERS.map(() => new IndexedHeap<WaitingTask>(olderTask, taskSlot)),
        head: undefined,
        effectiveRank: 0,
        nextAgingMs: Number.POSITIVE_INFINITY,
        poolIndex: NOT_IN_HEAP,
        agingIndex: NOT_IN_HEAP,
      };
      tenant.entries[pool.runtime] = entry;
    }
    return entry;
  }

  #makeReady(task: WaitingTask): void {
    task.state = 'ready';
    const entry = this.#entry(task.tenant, task.pool);
    (entry.tiers[task.baseRank] as IndexedHeap<WaitingTask>).push(task);
    this.#refresh(entry);
  }

  #forgetWaiting(task: WaitingTask): void {
    this.#waiting.delete(task.candidate.taskId);
    task.tenant.waiting--;
    task.pool.waiting--;
    if (task.state === 'delayed') this.#delayed.remove(task);
    else if (task.state === 'unschedulable') this.#unschedulable--;
    else {
      const entry = this.#entry(task.tenant, task.pool);
      (entry.tiers[task.baseRank] as IndexedHeap<WaitingTask>).remove(task);
      this.#refresh(entry);
    }
  }

  #activate(taskId: string, tenant: TenantState, demand: ResourceVector): void {
    this.#active.set(taskId, { tenant, demand });
    tenant.active++;
    addInto(tenant.used, demand, 1);
    addInto(this.#used, demand, 1);
    this.#tenantChanged(tenant);
  }

  /** Share, weight or quota of a tenant changed: re-key its entries in both pools. */
  #tenantChanged(tenant: TenantState): void {
    tenant.share = weightedDominantShare(tenant.used, this.#capacity, tenant.settings.weight);
    if (tenant.entries.lambda) this.#refresh(tenant.entries.lambda);
    if (tenant.entries.fargate) this.#refresh(tenant.entries.fargate);
  }

  /** Recompute an entry's head, effective rank and aging timer, and its place in the heaps. */
  #refresh(entry: Entry): void {
    const now = this.#clockMs;
    let head: WaitingTask | undefined;
    let headRank = 0;
    let nextAging = Number.POSITIVE_INFINITY;
    for (const tier of entry.tiers) {
      const candidate = tier.peek();
      if (!candidate) continue;
      if (this.policy === 'fifo') {
        if (!head || olderTask(candidate, head)) head = candidate;
        continue;
      }
      const { agingFromMs } = candidate.candidate;
      const rank = effectiveRank(candidate.baseRank, agingFromMs, now, this.#agingMs);
      nextAging = Math.min(nextAging, nextPromotionMs(candidate.baseRank, agingFromMs, now, this.#agingMs));
      if (!head || rank < headRank || (rank === headRank && olderTask(candidate, head))) {
        head = candidate;
        headRank = rank;
      }
    }
    entry.head = head;
    entry.effectiveRank = headRank;
    entry.nextAgingMs = nextAging;
    const eligible = head !== undefined && entry.tenant.active < entry.tenant.settings.maxConcurrency;
    if (eligible) entry.pool.entries.upsert(entry);
    else entry.pool.entries.remove(entry);
    if (eligible && nextAging !== Number.POSITIVE_INFINITY) this.#aging.upsert(entry);
    else this.#aging.remove(entry);
  }

  /** Move the clock: release due delayed tasks, re-key entries whose heads were promoted. */
  #advance(nowMs: number): void {
    if (nowMs > this.#clockMs) this.#clockMs = nowMs;
    const now = this.#clockMs;
    for (let due = this.#delayed.peek(); due && due.candidate.runAtMs <= now; due = this.#delayed.peek()) {
      this.#delayed.pop();
      this.#makeReady(due);
    }
    for (let aged = this.#aging.peek(); aged && aged.nextAgingMs <= now; aged = this.#aging.peek()) {
      this.#refresh(aged);
    }
  }

  #hasRoom(pool: PoolState): boolean {
    const used = this.#used;
    const capacity = this.#capacity;
    return pool.runtime === 'lambda'
      ? used.slots < capacity.slots
      : used.milliVcpu < capacity.milliVcpu && used.memoryMiB < capacity.memoryMiB;
  }

  /** The pool's best task now (its best tenant below quota's best task), or null. */
  #leader(pool: PoolState): PoolLeader | null {
    const top = pool.entries.peek();
    const head = top?.head;
    if (!top || !head) return null;
    return {
      taskId: head.candidate.taskId,
      tenantId: top.tenant.tenantId,
      weightedShare: top.tenant.share,
      effectiveRank: this.policy === 'fifo' ? head.baseRank : top.effectiveRank,
    };
  }

  #fitsFree(task: WaitingTask): boolean {
    return fits(task.demand, this.#used, this.#capacity);
  }

  /**
   * The task holding the pool, if any: the pool's best-ranked task (over tenants below quota) when
   * it does not fit and has been passed `reservationAfterSkips` times. Recomputed at every
   * decision (as Slurm's backfill does each cycle), so a reservation never outlives its reason: it
   * moves to a better-ranked task when one appears and lapses while its tenant is at quota.
   */
  #holder(pool: PoolState): WaitingTask | undefined {
    const best = pool.entries.peek()?.head;
    if (!best || best.skips < this.#reservationAfterSkips || this.#fitsFree(best)) return undefined;
    return best;
  }

  #pickInPool(pool: PoolState): Pick | undefined {
    if (pool.entries.size === 0 || !this.#hasRoom(pool)) return undefined;
    const top = pool.entries.peek() as Entry;
    const best = top.head as WaitingTask;
    if (this.#fitsFree(best)) return { task: best, entry: top, passes: undefined };
    if (best.skips >= this.#reservationAfterSkips) return undefined; // the pool is held for it
    // The best task does not fit: backfill. First the other tenants' best tasks, each inspected
    // once, best first; a tenant whose best task does not fit is remembered...
    const passedOver: Entry[] = [top];
    let found: Entry | undefined;
    for (const entry of pool.entries.ordered()) {
      if (entry === top) continue;
      if (passedOver.length >= this.#fitScanLimit) break;
      if (this.#fitsFree(entry.head as WaitingTask)) {
        found = entry;
        break;
      }
      passedOver.push(entry);
    }
    // ...and searched for a smaller task behind it (it ranks before `found`), at most
    // `fitScanPerTenant` tasks per tenant (Slurm's bf_max_job_user), so one tenant's long queue
    // of tasks that do not fit cannot use the whole scan.
    let budget = this.#fitScanLimit;
    for (const entry of passedOver) {
      const inner = this.#firstFitBehindHead(entry, Math.min(budget, this.#fitScanPerTenant));
      if (inner.task) return { task: inner.task, entry, passes: best };
      budget -= inner.inspected;
      if (budget <= 0) break;
    }
    return found ? { task: found.head as WaitingTask, entry: found, passes: best } : undefined;
  }

  /**
   * The best task of an entry after its head that fits the free capacity, inspecting at most
   * `budget` tasks in the entry's own order (effective tier, then age): a merge of its tier heaps.
   */
  #firstFitBehindHead(entry: Entry, budget: number): { task: WaitingTask | undefined; inspected: number } {
    const cursors = entry.tiers.map((tier) => {
      const walk = tier.ordered();
      const first = walk.next();
      return { walk, task: first.done ? undefined : first.value };
    });
    const rankOf = (task: WaitingTask) =>
      this.policy === 'fifo'
        ? 0
        : effectiveRank(task.baseRank, task.candidate.agingFromMs, this.#clockMs, this.#agingMs);
    let inspected = 0;
    while (inspected < budget) {
      let next: (typeof cursors)[number] | undefined;
      for (const cursor of cursors) {
        if (!cursor.task) continue;
        if (!next?.task) {
          next = cursor;
          continue;
        }
        const a = rankOf(cursor.task);
        const b = rankOf(next.task);
        if (a < b || (a === b && olderTask(cursor.task, next.task))) next = cursor;
      }
      const task = next?.task;
      if (!next || !task) break;
      const advanced = next.walk.next();
      next.task = advanced.done ? undefined : advanced.value;
      if (task === entry.head) continue;
      inspected++;
      if (this.#fitsFree(task)) return { task, inspected };
    }
    return { task: undefined, inspected };
  }
}
