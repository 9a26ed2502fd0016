/**
 * Pool capacity shared exactly among sharded schedulers (issue 24 item 6). Each shard's
 * scheduler may start tasks only within its *allowance* of each pool; the allowances, together
 * with what each shard still holds, never sum to more than the pool, and they follow demand so a
 * busy shard is not capped at 1/N while the others idle. Pure: the shared record is read and
 * written by the caller (one conditional write on its version), time is passed in.
 *
 * A shard's *claim* on a pool is what it may be using: max(allowed, held). A report sets the
 * reporting shard's allowance to min(target, what the others' claims leave free); its claim is
 * then at most what was free, so the claims never exceed the pool. The allowance may drop below
 * what the shard holds (it shrinks at once; the claim follows as its tasks end), and it grows
 * only into what is free. A shard that has not reported for `staleAfterMs` (the scheduler
 * lease's TTL) has stopped dispatching: its weight no longer counts, but its claim does, for its
 * `held` at the report is not all it may hold (it may have filled its allowance since); only
 * once `heldAtMostMs` more has passed (the longest one task holds its pool) has every task it
 * started ended, and its entry is forgotten. A scheduler that stops cleanly reports an empty
 * allowance first (a released entry: like a stale one, no weight; its equal part of the headroom
 * is kept for it), so only its tasks still running stay claimed. Each entry carries its writer's
 * lease token for the shard: a scheduler that lost the lease cannot write over its successor's.
 * Targets, per resource and per pool (Lambda slots; Fargate vCPU and memory together):
 *   1. fair: the pool, less what stale shards claim, split by the weights of the shards that
 *      report (the summed weights of their tenants with work in the pool), none above what it
 *      wants (held plus its ready tasks: water-filling, the rest to the others by weight);
 *   2. need: a shard whose largest waiting head task is bigger than its fair share would never
 *      start it; such needs are granted whole, oldest first, while they fit (the first that does
 *      not fit stops the grants, so a large need is not passed by smaller ones forever), and the
 *      rest of the pool is split by weight among the others;
 *   3. headroom: what nobody wants, half by weight and half equally over every configured shard
 *      (the parts of shards not reporting kept for them), so work that arrives at a shard, also
 *      one idle at its report, can start before its next report.
 * Integer resources are split by largest remainder, so nothing is left over by rounding.
 */
import { SchedulerError } from './errors.ts';
import type { ResourceVector } from './policy/types.ts';

export type SlicedPool = 'lambda' | 'fargate';

/** The resources of one pool (a Fargate task takes vCPU and memory together). */
const POOL_RESOURCES: Readonly<Record<SlicedPool, readonly (keyof ResourceVector)[]>> = {
  lambda: ['slots'],
  fargate: ['milliVcpu', 'memoryMiB'],
};
const POOLS: readonly SlicedPool[] = ['lambda', 'fargate'];
const RESOURCES: readonly (keyof ResourceVector)[] = ['slots', 'milliVcpu', 'memoryMiB'];

export interface PoolWeights {
  readonly lambda: number;
  readonly fargate: number;
}

/** One shard's line in the shared record, as it last wrote it. */
export interface SliceEntry {
  /** What it may start tasks within. */
  readonly allowed: ResourceVector;
  /** What its tasks held when it reported. */
  readonly held: ResourceVector;
  readonly weight: PoolWeights;
  /** Its largest waiting head task's demand (per resource). */
  readonly need: ResourceVector;
  /** What it could use now: held plus its ready tasks' demand (absent in older records: no cap). */
  readonly wants?: ResourceVector | undefined;
  /** Per pool: since when its need has been above its fair share (absent: it is not). */
  readonly needSinceMs: Partial<Record<SlicedPool, number>>;
  readonly reportedAtMs: number;
  /** The writer's scheduler lease token for the shard: an older holder may not write over it. */
  readonly token?: number | undefined;
  /** Its scheduler stopped cleanly (releasedSlices): like a stale entry, no weight (only its equal part of the headroom is kept). */
  readonly released?: boolean | undefined;
}

/** The shared record (one item per pool set). `version` grows by one on every write. */
export interface CapacitySlices {
  readonly version: number;
  readonly shards: number;
  readonly entries: Readonly<Record<string, SliceEntry>>;
}

