/**
 * The scheduling-policy engine: given the waiting tasks, the active ones, the pools and the
 * tenants' settings, which task goes next. Pure: no I/O, time comes in as epoch milliseconds.
 *
 * Order (lexicographic; smaller goes first):
 *   fifo        (agingFrom, seq)
 *   priority    (effective tier, agingFrom, seq)
 *   fair-share  tenants below their fair share first, by turn in the pool's rotation; then the
 *               others by (weighted dominant share, turn); inside a tenant (effective tier,
 *               agingFrom, seq). A tenant's fair share is its weight over the summed weight of
 *               the tenants with work in the engine (waiting, due later or running).
 * Under fair-share DRF and the rotation order tenants and tiers order a tenant's own work. Tier-first was tried
 * and rejected (docs/policy.md has the numbers): tiers are chosen by the tenants themselves, so a
 * tenant flooding `critical` would starve everyone. Deployments that want global tiers use
 * `priority`. Hard constraints apply under every policy: a task starts only if it fits its
 * pool's free capacity and its tenant is below maxConcurrency.
 *
 * The rotation (fair-share). Tenants below their fair share, and ties of equal share above it
 * (with as many busy tenants as slots each one whose task just ended is back at 0), go in the
 * order of their turns in the pool's rotation: a tenant's turn is the
 * later of when it was last served in the pool and when its work there became due, so serving a
 * tenant sends it to the end, and a tenant that starts waiting joins at the end, behind every
 * tenant already waiting (ties to arrival order). Tie-breaking by age instead made fair share
 * FIFO across tenants (the backlog's heads are the oldest). The rotation gives the wait bound
 * its shape (bound.ts): a tenant's only waiting task is passed by at most one task of each
 * tenant ahead of it once its tenant runs nothing, or while its tenant stays below its fair share,
 * and by no tenant that arrives later. Below the fair share the ring and not DRF decides so that
 * a tenant running a few tasks is not passed by every later arrival at share 0 (docs/policy.md). Its
 * memory, when each tenant was last served, is explicit (`rotationState`/`restoreRotation`), so a
 * scheduler that starts afresh keeps the order.
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
 * Large Fargate tasks (EASY backfill, as Slurm does). When the pool's best task does not fit the
 * free capacity, it reserves the pool at once: its shadow time is when enough of the running
 * tasks will have ended (each at its dispatch plus its hold: timeout and leases, or the pool's
 * `maxHoldSeconds` when not known). Another task starts beside it only if it fits now and ends
 * by the shadow time, so the best task starts within one drain of the tasks running when it
 * became best. The candidates are first the other tenants' best tasks, best first, then tasks
 * behind a best task that did not fit. The holder is recomputed at every decision: the
 * best-ranked task of a tenant below quota (under fair-share the task holding the pool keeps it
 * against tenants of equal share: #reservedFor). The scan inspects at most `fitScanLimit` tenants' best
 * tasks and as many tasks behind them, at most `fitScanPerTenant` per tenant, which bounds the
 * cost of one decision. With `reservations: false`, anything that fits starts (large tasks may
 * starve).
 */
import type { PolicyName } from '../config.ts';
import { INTAKE_ALLOWANCE_MS } from '../intake-allowance.ts';
import { PRIORITY_TIERS, type PriorityTier, type Runtime, tierRank } from '../task.ts';
import { type StartRate, startRateOf, type TenantSettings } from '../tenant-settings.ts';
import { effectiveRank, nextPromotionMs } from './aging.ts';
import {
  capacity,
  concurrencyKey,
  DEFAULT_CONCURRENCY_LIMIT,
  type Hold,
  tenantHold,
  typePause,
} from './constraints.ts';
import { addInto, capacityOf, demandOf, weightedDominantShare, zeroVector } from './drf.ts';
import { explainWait, type HoldSeconds, type PoolLeader, type WaitExplanation } from './explain.ts';
import { belowFairShare, FAIR_SHARE_EPSILON } from './fair-share.ts';
import { IndexedHeap, NOT_IN_HEAP } from './heap.ts';
import { FreedSlots, RecentRuns, UsedSlots } from './pace.ts';
import { grantStarts } from './rate.ts';
import type {
  ActiveCandidate,
  Candidate,
  PolicyOptions,
  PolicySnapshot,
  PoolSnapshot,
  ResourceVector,
  RotationState,
  TenantSnapshot,
} from './types.ts';

const DEFAULT_MAX_HOLD_SECONDS = 300;
const DEFAULT_FIT_SCAN_LIMIT = 64;
const DEFAULT_FIT_SCAN_PER_TENANT = 8;
/**
 * How long the rotation remembers when a tenant that no longer waits in a pool was last served:
 * long enough for its next window of queued work to arrive (a refill, a restart), so it does not
 * rejoin ahead of tenants it was served before.
 */
export const ROTATION_MEMORY_MS = 10 * 60_000;

/** `parked`: held by a task unit (a paused type, a full key), out of every heap until let go. */
type WaitingState = 'delayed' | 'ready' | 'unschedulable' | 'parked';

interface WaitingTask {
  readonly candidate: Candidate;
  readonly baseRank: number;
  readonly demand: ResourceVector;
  readonly tenant: TenantState;
  readonly pool: PoolState;
  state: WaitingState;
  /** Position in its tier heap or in the delayed heap (never both). */
  heapIndex: number;
  /** While parked: what parked it. */
  parkedBy: Hold | undefined;
}

interface ActiveTask {
  readonly tenant: TenantState;
  readonly demand: ResourceVector;
  readonly pool: PoolState;
  /** It holds its pool until then at the latest (dispatch + hold). */
  untilMs: number;
  /** When it was dispatched (the engine's clock then, or the dispatch time it was adopted with). */
  readonly sinceMs: number;
  /** Its concurrency key, when it has one. */
  readonly key: KeyState | undefined;
}

/** One concurrency key of one tenant, as the engine knows it. */
interface KeyState {
  readonly name: string;
  /** Its tasks the engine counts as dispatched or running. */
  active: number;
  /** Its tasks waiting ready (not parked). */
  ready: number;
  /** Its tasks parked because the key is full, oldest parked first. */
  readonly parked: Set<WaitingTask>;
  /**
   * The key's durable holders refused a start (tasks the engine does not know of hold it, e.g.
   * after a restart): treated as full until then, when its best parked task is tried again.
   */
  blockedUntilMs: number;
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
  /** Ready tasks; the entry is in its pool's rotation while this is above 0. */
  ready: number;
  /** Its turn in the pool's rotation (fair-share): epoch ms, then arrival order. */
  turnMs: number;
  turnSeq: number;
  /** Its tenant's share when it was last placed in its pool's heap (counted in #heapShares). */
  heapShare: number;
}