/** What a shard reports: what it holds now, the weight of its busy tenants per pool, its need. */
export interface SliceReport {
  readonly shard: number;
  readonly held: ResourceVector;
  readonly weight: PoolWeights;
  readonly need: ResourceVector;
  /** What it could use now: what it holds plus its ready tasks' demand (default: no cap). */
  readonly wants?: ResourceVector | undefined;
  /** This scheduler's lease token for the shard (0 without a lease). */
  readonly token?: number | undefined;
}

/**
 * A newer holder of the shard's lease has written its entry: this scheduler lost the lease and
 * must start nothing more, nor write the entry (it would replace the newer holder's claim).
 */
export class SliceSupersededError extends SchedulerError {
  constructor(shard: number, token: number, stored: number) {
    super('slice_superseded', `Shard ${shard}'s capacity slice was written under lease token ${stored} > ${token}`, {
      details: { shard, token, stored },
    });
    this.name = 'SliceSupersededError';
  }
}

/** Refuse a report or release from an older lease holder of the shard than the entry's writer. */
function checkToken(previous: SliceEntry | undefined, shard: number, token: number): void {
  if ((previous?.token ?? 0) > token) throw new SliceSupersededError(shard, token, previous?.token ?? 0);
}

export interface SliceOptions {
  /** Shards configured (recorded with the state). */
  readonly shards: number;
  /** An entry not reported for longer has no weight (the scheduler lease's TTL). */
  readonly staleAfterMs: number;
  /** The longest one task holds its pool: a stale entry is forgotten that much later. */
  readonly heldAtMostMs: number;
}

export interface SliceDecision {
  /** What the reporting shard may use once `next` is written. */
  readonly allowance: ResourceVector;
  /** The record to write, conditional on the version read. */
  readonly next: CapacitySlices;
}

const zero = (): ResourceVector => ({ slots: 0, milliVcpu: 0, memoryMiB: 0 });

export const isStale = (entry: SliceEntry, nowMs: number, staleAfterMs: number): boolean =>
  nowMs - entry.reportedAtMs > staleAfterMs;

/** Every task the entry's shard can have started has ended: it claims nothing. */
export const isForgotten = (entry: SliceEntry, nowMs: number, options: SliceOptions): boolean =>
  nowMs - entry.reportedAtMs > options.staleAfterMs + options.heldAtMostMs;

/** What an entry may be using now (see the header). */
export function claimOf(entry: SliceEntry, nowMs: number, options: SliceOptions): ResourceVector {
  if (isForgotten(entry, nowMs, options)) return zero();
  const claim = zero();
  for (const resource of RESOURCES) claim[resource] = Math.max(entry.allowed[resource], entry.held[resource]);
  return claim;
}

/** The sum of every entry's claim (the invariant: at most the pool in every resource). */
export function claimedOf(state: CapacitySlices | undefined, nowMs: number, options: SliceOptions): ResourceVector {
  const sum = zero();
  for (const entry of Object.values(state?.entries ?? {})) {
    const claim = claimOf(entry, nowMs, options);
    for (const resource of RESOURCES) sum[resource] += claim[resource];
  }
  return sum;
}

/**
 * The reporting shard's new allowance and the record to write. `capacity`: the whole pools
 * (integers: slots, milli-vCPU, MiB).
 */