interface TenantState {
  readonly tenantId: string;
  settings: TenantSettings;
  readonly used: ResourceVector;
  share: number;
  /** Its weight while it has work in the engine (waiting, due later or running), else 0: its part of #busyWeight. */
  countedWeight: number;
  active: number;
  waiting: number;
  readonly entries: Partial<Record<Runtime, Entry>>;
  readonly running: Set<ActiveTask>;
  /** Its start-rate limit (from its settings) and the bucket's TAT as the engine last knew it. */
  rate: StartRate | undefined;
  tatUs: number | undefined;
  /** What holds all of its work now (tenant units), recomputed at every refresh. */
  hold: Hold | undefined;
  /** While held by its start rate: when it may start again, and its place in the rate timers. */
  rateUntilMs: number;
  rateIndex: number;
  readonly keys: Map<string, KeyState>;
  /** Its parked tasks (task units), and per base tier. */
  parked: number;
  readonly parkedByRank: number[];
}

interface PoolState {
  readonly runtime: Runtime;
  readonly entries: IndexedHeap<Entry>;
  waiting: number;
  /** Tenants with ready work here (the rotation). */
  rotation: number;
  readonly running: Set<ActiveTask>;
  /** When each tenant was last served here (the rotation's memory). */
  readonly lastServedMs: Map<string, number>;
  /** Turns of the tenants waiting here when a predecessor saved its memory, until each joins again. */
  readonly restoredTurns: Map<string, number>;
  /** The task the pool was last reserved for (fair-share keeps it while it is valid: #reservedFor). */
  heldFor: WaitingTask | undefined;
  /** Tenants that joined the rotation in the last minute, by when they last did (oldest first). */
  readonly joins: Map<string, number>;
  /** Slots freed here lately: the pace the API's bound may rest on (pace.ts). */
  readonly freed: FreedSlots;
  /** How full it has been lately (Lambda slots): the headroom the API's bound may rest on (pace.ts). */
  readonly occupancy: UsedSlots;
}

/** A task to start. */
interface Pick {
  readonly task: WaitingTask;
  readonly entry: Entry;
}

const olderTask = (a: WaitingTask, b: WaitingTask): boolean =>
  a.candidate.agingFromMs !== b.candidate.agingFromMs
    ? a.candidate.agingFromMs < b.candidate.agingFromMs
    : a.candidate.seq < b.candidate.seq;

const dueSooner = (a: WaitingTask, b: WaitingTask): boolean =>
  a.candidate.runAtMs !== b.candidate.runAtMs
    ? a.candidate.runAtMs < b.candidate.runAtMs
    : a.candidate.seq < b.candidate.seq;

/** When a task could first start: it is due and has begun aging. */
const eligibleFromMs = (task: WaitingTask): number => Math.max(task.candidate.agingFromMs, task.candidate.runAtMs);

const turnBefore = (a: Entry, b: Entry): boolean =>
  a.turnMs !== b.turnMs ? a.turnMs < b.turnMs : a.turnSeq < b.turnSeq;

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
  // fair-share is the engine's own (#fairShareBefore): its order depends on the tenants with work.
  return (a, b) => (a.tenant.share !== b.tenant.share ? a.tenant.share < b.tenant.share : turnBefore(a, b));
}

export class SchedulingPolicy {
  readonly policy: PolicyName;
  readonly agingSeconds: number;
  readonly #agingMs: number;
  readonly #options: PolicyOptions;
  readonly #capacity: ResourceVector;
  /**
   * What this scheduler may use of the pools when they are shared among sharded schedulers
   * (setAllowance); undefined: the whole pools. "Fits now" is asked of it; "never fits" and the
   * DRF shares keep the whole pools.
   */
  #allowance: ResourceVector | undefined;
  readonly #used: ResourceVector = zeroVector();
  readonly #holdSeconds: HoldSeconds;
  readonly #reservations: boolean;
  readonly #fitScanLimit: number;
  readonly #fitScanPerTenant: number;
  readonly #entryBefore: (a: Entry, b: Entry) => boolean;