export function nextSlices(
  state: CapacitySlices | undefined,
  report: SliceReport,
  capacity: ResourceVector,
  nowMs: number,
  options: SliceOptions,
): SliceDecision {
  const self = String(report.shard);
  const previous = state?.entries[self];
  const token = report.token ?? 0;
  checkToken(previous, report.shard, token);
  const kept: Record<string, SliceEntry> = {};
  const live = new Map<string, SliceEntry>();
  const free = { ...capacity };
  const forTargets = { ...capacity };
  for (const [shard, entry] of Object.entries(state?.entries ?? {})) {
    if (shard === self) continue;
    const stale = entry.released === true || isStale(entry, nowMs, options.staleAfterMs);
    const claim = claimOf(entry, nowMs, options);
    // A stopped shard that claims nothing is forgotten (it comes back with its next report).
    if (stale && RESOURCES.every((resource) => claim[resource] === 0)) continue;
    kept[shard] = entry;
    for (const resource of RESOURCES) {
      free[resource] -= claim[resource];
      // What a stopped shard may still hold is not there to share.
      if (stale) forTargets[resource] -= claim[resource];
    }
    if (!stale) live.set(shard, entry);
  }
  const reporting: SliceEntry = {
    allowed: zero(),
    held: { ...report.held },
    weight: { ...report.weight },
    need: { ...report.need },
    ...(report.wants ? { wants: { ...report.wants } } : {}),
    needSinceMs: previous?.needSinceMs ?? {},
    reportedAtMs: nowMs,
    token,
  };
  live.set(self, reporting);

  const allowance = zero();
  const needSinceMs: Partial<Record<SlicedPool, number>> = {};
  for (const pool of POOLS) {
    const { target, needy } = poolTargets(pool, live, forTargets, options.shards);
    const since = previous?.needSinceMs[pool];
    if (needy.has(self)) needSinceMs[pool] = since ?? nowMs;
    for (const resource of POOL_RESOURCES[pool]) {
      allowance[resource] = Math.max(0, Math.min(target.get(self)?.[resource] ?? 0, free[resource]));
    }
  }
  kept[self] = { ...reporting, allowed: allowance, needSinceMs };
  return {
    allowance: { ...allowance },
    next: { version: (state?.version ?? 0) + 1, shards: options.shards, entries: kept },
  };
}

/**
 * The record once `shard` gives its allowance up (its scheduler stops cleanly): it claims only
 * what its tasks still hold, and has no weight.
 */
export function releasedSlices(
  state: CapacitySlices | undefined,
  shard: number,
  held: ResourceVector,
  nowMs: number,
  options: SliceOptions,
  token = 0,
): CapacitySlices {
  checkToken(state?.entries[String(shard)], shard, token);
  const entries = { ...(state?.entries ?? {}) };
  entries[String(shard)] = {
    allowed: zero(),
    held: { ...held },
    weight: { lambda: 0, fargate: 0 },
    need: zero(),
    wants: { ...held },
    needSinceMs: {},
    reportedAtMs: nowMs,
    token,
    released: true,
  };
  return { version: (state?.version ?? 0) + 1, shards: options.shards, entries };
}

/**
 * Each live shard's target in one pool, and which shards' needs exceed their fair share there.
 * `size`: the pool less what stale shards hold.
 */