  readonly #pools: Record<Runtime, PoolState>;
  readonly #poolList: readonly PoolState[];
  readonly #tenants = new Map<string, TenantState>();
  readonly #tenantSettings = new Map<string, TenantSettings>();
  readonly #waiting = new Map<string, WaitingTask>();
  readonly #active = new Map<string, ActiveTask>();
  /** How long each tenant's tasks ran lately (the pace bound's t₁, pace.ts). */
  readonly #recentRuns = new RecentRuns();
  readonly #delayed = new IndexedHeap<WaitingTask>(dueSooner, taskSlot);
  readonly #aging = new IndexedHeap<Entry>((a, b) => a.nextAgingMs < b.nextAgingMs, {
    get: (entry) => entry.agingIndex,
    set: (entry, index) => {
      entry.agingIndex = index;
    },
  });
  /** Tenants held by their start rate, by when they may start again. */
  readonly #rateTimers = new IndexedHeap<TenantState>((a, b) => a.rateUntilMs < b.rateUntilMs, {
    get: (tenant) => tenant.rateIndex,
    set: (tenant, index) => {
      tenant.rateIndex = index;
    },
  });
  readonly #pausedTypes = new Set<string>();
  /** Tasks parked by a paused type, per type. */
  readonly #parkedByType = new Map<string, Set<WaitingTask>>();
  /** Keys whose durable holders refused a start, until when (see KeyState.blockedUntilMs). */
  readonly #blockedKeys = new Map<KeyState, TenantState>();
  #unschedulable = 0;
  /** Arrival order in the rotations (ties of equal turn times). */
  #turnSeq = 0;
  /** The summed weight of the tenants with work in the engine (waiting, due later or running). */
  #busyWeight = 0;
  /** The #busyWeight the pools' heaps are ordered by (#settleOrder brings it up to date). */
  #orderWeight = 0;
  /** How many entries in the pools' heaps were placed at each share: which could change sides. */
  readonly #heapShares = new Map<number, number>();
  /** How #busyWeight moved lately: the API's bound may rest on its peak (bound.ts `paceBound`). */
  readonly #busyWeights = new UsedSlots();
  /** #busyWeight moved before the engine's first instant (work added at a start): #advance records it. */
  #busyWeightUnrecorded = false;
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
    this.#reservations = options.reservations ?? true;
    this.#fitScanLimit = options.fitScanLimit ?? DEFAULT_FIT_SCAN_LIMIT;
    this.#fitScanPerTenant = options.fitScanPerTenant ?? DEFAULT_FIT_SCAN_PER_TENANT;
    this.#entryBefore = options.policy === 'fair-share' ? this.#fairShareBefore : entryOrder(options.policy);
    const pool = (runtime: Runtime): PoolState => ({
      runtime,
      entries: new IndexedHeap<Entry>(this.#entryBefore, {
        get: (entry) => entry.poolIndex,
        set: (entry, index) => {
          entry.poolIndex = index;
        },
      }),
      waiting: 0,
      rotation: 0,
      running: new Set(),
      lastServedMs: new Map(),
      restoredTurns: new Map(),
      heldFor: undefined,
      joins: new Map(),
      freed: new FreedSlots(),
      occupancy: new UsedSlots(),
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

  /** The summed weight of the tenants with work in the engine now (a tenant's fair share is its weight over it). */
  get busyWeight(): number {
    return this.#busyWeight;
  }

  /** Change (or, with undefined, reset to the defaults) a tenant's settings. Applies to queued work. */
  setTenant(tenantId: string, settings: TenantSettings | undefined): void {
    if (settings) this.#tenantSettings.set(tenantId, settings);
    else this.#tenantSettings.delete(tenantId);
    const tenant = this.#tenants.get(tenantId);
    if (!tenant) return;
    tenant.settings = this.#settingsOf(tenantId);
    tenant.rate = startRateOf(tenant.settings);
    this.#tenantChanged(tenant);
  }

  /**
   * The paused task types (the whole set, as stored). Tasks of a type that pauses are parked at
   * once; those of a type that resumes are ready again at once. O(waiting) when the set changes.
   */
  /**
   * This scheduler's allowance of the pools (runtime/scheduler/capacity-slice.ts), or undefined
   * for the whole pools (one scheduler). Below what it uses, nothing new starts until enough ends.
   */
  setAllowance(allowance: ResourceVector | undefined): void {
    this.#allowance = allowance && {
      slots: Math.min(allowance.slots, this.#capacity.slots),
      milliVcpu: Math.min(allowance.milliVcpu, this.#capacity.milliVcpu),
      memoryMiB: Math.min(allowance.memoryMiB, this.#capacity.memoryMiB),
    };
  }

  /**
   * What a sharded scheduler reports for its slices (capacity-slices.ts `SliceReport`): what its
   * tasks hold; per pool the summed weight of its tenants with ready or running work there (a
   * paused tenant's waiting work does not count); per resource the largest ready head task's
   * demand (the need); and what it could use now, held plus its ready tasks' demand (the wants).
   * O(tenants + running + waiting tasks).
   */
  sliceReport(nowMs: number): {
    held: ResourceVector;
    weight: { lambda: number; fargate: number };
    need: ResourceVector;
    wants: ResourceVector;
  } {
    this.#advance(nowMs);
    const weight = { lambda: 0, fargate: 0 };
    const need = zeroVector();
    const wants = { ...this.#used };
    const paused = (tenant: TenantState) => tenant.hold?.constraint === 'tenant_paused';
    for (const tenant of this.#tenants.values()) {
      for (const pool of this.#poolList) {
        const entry = tenant.entries[pool.runtime];
        const head = entry && entry.ready > 0 && !paused(tenant) ? entry.head : undefined;
        const runs = [...tenant.running].some((active) => active.pool === pool);
        if (head || runs) weight[pool.runtime] += tenant.settings.weight;
        if (!head) continue;
        need.slots = Math.max(need.slots, head.demand.slots);
        need.milliVcpu = Math.max(need.milliVcpu, head.demand.milliVcpu);
        need.memoryMiB = Math.max(need.memoryMiB, head.demand.memoryMiB);
      }
    }
    for (const task of this.#waiting.values()) {
      if (task.state === 'ready' && !paused(task.tenant)) addInto(wants, task.demand, 1);
    }
    return { held: { ...this.#used }, weight, need, wants };
  }

  setPausedTypes(types: Iterable<string>): void {
    const next = new Set(types);
    const resumed = [...this.#pausedTypes].filter((type) => !next.has(type));
    const paused = [...next].filter((type) => !this.#pausedTypes.has(type));
    if (resumed.length === 0 && paused.length === 0) return;
    this.#pausedTypes.clear();
    for (const type of next) this.#pausedTypes.add(type);
    for (const type of resumed) {
      const parked = this.#parkedByType.get(type);
      this.#parkedByType.delete(type);
      for (const task of parked ?? []) this.#unpark(task);
    }
    if (paused.length === 0) return;
    for (const task of [...this.#waiting.values()]) {
      if (task.state === 'ready' && task.candidate.type !== undefined && next.has(task.candidate.type)) {
        this.#leaveReady(task);
        this.#makeReady(task);
      }
    }
  }

  get pausedTypes(): ReadonlySet<string> {
    return this.#pausedTypes;
  }

  /** A tenant's parked tasks of one (base) tier. */
  parkedIn(tenantId: string, tier: PriorityTier): number {
    return this.#tenants.get(tenantId)?.parkedByRank[tierRank(tier)] ?? 0;
  }

  /** Per paused type, how many of its tasks are parked. */
  parkedByType(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const [type, parked] of this.#parkedByType) if (parked.size > 0) counts.set(type, parked.size);
    return counts;
  }

  /**
   * The tenant's start-rate bucket as its durable record has it (the dispatcher's conditional
   * write, the arbiter): the engine's mirror follows it.
   */
  syncRate(tenantId: string, tatUs: number): void {
    const tenant = this.#tenants.get(tenantId);
    if (!tenant) return;
    tenant.tatUs = tatUs;
    this.#tenantChanged(tenant);
  }

  /**
   * The key's durable holders refused a start: tasks the engine does not count hold it. Its
   * tasks wait until one of its known tasks ends or `untilMs`, when its best parked task is
   * tried again.
   */
  keyBlocked(tenantId: string, key: string, untilMs: number): void {
    const tenant = this.#tenants.get(tenantId);
    if (!tenant) return;
    const state = this.#key(tenant, key);
    state.blockedUntilMs = Math.max(state.blockedUntilMs, untilMs);
    this.#blockedKeys.set(state, tenant);
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
      parkedBy: undefined,
    };
    this.#waiting.set(candidate.taskId, task);
    tenant.waiting++;
    pool.waiting++;
    this.#countWeight(tenant);
    if (capacity.hold(demand, zeroVector(), this.#capacity, pool.runtime)) {
      // Bigger than the whole pool: it could only block its tenant's queue. Kept aside, explained.
      task.state = 'unschedulable';
      this.#unschedulable++;
    } else if (candidate.runAtMs > this.#clockMs) {
      task.state = 'delayed';
      this.#delayed.push(task);
    } else {
      this.#makeReady(task, 'intake');
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

  /**
   * A task that already holds capacity (e.g. found DISPATCHED or RUNNING after a restart). Its
   * dispatch time, when given, also counts as its tenant's last service in the pool.
   */
  markActive(task: ActiveCandidate): void {
    if (this.#active.has(task.taskId)) return;
    const waiting = this.#waiting.get(task.taskId);
    if (waiting) this.#forgetWaiting(waiting);
    const tenant = this.#tenant(task.tenantId);
    const pool = this.#pools[task.runtime];
    const sinceMs = task.sinceMs ?? (Number.isFinite(this.#clockMs) ? this.#clockMs : 0);
    const holdSeconds = task.holdSeconds ?? this.#holdSeconds[task.runtime];
    const key = task.concurrencyKey === undefined ? undefined : this.#key(tenant, task.concurrencyKey);
    this.#activate(
      task.taskId,
      tenant,
      demandOf(task.runtime, task.resources),
      pool,
      sinceMs + holdSeconds * 1000,
      key,
      // A dispatch time not known is not taken for now: its run is not counted (RecentRuns).
      task.sinceMs ?? Number.NaN,
    );
    if (task.sinceMs !== undefined) this.#served(tenant, pool, task.sinceMs);
  }

  /** An active task's hold is known better now (its timeout, read after dispatch): until then at the latest. */
  heldUntil(taskId: string, untilMs: number): void {
    const active = this.#active.get(taskId);
    if (active) active.untilMs = untilMs;
  }

  /**
   * An active task finished, or its dispatch failed: its capacity and quota are free again.
   * `nowMs` (default: the engine's clock) dates the freed slot for the pool's pace.
   */
  release(taskId: string, nowMs?: number): boolean {
    return this.#release(taskId, nowMs, true);
  }

  /**
   * A pick that never became a dispatch (its write refused or not made): its capacity and quota
   * are free again, but no slot was freed for the pool's pace (a run of refused writes would
   * otherwise read as a fast pool).
   */
  unpick(taskId: string): boolean {
    return this.#release(taskId, undefined, false);
  }

  #release(taskId: string, nowMs: number | undefined, ran: boolean): boolean {
    const active = this.#active.get(taskId);
    if (!active) return false;
    this.#active.delete(taskId);
    active.pool.running.delete(active);
    if (ran) {
      const freedMs = Math.max(nowMs ?? this.#clockMs, this.#clockMs);
      active.pool.freed.record(freedMs);
      if (Number.isFinite(active.sinceMs)) {
        this.#recentRuns.record(active.tenant.tenantId, freedMs, freedMs - active.sinceMs);
      }
    }
    const tenant = active.tenant;
    tenant.running.delete(active);
    tenant.active--;
    addInto(tenant.used, active.demand, -1);
    addInto(this.#used, active.demand, -1);
    if (active.pool.runtime === 'lambda') {
      active.pool.occupancy.record(Math.max(nowMs ?? this.#clockMs, this.#clockMs), this.#used.slots);
    }
    if (active.key) {
      active.key.active--;
      this.#unparkKey(tenant, active.key);
    }
    this.#tenantChanged(tenant);
    this.#dropIfIdle(tenant);
    return true;
  }

  /** Picks the next task to dispatch at `nowMs` and marks it active, or undefined if none may start. */
  next(nowMs: number): Candidate | undefined {
    this.#advance(nowMs);
    for (;;) {
      let best: Pick | undefined;
      for (const pool of this.#poolList) {
        const pick = this.#pickInPool(pool);
        if (pick && (!best || this.#entryBefore(pick.entry, best.entry))) best = pick;
      }
      if (!best) return undefined;
      const { task } = best;
      // A task unit holds it (its key filled up since it became ready): park it and pick again,
      // so the tasks behind it are not held up.
      const hold = this.#taskHold(task);
      if (hold) {
        if (task.pool.heldFor === task) task.pool.heldFor = undefined;
        this.#leaveReady(task);
        this.#park(task, hold);
        continue;
      }
      if (task.pool.heldFor === task) task.pool.heldFor = undefined;
      this.#served(task.tenant, task.pool, this.#clockMs);
      this.#forgetWaiting(task);
      const tenant = task.tenant;
      if (tenant.rate) tenant.tatUs = grantStarts(tenant.rate, tenant.tatUs, this.#clockMs * 1000, 1).tatUs;
      const { concurrencyKey: keyName } = task.candidate;
      const key = keyName === undefined ? undefined : this.#key(tenant, keyName);
      this.#activate(task.candidate.taskId, tenant, task.demand, task.pool, this.#clockMs + this.#holdMs(task), key);
      return task.candidate;
    }
  }

  /**
   * Why a waiting task waits at `nowMs`, its effective tier and its wait bound (`explainWait`
   * over what the engine knows); undefined if not waiting. O(waiting + tenants).
   */
  explain(taskId: string, nowMs: number): (WaitExplanation & { readonly taskId: string }) | undefined {
    this.#advance(nowMs);
    const task = this.#waiting.get(taskId);
    if (!task) return undefined;
    const { candidate, tenant, pool } = task;
    // k of aging.ts (priority, fifo): its pool's older waiting tasks and its tenant's other ones.
    let aheadCount = 0;
    for (const other of this.#waiting.values()) {
      if (other === task) continue;
      if ((other.pool === pool && olderTask(other, task)) || other.tenant === tenant) aheadCount++;
    }
    const holder = this.#holder(pool);
    const entry = tenant.entries[pool.runtime];
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
        heldByAllowance:
          capacity.hold(task.demand, this.#used, this.#capacity, task.pool.runtime, this.#room)?.byAllowance === true,
      },
      tenant: { active: tenant.active, maxConcurrency: tenant.settings.maxConcurrency, weightedShare: tenant.share },
      hold: task.parkedBy ?? (tenant.hold?.constraint === 'quota' ? undefined : tenant.hold),
      pool: {
        heldForOther: holder !== undefined && holder !== task,
        reservedForOther: (this.#reservedFor(pool) ?? task) !== task,
        leader: this.#leader(pool),
      },
      aheadCount,
      rotation:
        task.state === 'ready' && entry
          ? {
              ahead: this.#turnsAhead(entry),
              waiting: pool.rotation,
              tenantWaiting: tenant.waiting,
              tenantFreeAtMs: this.#busyUntil(tenant),
              freeBy: this.#freeBy(pool),
            }
          : undefined,
      limits: {
        lambdaConcurrency: this.#capacity.slots,
        holdSeconds: this.#holdSeconds,
        reservations: this.#reservations,
      },
    });
    return { taskId, ...explanation };
  }

  /**
   * Its one waiting task, when it has exactly one and that one is in its pool's rotation (due, not
   * parked, its tenant not held): the API's wait bound may then take it to be in the rotation at
   * the snapshot's instant (runtime/app/wait.ts). A count alone cannot say which task it is.
   */
  #onlyWaiting(tenant: TenantState): { waitingTaskId?: string; waitingTurnMs?: number } {
    if (tenant.waiting !== 1 || tenant.hold !== undefined) return {};
    for (const entry of Object.values(tenant.entries)) {
      if (entry && entry.ready > 0 && entry.head) {
        return { waitingTaskId: entry.head.candidate.taskId, waitingTurnMs: entry.turnMs };
      }
    }
    return {};
  }

  /** Pool usage and per-tenant statistics at `nowMs` (O(tenants + running tasks)). */
  snapshot(nowMs: number): PolicySnapshot {
    this.#advance(nowMs);
    this.#recentRuns.forget(this.#clockMs);
    let weightOfBusyTenants = 0;
    for (const tenant of this.#tenants.values()) weightOfBusyTenants += tenant.settings.weight;
    const tenants: TenantSnapshot[] = [];
    for (const tenant of this.#tenants.values()) {
      tenants.push({
        tenantId: tenant.tenantId,
        weight: tenant.settings.weight,
        maxConcurrency: tenant.settings.maxConcurrency,
        hold: tenant.hold ?? null,
        parked: tenant.parked,
        active: tenant.active,
        queued: tenant.waiting,
        usage: { lambdaSlots: tenant.used.slots, vcpu: tenant.used.milliVcpu / 1000, memoryMiB: tenant.used.memoryMiB },
        weightedDominantShare: tenant.share,
        entitlement: weightOfBusyTenants > 0 ? tenant.settings.weight / weightOfBusyTenants : 0,
        busyUntilMs: this.#busyUntil(tenant),
        ...this.#lately(tenant),
        ...this.#onlyWaiting(tenant),
      });
    }
    const lambda = this.#pools.lambda;
    const fargate = this.#pools.fargate;
    const pools: PoolSnapshot[] = [
      {
        runtime: 'lambda',
        capacity: { slots: this.#capacity.slots },
        used: { slots: this.#used.slots },
        ...(this.#allowance ? { allowance: { slots: this.#allowance.slots } } : {}),
        waiting: lambda.waiting,
        reservedForTaskId: null,
        leader: this.#leader(lambda),
        rotation: lambda.rotation,
        joinedLastMinute: this.#joinedLastMinute(lambda),
        reservedFor: null,
        freeBy: this.#freeBy(lambda),
        freedPerSecond: lambda.freed.perSecond(this.#clockMs),
        peakUsed: lambda.occupancy.peak(this.#clockMs),
      },
      {
        runtime: 'fargate',
        capacity: { vcpu: this.#capacity.milliVcpu / 1000, memoryMiB: this.#capacity.memoryMiB },
        used: { vcpu: this.#used.milliVcpu / 1000, memoryMiB: this.#used.memoryMiB },
        ...(this.#allowance
          ? { allowance: { vcpu: this.#allowance.milliVcpu / 1000, memoryMiB: this.#allowance.memoryMiB } }
          : {}),
        waiting: fargate.waiting,
        reservedForTaskId: this.#holder(fargate)?.candidate.taskId ?? null,
        leader: this.#leader(fargate),
        rotation: fargate.rotation,
        joinedLastMinute: this.#joinedLastMinute(fargate),
        reservedFor: this.#reservedFor(fargate)?.candidate.taskId ?? null,
        freeBy: this.#freeBy(fargate),
        freedPerSecond: fargate.freed.perSecond(this.#clockMs),
      },
    ];
    return {
      nowMs: this.#clockMs,
      policy: this.policy,
      busyWeight: this.#busyWeight,
      busyWeightPeak: this.#busyWeights.peak(this.#clockMs),
      waiting: this.#waiting.size,
      active: this.#active.size,
      unschedulable: this.#unschedulable,
      pools,
      tenants,
    };
  }

  /**
   * The rotation's memory to persist: per pool, when each tenant was last served, for tenants
   * waiting there or served within ROTATION_MEMORY_MS (older ones are forgotten here).
   */
  rotationState(nowMs: number): RotationState {
    this.#advance(nowMs);
    const state = (pool: PoolState) => {
      const kept: [string, number][] = [];
      for (const [tenantId, servedMs] of pool.lastServedMs) {
        const waitingHere = (this.#tenants.get(tenantId)?.entries[pool.runtime]?.ready ?? 0) > 0;
        if (waitingHere || servedMs > this.#clockMs - ROTATION_MEMORY_MS) kept.push([tenantId, servedMs]);
        else pool.lastServedMs.delete(tenantId);
      }
      // fromEntries defines own keys, so a tenant named `__proto__` is a key, not the prototype.
      return Object.fromEntries(kept);
    };
    const turns = (pool: PoolState) => {
      const waiting: [string, number][] = [];
      for (const tenant of this.#tenants.values()) {
        const entry = tenant.entries[pool.runtime];
        if (entry && entry.ready > 0 && Number.isFinite(entry.turnMs)) waiting.push([tenant.tenantId, entry.turnMs]);
      }
      return Object.fromEntries(waiting);
    };
    return {
      lambda: state(this.#pools.lambda),
      fargate: state(this.#pools.fargate),
      turns: { lambda: turns(this.#pools.lambda), fargate: turns(this.#pools.fargate) },
      freed: { lambda: this.#pools.lambda.freed.state(this.#clockMs) },
      occupancy: { lambda: this.#pools.lambda.occupancy.state(this.#clockMs) },
      busyWeight: this.#busyWeights.state(this.#clockMs),
    };
  }

  /**
   * Take over a predecessor's rotation memory (a scheduler starting afresh, at `nowMs`). Later
   * services win; the tenants waiting then keep their turns when taken in again (#intakeTurnFloor).
   */
  restoreRotation(state: RotationState, nowMs?: number): void {
    if (nowMs !== undefined) this.#advance(nowMs);
    for (const pool of this.#poolList) {
      for (const [tenantId, turnMs] of Object.entries(state.turns?.[pool.runtime] ?? {})) {
        if (typeof turnMs === 'number' && Number.isFinite(turnMs)) pool.restoredTurns.set(tenantId, turnMs);
      }
    }
    const freed = state.freed?.lambda;
    if (freed && typeof freed === 'object' && Array.isArray(freed.buckets)) this.#pools.lambda.freed.restore(freed);
    const occupancy = state.occupancy?.lambda;
    if (occupancy && typeof occupancy === 'object' && Array.isArray(occupancy.buckets)) {
      this.#pools.lambda.occupancy.restore(occupancy);
    }
    const busyWeight = state.busyWeight;
    if (busyWeight && typeof busyWeight === 'object' && Array.isArray(busyWeight.buckets)) {
      this.#busyWeights.restore(busyWeight);
    }
    for (const pool of this.#poolList) {
      for (const [tenantId, servedMs] of Object.entries(state[pool.runtime] ?? {})) {
        if (typeof servedMs !== 'number' || !Number.isFinite(servedMs)) continue;
        const tenant = this.#tenants.get(tenantId);
        if (tenant) this.#served(tenant, pool, servedMs, false);
        else if (servedMs > (pool.lastServedMs.get(tenantId) ?? Number.NEGATIVE_INFINITY)) {
          pool.lastServedMs.set(tenantId, servedMs);
        }
      }
    }
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
        countedWeight: 0,
        active: 0,
        waiting: 0,
        entries: {},
        running: new Set(),
        rate: undefined,
        tatUs: undefined,
        hold: undefined,
        rateUntilMs: Number.POSITIVE_INFINITY,
        rateIndex: NOT_IN_HEAP,
        keys: new Map(),
        parked: 0,
        parkedByRank: PRIORITY_TIERS.map(() => 0),
      };
      tenant.rate = startRateOf(tenant.settings);
      tenant.hold = tenantHold(tenant, this.#clockMs);
      this.#tenants.set(tenantId, tenant);
    }
    return tenant;
  }

  /** Tenants with nothing waiting or running hold no state (settings and the rotation's memory are kept separately). */
  #dropIfIdle(tenant: TenantState): void {
    // Its start-rate bucket is kept while it is not full: dropping it would forget starts it made.
    if (tenant.active !== 0 || tenant.waiting !== 0) return;
    if (tenant.rate && tenant.tatUs !== undefined && tenant.tatUs > this.#clockMs * 1000) return;
    this.#tenants.delete(tenant.tenantId);
    this.#rateTimers.remove(tenant);
    for (const key of tenant.keys.values()) this.#blockedKeys.delete(key);
  }

  #key(tenant: TenantState, name: string): KeyState {
    let key = tenant.keys.get(name);
    if (!key) {
      key = { name, active: 0, ready: 0, parked: new Set(), blockedUntilMs: Number.NEGATIVE_INFINITY };
      tenant.keys.set(name, key);
    }
    return key;
  }

  /** Drop a key the tenant no longer uses. */
  #dropKeyIfIdle(tenant: TenantState, key: KeyState): void {
    if (key.active === 0 && key.ready === 0 && key.parked.size === 0 && key.blockedUntilMs <= this.#clockMs) {
      tenant.keys.delete(key.name);
      this.#blockedKeys.delete(key);
    }
  }

  /** What a task unit says of a task now (a paused type, a full key), if it holds it. */
  #taskHold(task: WaitingTask): Hold | undefined {
    const { candidate } = task;
    const paused = typePause.hold(candidate, this.#pausedTypes);
    if (paused || candidate.concurrencyKey === undefined) return paused;
    const key = this.#key(task.tenant, candidate.concurrencyKey);
    const limit = candidate.concurrencyLimit ?? DEFAULT_CONCURRENCY_LIMIT;
    const active = key.blockedUntilMs > this.#clockMs ? Math.max(key.active, limit) : key.active;
    return concurrencyKey.hold(candidate, active);
  }

  /** Park a waiting task (not in any heap) that a task unit holds. */
  #park(task: WaitingTask, hold: Hold): void {
    task.state = 'parked';
    task.parkedBy = hold;
    task.tenant.parked++;
    task.tenant.parkedByRank[task.baseRank]! += 1;
    if (hold.constraint === 'type_paused') {
      const parked = this.#parkedByType.get(hold.type) ?? new Set<WaitingTask>();
      this.#parkedByType.set(hold.type, parked);
      parked.add(task);
    } else if (hold.constraint === 'key') {
      this.#key(task.tenant, hold.key).parked.add(task);
    }
  }

  /** Take a task out of its parking (it stays waiting, in no heap). */
  #unparkOnly(task: WaitingTask): void {
    const hold = task.parkedBy;
    task.parkedBy = undefined;
    task.tenant.parked--;
    task.tenant.parkedByRank[task.baseRank]! -= 1;
    if (hold?.constraint === 'type_paused') this.#parkedByType.get(hold.type)?.delete(task);
    else if (hold?.constraint === 'key') task.tenant.keys.get(hold.key)?.parked.delete(task);
  }

  /**
   * Let a parked task go: ready again (or parked again, if another unit holds it). Its tenant,
   * when it had nothing else ready in the pool, starts waiting now and joins at the end of the
   * rotation: with its turn at its (older) due time it passed tasks whose bound did not count it
   * (a key freed or a type resumed after the bound was given; test/unit/policy/rotation.test.ts).
   */
  #unpark(task: WaitingTask): void {
    this.#unparkOnly(task);
    this.#makeReady(task, this.#clockMs);
  }

  /**
   * A task of the key ended (or its block lapsed): let its oldest parked tasks go while they
   * could start (its running and ready tasks below the limit), one at least when it had been
   * blocked, so the durable record is asked again.
   */
  #unparkKey(tenant: TenantState, key: KeyState): void {
    for (const task of [...key.parked]) {
      const limit = task.candidate.concurrencyLimit ?? DEFAULT_CONCURRENCY_LIMIT;
      if (key.active + key.ready >= limit || key.blockedUntilMs > this.#clockMs) break;
      this.#unpark(task);
    }
    this.#dropKeyIfIdle(tenant, key);
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
        ready: 0,
        turnMs: Number.NEGATIVE_INFINITY,
        turnSeq: 0,
        heapShare: 0,
      };
      tenant.entries[pool.runtime] = entry;
    }
    return entry;
  }

  /**
   * `joinsFrom`: the earliest turn it takes if its tenant starts waiting with it: an instant, or
   * `intake` for a task just taken in (#intakeTurnFloor); else its due time alone.
   */
  #makeReady(task: WaitingTask, joinsFrom: number | 'intake' = Number.NEGATIVE_INFINITY): void {
    const hold = this.#taskHold(task);
    if (hold) {
      this.#park(task, hold);
      return;
    }
    task.state = 'ready';
    const keyName = task.candidate.concurrencyKey;
    if (keyName !== undefined) this.#key(task.tenant, keyName).ready++;
    const entry = this.#entry(task.tenant, task.pool);
    if (entry.ready++ === 0) {
      // Joins the rotation at its end: behind every tenant already waiting in the pool.
      task.pool.rotation++;
      task.pool.joins.delete(task.tenant.tenantId);
      task.pool.joins.set(task.tenant.tenantId, this.#clockMs);
      if (task.pool.joins.size > 4096) this.#joinedLastMinute(task.pool);
      entry.turnMs = Math.max(
        task.pool.lastServedMs.get(task.tenant.tenantId) ?? Number.NEGATIVE_INFINITY,
        eligibleFromMs(task),
        joinsFrom === 'intake' ? this.#intakeTurnFloor(task) : joinsFrom,
      );
      entry.turnSeq = ++this.#turnSeq;
    }
    (entry.tiers[task.baseRank] as IndexedHeap<WaitingTask>).push(task);
    this.#refresh(entry);
  }

  /**
   * The earliest turn of a tenant that starts waiting with a task just taken in: its turn when a
   * predecessor saved the rotation's memory, if it was waiting then; else the engine's clock less
   * the intake allowance. A task taken in later than that after it was due (its announcement lost,
   * found by the registry backstop) joins at the end instead of at its due time, where it went
   * before tasks whose bound had not counted it; one taken in within the allowance keeps its due
   * time, so the rotation's order does not depend on the intake's pace.
   */
  #intakeTurnFloor(task: WaitingTask): number {
    const restored = task.pool.restoredTurns.get(task.tenant.tenantId);
    if (restored !== undefined) {
      task.pool.restoredTurns.delete(task.tenant.tenantId);
      return restored;
    }
    return this.#clockMs - INTAKE_ALLOWANCE_MS;
  }

  #forgetWaiting(task: WaitingTask): void {
    this.#waiting.delete(task.candidate.taskId);
    task.tenant.waiting--;
    task.pool.waiting--;
    this.#countWeight(task.tenant);
    if (task.state === 'delayed') this.#delayed.remove(task);
    else if (task.state === 'unschedulable') this.#unschedulable--;
    else if (task.state === 'parked') {
      this.#unparkOnly(task);
      const keyName = task.candidate.concurrencyKey;
      const key = keyName === undefined ? undefined : task.tenant.keys.get(keyName);
      if (key) this.#dropKeyIfIdle(task.tenant, key);
    } else this.#leaveReady(task);
  }

  /** A ready task leaves its tier heap (it starts, parks or goes), still counted as waiting. */
  #leaveReady(task: WaitingTask): void {
    const entry = this.#entry(task.tenant, task.pool);
    (entry.tiers[task.baseRank] as IndexedHeap<WaitingTask>).remove(task);
    if (--entry.ready === 0) task.pool.rotation--;
    const keyName = task.candidate.concurrencyKey;
    if (keyName !== undefined) {
      const key = this.#key(task.tenant, keyName);
      key.ready--;
    }
    this.#refresh(entry);
  }

  /**
   * A tenant was served in a pool at `atMs` (a dispatch, or one found running): it remembers it,
   * and if it still waits there its turn moves to the end of the rotation.
   */
  #served(tenant: TenantState, pool: PoolState, atMs: number, newTurn = true): void {
    if (atMs < (pool.lastServedMs.get(tenant.tenantId) ?? Number.NEGATIVE_INFINITY)) return;
    pool.lastServedMs.set(tenant.tenantId, atMs);
    const entry = tenant.entries[pool.runtime];
    // Its turn is already later when its work there became due after `atMs`.
    if (!entry || entry.ready === 0 || entry.turnMs > atMs || (!newTurn && entry.turnMs === atMs)) return;
    entry.turnMs = atMs;
    if (newTurn) entry.turnSeq = ++this.#turnSeq;
    this.#refresh(entry);
  }

  #activate(
    taskId: string,
    tenant: TenantState,
    demand: ResourceVector,
    pool: PoolState,
    untilMs: number,
    key: KeyState | undefined,
    sinceMs: number = this.#clockMs,
  ): void {
    const active: ActiveTask = { tenant, demand, pool, untilMs, key, sinceMs };
    if (key) key.active++;
    this.#active.set(taskId, active);
    pool.running.add(active);
    tenant.running.add(active);
    tenant.active++;
    addInto(tenant.used, demand, 1);
    addInto(this.#used, demand, 1);
    if (pool.runtime === 'lambda') pool.occupancy.record(this.#clockMs, this.#used.slots);
    this.#tenantChanged(tenant);
  }

  /** Share, weight or quota of a tenant changed: re-key its entries in both pools. */
  #tenantChanged(tenant: TenantState): void {
    tenant.share = weightedDominantShare(tenant.used, this.#capacity, tenant.settings.weight);
    this.#countWeight(tenant);
    // The tenant units (pause, quota, start rate): one that holds takes the tenant out of the pools' order.
    tenant.hold = tenantHold(tenant, this.#clockMs);
    if (tenant.hold?.constraint === 'rate') {
      tenant.rateUntilMs = tenant.hold.nextStartMs;
      this.#rateTimers.upsert(tenant);
    } else if (tenant.rateIndex !== NOT_IN_HEAP) {
      this.#rateTimers.remove(tenant);
    }
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
    const eligible = head !== undefined && entry.tenant.hold === undefined;
    const heap = entry.pool.entries;
    if (heap.has(entry)) this.#countHeapShare(entry.heapShare, -1);
    if (eligible) {
      entry.heapShare = entry.tenant.share;
      this.#countHeapShare(entry.heapShare, 1);
      heap.upsert(entry);
    } else heap.remove(entry);
    if (eligible && nextAging !== Number.POSITIVE_INFINITY) this.#aging.upsert(entry);
    else this.#aging.remove(entry);
  }

  /** Move the clock: release due delayed tasks, re-key entries whose heads were promoted. */
  #advance(nowMs: number): void {
    if (nowMs > this.#clockMs) this.#clockMs = nowMs;
    const now = this.#clockMs;
    for (const pool of this.#poolList) {
      pool.freed.observe(now);
      pool.occupancy.observe(now);
    }
    for (let due = this.#delayed.peek(); due && due.candidate.runAtMs <= now; due = this.#delayed.peek()) {
      this.#delayed.pop();
      this.#makeReady(due);
    }
    for (let aged = this.#aging.peek(); aged && aged.nextAgingMs <= now; aged = this.#aging.peek()) {
      this.#refresh(aged);
    }
    for (
      let limited = this.#rateTimers.peek();
      limited && limited.rateUntilMs <= now;
      limited = this.#rateTimers.peek()
    ) {
      this.#rateTimers.pop();
      this.#tenantChanged(limited);
    }
    for (const [key, tenant] of this.#blockedKeys) {
      if (key.blockedUntilMs > now) continue;
      this.#blockedKeys.delete(key);
      this.#unparkKey(tenant, key);
    }
    this.#busyWeights.observe(now);
    if (this.#busyWeightUnrecorded) {
      this.#busyWeights.record(now, this.#busyWeight);
      this.#busyWeightUnrecorded = false;
    }
    this.#settleOrder();
  }

  /**
   * A tenant's weight counts toward the fair shares while it has work in the engine. Kept as a
   * running sum (O(1) a change); the heaps take it up at the next decision (#settleOrder).
   */
  #countWeight(tenant: TenantState): void {
    const counted = tenant.active > 0 || tenant.waiting > 0 ? tenant.settings.weight : 0;
    if (counted === tenant.countedWeight) return;
    this.#busyWeight += counted - tenant.countedWeight;
    tenant.countedWeight = counted;
    // A sum of fractional weights drifts: back to exactly 0 when no tenant has work.
    if (this.#busyWeight < FAIR_SHARE_EPSILON) this.#busyWeight = 0;
    if (Number.isFinite(this.#clockMs)) this.#busyWeights.record(this.#clockMs, this.#busyWeight);
    else this.#busyWeightUnrecorded = true;
  }

  /**
   * Re-order the pools' heaps when the tenants with work changed the fair share (fair-share): which
   * tenants are below theirs depends on it. O(entries) when it changed, between decisions only, so
   * every heap operation in between uses one order.
   */
  #settleOrder(): void {
    if (this.policy !== 'fair-share' || this.#orderWeight === this.#busyWeight) return;
    const before = this.#orderWeight;
    this.#orderWeight = this.#busyWeight;
    // Only an entry whose share is now on the other side of the fair share moves: usually none
    // (shares take few values), so a tenant arriving or leaving costs O(distinct shares), not O(entries).
    for (const share of this.#heapShares.keys()) {
      if (belowFairShare(share, before) === belowFairShare(share, this.#orderWeight)) continue;
      for (const pool of this.#poolList) pool.entries.rebuild();
      return;
    }
  }

  #countHeapShare(share: number, delta: 1 | -1): void {
    const count = (this.#heapShares.get(share) ?? 0) + delta;
    if (count > 0) this.#heapShares.set(share, count);
    else this.#heapShares.delete(share);
  }

  /**
   * Fair-share's rank of two entries before their turns: negative when `a` goes first (its tenant
   * below its fair share and b's not, or both above it and a's share the smaller), positive when
   * `b` does, 0 when only their turns decide.
   */
  #rankOrder(a: Entry, b: Entry): number {
    const aBelow = belowFairShare(a.tenant.share, this.#orderWeight);
    if (aBelow !== belowFairShare(b.tenant.share, this.#orderWeight)) return aBelow ? -1 : 1;
    return aBelow ? 0 : a.tenant.share - b.tenant.share;
  }

  /** The fair-share order (see the header): the rank, then the turn in the rotation. */
  readonly #fairShareBefore = (a: Entry, b: Entry): boolean => {
    const rank = this.#rankOrder(a, b);
    return rank !== 0 ? rank < 0 : turnBefore(a, b);
  };

  /** What this scheduler may fill: its allowance, else the whole pools. */
  get #room(): ResourceVector {
    return this.#allowance ?? this.#capacity;
  }

  #hasRoom(pool: PoolState): boolean {
    const used = this.#used;
    const capacity = this.#room;
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
    return capacity.hold(task.demand, this.#used, this.#capacity, task.pool.runtime, this.#room) === undefined;
  }

  #holdMs(task: WaitingTask): number {
    return (task.candidate.holdSeconds ?? this.#holdSeconds[task.pool.runtime]) * 1000;
  }

  /** Tenants in the entry's pool rotation whose turn comes before the entry's. O(tenants). */
  #turnsAhead(entry: Entry): number {
    let ahead = 0;
    for (const tenant of this.#tenants.values()) {
      const other = tenant.entries[entry.pool.runtime];
      if (other && other !== entry && other.ready > 0 && turnBefore(other, entry)) ahead++;
    }
    return ahead;
  }

  /** Tenants that joined in the last minute; older joins are forgotten. */
  #joinedLastMinute(pool: PoolState): number {
    const since = this.#clockMs - 60_000;
    for (const [tenantId, atMs] of pool.joins) {
      if (atMs > since) break;
      pool.joins.delete(tenantId);
    }
    return pool.joins.size;
  }

  /**
   * How long its tasks ran lately, and when its running tasks end if none runs longer than that
   * (never later than their holds); absent without enough runs, or when one already ran longer.
   */
  #lately(tenant: TenantState): { longestRunMs?: number; busyUntilLatelyMs?: number } {
    const longest = this.#recentRuns.longestMs(tenant.tenantId, this.#clockMs);
    if (longest === null) return {};
    let until = this.#clockMs;
    for (const active of tenant.running) {
      if (!Number.isFinite(active.sinceMs) || active.sinceMs + longest < this.#clockMs)
        return { longestRunMs: longest };
      until = Math.max(until, Math.min(active.untilMs, active.sinceMs + longest));
    }
    return { longestRunMs: longest, busyUntilLatelyMs: until };
  }

  /** When the tenant's running tasks have all ended at the latest. */
  #busyUntil(tenant: TenantState): number {
    let until = this.#clockMs;
    for (const active of tenant.running) until = Math.max(until, active.untilMs);
    return until;
  }

  /** The pool's free steps (types.ts `PoolSnapshot.freeBy`) from its running tasks' holds. */
  #freeBy(pool: PoolState): [number, number][] {
    const now = this.#clockMs;
    const ends = [...pool.running].map((active) => Math.max(now, active.untilMs)).sort((a, b) => a - b);
    if (pool.runtime === 'fargate') return [[1, ends.at(-1) ?? now]];
    const steps: [number, number][] = [];
    // Below an allowance it uses more of, the first ends free nothing it may use.
    const free = this.#room.slots - this.#used.slots;
    if (free > 0) steps.push([free, now]);
    ends.forEach((end, i) => {
      if (free + i + 1 > 0) steps.push([free + i + 1, end]);
    });
    return steps;
  }

  /**
   * The task holding the pool, if any: the task the Fargate pool is reserved for (#reservedFor)
   * when it does not fit the free capacity.
   */
  #holder(pool: PoolState): WaitingTask | undefined {
    const task = this.#reservedFor(pool);
    return task && !this.#fitsFree(task) ? task : undefined;
  }

  /**
   * Who the Fargate pool is for, if reservations are on: the best-ranked task of a tenant below
   * quota, recomputed at every decision (as Slurm's backfill does each cycle), so a reservation
   * moves to a better-ranked task and lapses while its tenant is at quota. Under fair-share one
   * exception: the task the pool was last reserved for keeps it against tenants of equal share
   * (ahead of it only by their turn) while it is still its tenant's best waiting task and its
   * tenant is below quota. Otherwise a tenant whose running tasks all end at once, freeing the
   * pool, would be back at share 0 with its earlier turn and take the drained pool over, and the
   * large task would wait for another drain.
   */
  #reservedFor(pool: PoolState): WaitingTask | undefined {
    if (pool.runtime !== 'fargate' || !this.#reservations) return undefined;
    const top = pool.entries.peek();
    const best = top?.head;
    if (!top || !best) return undefined;
    const held = pool.heldFor;
    if (this.policy !== 'fair-share' || !held || held === best) return best;
    const entry = held.tenant.entries.fargate;
    const valid =
      this.#waiting.get(held.candidate.taskId) === held &&
      entry?.head === held &&
      pool.entries.has(entry) &&
      !(this.#rankOrder(top, entry) < 0);
    return valid ? held : best;
  }

  /**
   * When `task` would fit at the latest if nothing else started: the running tasks end one by one
   * at their holds' ends, and it fits once enough of them have.
   */
  #shadowMs(pool: PoolState, task: WaitingTask): number {
    const used = { ...this.#used };
    const running = [...pool.running].sort((a, b) => a.untilMs - b.untilMs);
    for (const active of running) {
      addInto(used, active.demand, -1);
      if (!capacity.hold(task.demand, used, this.#capacity, task.pool.runtime, this.#room)) return active.untilMs;
    }
    return Number.POSITIVE_INFINITY;
  }

  #pickInPool(pool: PoolState): Pick | undefined {
    // The reservation lasts from one decision to the next only while its task does not fit. It is
    // decided at every decision, the pool full or not: a holder that lost it to a task of a lower
    // share took it back once its tenant's share fell level again, past the bound that task was
    // given (test/unit/policy/reservation.test.ts).
    const reserved = this.#reservedFor(pool);
    pool.heldFor = reserved && !this.#fitsFree(reserved) ? reserved : undefined;
    if (pool.entries.size === 0 || !this.#hasRoom(pool)) return undefined;
    const first = reserved ?? ((pool.entries.peek() as Entry).head as WaitingTask);
    const firstEntry = this.#entry(first.tenant, pool);
    if (!pool.heldFor && this.#fitsFree(first)) return { task: first, entry: firstEntry };
    // It does not fit. With reservations it holds the pool: only what ends before it would fit
    // anyway may start beside it.
    const shadowMs = reserved ? this.#shadowMs(pool, reserved) : Number.POSITIVE_INFINITY;
    const startsBeside = (task: WaitingTask) =>
      this.#fitsFree(task) && (shadowMs === Number.POSITIVE_INFINITY || this.#clockMs + this.#holdMs(task) <= shadowMs);
    // First the other tenants' best tasks, each inspected once, best first; a tenant whose best
    // task does not qualify is remembered...
    const passedOver: Entry[] = [firstEntry];
    let found: Entry | undefined;
    for (const entry of pool.entries.ordered()) {
      if (entry === firstEntry) continue;
      if (passedOver.length >= this.#fitScanLimit) break;
      if (startsBeside(entry.head as WaitingTask)) {
        found = entry;
        break;
      }
      passedOver.push(entry);
    }
    // ...and searched for a task behind it (it ranks before `found`), at most `fitScanPerTenant`
    // tasks per tenant (Slurm's bf_max_job_user), so one tenant's long queue of tasks that do not
    // fit cannot use the whole scan.
    let budget = this.#fitScanLimit;
    for (const entry of passedOver) {
      const inner = this.#firstBehindHead(entry, Math.min(budget, this.#fitScanPerTenant), startsBeside);
      if (inner.task) return { task: inner.task, entry };
      budget -= inner.inspected;
      if (budget <= 0) break;
    }
    return found ? { task: found.head as WaitingTask, entry: found } : undefined;
  }

  /**
   * The best task of an entry after its head that qualifies, inspecting at most `budget` tasks in
   * the entry's own order (effective tier, then age): a merge of its tier heaps.
   */
  #firstBehindHead(
    entry: Entry,
    budget: number,
    qualifies: (task: WaitingTask) => boolean,
  ): { task: WaitingTask | undefined; inspected: number } {
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
      if (qualifies(task)) return { task, inspected };
    }
    return { task: undefined, inspected };
  }
}