function poolTargets(
  pool: SlicedPool,
  live: ReadonlyMap<string, SliceEntry>,
  size: ResourceVector,
  configuredShards: number,
): { target: Map<string, ResourceVector>; needy: Set<string> } {
  const resources = POOL_RESOURCES[pool];
  const shards = [...live.keys()].sort(byShard);
  const anyWeight = shards.some((shard) => (live.get(shard) as SliceEntry).weight[pool] > 0);
  const weightOf = (shard: string) => (anyWeight ? (live.get(shard) as SliceEntry).weight[pool] : 1);
  // What a shard could use at most: an older record's entry without `wants` is not capped.
  const capOf = (shard: string, resource: keyof ResourceVector) =>
    (live.get(shard) as SliceEntry).wants?.[resource] ?? Number.POSITIVE_INFINITY;
  const split = (members: readonly string[], amounts: ResourceVector) => {
    const shares = new Map<string, ResourceVector>(members.map((shard) => [shard, zero()]));
    for (const resource of resources) {
      const parts = fillByWeight(
        Math.max(0, amounts[resource]),
        members.map((shard) => weightOf(shard)),
        members.map((shard) => capOf(shard, resource)),
      );
      members.forEach((shard, i) => {
        (shares.get(shard) as ResourceVector)[resource] = parts[i] as number;
      });
    }
    return shares;
  };
  const fair = split(shards, size);
  const exceeds = (shard: string, than: ResourceVector) =>
    resources.some((resource) => (live.get(shard) as SliceEntry).need[resource] > than[resource]);
  const needy = new Set(shards.filter((shard) => exceeds(shard, fair.get(shard) as ResourceVector)));
  // Oldest need first; a need not yet dated (another shard's, first seen needy here) after, by shard.
  const since = (shard: string) => (live.get(shard) as SliceEntry).needSinceMs[pool] ?? Number.POSITIVE_INFINITY;
  const queue = [...needy].sort((a, b) => since(a) - since(b) || byShard(a, b));
  const rest = { ...size };
  const target = new Map<string, ResourceVector>();
  for (const shard of queue) {
    const need = (live.get(shard) as SliceEntry).need;
    if (exceeds(shard, rest)) break;
    const granted = zero();
    for (const resource of resources) {
      granted[resource] = need[resource];
      rest[resource] -= need[resource];
    }
    target.set(shard, granted);
  }
  const others = shards.filter((shard) => !target.has(shard));
  for (const [shard, share] of split(others, rest)) target.set(shard, share);
  // What nobody wants now is headroom, so work arriving at a shard starts before its next
  // report: half by weight, half equally over every configured shard. A shard idle at its report
  // (weight 0: its tenants' work came and went) still starts the next arrival at once, and the
  // equal parts of shards not reporting (not started yet, or stopped) are kept for them: the
  // first shard to report alone does not take the whole pool while the others start.
  const absent = Math.max(0, configuredShards - shards.length);
  const totalWeight = shards.reduce((sum, shard) => sum + weightOf(shard), 0);
  const members = shards.length + absent;
  const headroomWeights = [
    ...shards.map((shard) => (anyWeight ? members * weightOf(shard) + totalWeight : 1)),
    ...Array.from({ length: absent }, () => (anyWeight ? totalWeight : 1)),
  ];
  for (const resource of resources) {
    let left = size[resource];
    for (const share of target.values()) left -= share[resource];
    const parts = splitByWeight(Math.max(0, left), headroomWeights);
    shards.forEach((shard, i) => {
      (target.get(shard) as ResourceVector)[resource] += parts[i] as number;
    });
  }
  return { target, needy };
}

/**
 * `total` split by weight as water fills vessels of `caps`: no part above its cap, what a capped
 * member cannot take goes to the others by weight (max-min fairness, weighted). Integer parts;
 * what all caps together cannot take is left over.
 */
export function fillByWeight(total: number, weights: readonly number[], caps: readonly number[]): number[] {
  const parts = weights.map(() => 0);
  let open = weights.map((w, i) => (w > 0 && (caps[i] as number) > 0 ? i : -1)).filter((i) => i >= 0);
  let remaining = total;
  while (remaining > 0 && open.length > 0) {
    const round = splitByWeight(
      remaining,
      open.map((i) => weights[i] as number),
    );
    const full = open.filter((i, k) => (parts[i] as number) + (round[k] as number) >= (caps[i] as number));
    if (full.length === 0) {
      open.forEach((i, k) => {
        parts[i] = (parts[i] as number) + (round[k] as number);
      });
      break;
    }
    // Fill the capped ones to their caps and share the rest again among the others.
    for (const i of full) {
      remaining -= (caps[i] as number) - (parts[i] as number);
      parts[i] = caps[i] as number;
    }
    open = open.filter((i) => !full.includes(i));
  }
  return parts;
}

const byShard = (a: string, b: string): number => Number(a) - Number(b) || (a < b ? -1 : a > b ? 1 : 0);

/**
 * `total` (an integer) split in proportion to `weights` by largest remainder: the parts are
 * integers summing to `total` (0 each when no weight is positive); ties go to the earlier weight.
 */
export function splitByWeight(total: number, weights: readonly number[]): number[] {
  const sum = weights.reduce((a, w) => a + Math.max(0, w), 0);
  if (sum <= 0 || total <= 0) return weights.map(() => 0);
  const exact = weights.map((w) => (total * Math.max(0, w)) / sum);
  const parts = exact.map(Math.floor);
  let left = total - parts.reduce((a, p) => a + p, 0);
  const order = exact.map((x, i) => ({ i, rest: x - Math.floor(x) })).sort((a, b) => b.rest - a.rest || a.i - b.i);
  for (const { i } of order) {
    if (left <= 0) break;
    if ((weights[i] as number) <= 0) continue;
    parts[i] = (parts[i] as number) + 1;
    left--;
  }
  return parts;
}
