/** Wait statistics of a simulation run, grouped by tier and by tenant. */
import type { RunResult } from './engine.ts';
import { type Trace, tierName } from './trace.ts';

export interface WaitStats {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Nearest-rank percentiles of the waits (seconds) of the tasks selected by `include`. */
export function waitStats(waitMs: Float64Array, include: (task: number) => boolean): WaitStats {
  const values: number[] = [];
  for (let i = 0; i < waitMs.length; i++) if (include(i)) values.push(waitMs[i] as number);
  const sorted = Float64Array.from(values).sort();
  const at = (q: number) =>
    sorted.length ? (sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number) / 1000 : 0;
  return {
    count: sorted.length,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted.length ? (sorted[sorted.length - 1] as number) / 1000 : 0,
  };
}

export interface RunSummary {
  readonly dispatcher: string;
  readonly overall: WaitStats;
  readonly tiers: Record<string, WaitStats>;
  readonly tenants: { readonly tenantId: string; readonly stats: WaitStats; readonly meanShare: number }[];
  readonly undispatched: number;
  readonly jain: number;
  readonly utilization: { readonly lambda: number; readonly fargate: number };
  readonly makespanSeconds: number;
  readonly wallSeconds: number;
}

export function summarize(trace: Trace, run: RunResult): RunSummary {
  const tiersPresent = [...new Set(trace.tier)].sort();
  const tiers: Record<string, WaitStats> = {};
  for (const tier of tiersPresent) tiers[tierName(tier)] = waitStats(run.waitMs, (i) => trace.tier[i] === tier);
  // Group task indices by tenant once (counting sort), then compute each tenant's stats.
  const tenantCount = trace.tenantIds.length;
  const starts = new Int32Array(tenantCount + 1);
  for (let i = 0; i < trace.size; i++) {
    const next = (trace.tenant[i] as number) + 1;
    starts[next] = (starts[next] as number) + 1;
  }
  for (let t = 0; t < tenantCount; t++) starts[t + 1] = (starts[t + 1] as number) + (starts[t] as number);
  const cursor = starts.slice(0, tenantCount);
  const byTenant = new Float64Array(trace.size);
  for (let i = 0; i < trace.size; i++) {
    const tenant = trace.tenant[i] as number;
    const position = cursor[tenant] as number;
    cursor[tenant] = position + 1;
    byTenant[position] = run.waitMs[i] as number;
  }
  const tenants = trace.tenantIds.map((tenantId, t) => {
    const slice = byTenant.subarray(starts[t] as number, starts[t + 1] as number);
    return { tenantId, stats: waitStats(slice, () => true), meanShare: run.meanShareWhileBacklogged[t] as number };
  });
  let undispatched = 0;
  for (const wait of run.waitMs) if (Number.isNaN(wait)) undispatched++;
  return {
    dispatcher: run.dispatcher,
    overall: waitStats(run.waitMs, () => true),
    tiers,
    tenants,
    undispatched,
    jain: run.jain,
    utilization: run.utilization,
    makespanSeconds: run.makespanMs / 1000,
    wallSeconds: run.wallMs / 1000,
  };
}

export interface BoundStats {
  /** Tasks given a bound at submit, and of those, whose tenant then submitted nothing before they started. */
  readonly given: number;
  readonly checked: number;
  /** Of the given, bounds whose task started late while what they assumed of the others broke (not checked). */
  readonly lateAssumptionBroken: number;
  /** Of the checked, bounds that rest on the pool's pace (assumedFreed). */
  readonly onPace: number;
  /** Of the checked, bounds that rest on the Lambda pool's headroom (assumedHeadroom). */
  readonly onHeadroom: number;
  /** Checked bounds the start came after (a defect: should be 0). */
  readonly broken: number;
  /** bound / actual wait (the wait at least 1 s), over the checked bounds. */
  readonly ratio: { readonly p50: number; readonly p90: number; readonly max: number } | null;
  /** Medians over the checked bounds: the bound and the wait, seconds. */
  readonly median: { readonly boundSeconds: number; readonly waitSeconds: number } | null;
}

/**
 * Whether what task `i`'s bound at submit assumed of the others held in the run: the tenants that
 * joined its pool after the snapshot (`assumedJoins`), and, on the pool's pace, the slots freed
 * and its tenant's running tasks' end (`assumedFreed`). True for what it did not assume.
 */
export function assumptionsHeld(run: RunResult, i: number): boolean {
  return joinsHeld(run, i) && freedAsAssumed(run, i) && headroomKept(run, i) && busyWeightKept(run, i);
}

/**
 * Below its fair share: the engine's summed weight of tenants with work was at most `atMost` at
 * every instant between `fromMs` and `byMs` (the value in effect at `fromMs` included).
 */
function busyWeightKept(run: RunResult, i: number): boolean {
  const assumed = run.assumedBusyWeight;
  const steps = run.busyWeightSteps;
  const atMost = assumed?.atMost[i] ?? Number.NaN;
  if (!assumed || !steps || Number.isNaN(atMost)) return true;
  const fromMs = assumed.fromMs[i] as number;
  const byMs = assumed.byMs[i] as number;
  for (let j = Math.max(0, firstAfter(steps, fromMs) - 1); j < steps.length; j++) {
    const step = steps[j] as { atMs: number; weight: number };
    if (step.atMs > byMs) break;
    if (step.weight > atMost + 1e-9) return false;
  }
  return true;
}

/** On the Lambda pool's headroom: the pool was never full between `fromMs` and `byMs`. */
function headroomKept(run: RunResult, i: number): boolean {
  const assumed = run.assumedHeadroom;
  if (!assumed || (assumed.slots[i] ?? 0) === 0 || !run.lambdaFullSpans) return true;
  const fromMs = assumed.fromMs[i] as number;
  const byMs = assumed.byMs[i] as number;
  return !run.lambdaFullSpans.some((span) => span.fromMs <= byMs && span.toMs > fromMs);
}

/** At most `atMost` other tenants started waiting in its pool between `fromMs` and `byMs`. */
function joinsHeld(run: RunResult, i: number): boolean {
  const assumed = run.assumedJoins;
  const atMost = assumed?.atMost[i] ?? -1;
  const joins = run.joinsByPool?.[assumed?.pool[i] ?? 0];
  if (!assumed || atMost < 0 || !joins) return true;
  const fromMs = assumed.fromMs[i] as number;
  const byMs = assumed.byMs[i] as number;
  const own = assumed.tenant[i];
  const joined = new Set<number>();
  for (let j = firstAfter(joins, fromMs); j < joins.length && (joins[j]?.atMs as number) <= byMs; j++) {
    const tenant = joins[j]?.tenant as number;
    if (tenant !== own) joined.add(tenant);
  }
  return joined.size <= atMost;
}

/** The first of the time-ordered `joins` after `ms`. */
function firstAfter(joins: readonly { readonly atMs: number }[], ms: number): number {
  let lo = 0;
  let hi = joins.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((joins[mid]?.atMs as number) <= ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function freedAsAssumed(run: RunResult, i: number): boolean {
  const assumed = run.assumedFreed;
  const slots = assumed?.slots[i] ?? 0;
  if (!assumed || slots === 0 || !run.lambdaFreedMs) return true;
  // Its tenant's running tasks ended by when it took them to (when it did).
  if ((assumed.tenantFreedMs[i] as number) > (assumed.tenantFreeByMs[i] as number)) return false;
  return countBetween(run.lambdaFreedMs, assumed.fromMs[i] as number, assumed.byMs[i] as number) >= slots;
}

/** How many of the ascending `times` fall in [fromMs, byMs]. */
export function countBetween(times: readonly number[], fromMs: number, byMs: number): number {
  const firstAtOrAfter = (ms: number, strict: boolean) => {
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((times[mid] as number) < ms || (strict && (times[mid] as number) === ms)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return firstAtOrAfter(byMs, true) - firstAtOrAfter(fromMs, false);
}

/** The API's bounds at submit against the waits, for the tasks `include` selects. */
export function boundStats(trace: Trace, run: RunResult, include: (task: number) => boolean = () => true): BoundStats {
  const boundMs = run.boundMs;
  if (!boundMs)
    return {
      given: 0,
      checked: 0,
      lateAssumptionBroken: 0,
      onPace: 0,
      onHeadroom: 0,
      broken: 0,
      ratio: null,
      median: null,
    };
  // A1 of the bound: its tenant submits nothing more until it starts.
  const nextArrival = new Float64Array(trace.size).fill(Number.POSITIVE_INFINITY);
  const lastSeen = new Map<number, number>();
  for (let i = trace.size - 1; i >= 0; i--) {
    const tenant = trace.tenant[i] as number;
    const later = lastSeen.get(tenant);
    if (later !== undefined) nextArrival[i] = trace.arriveMs[later] as number;
    lastSeen.set(tenant, i);
  }
  let given = 0;
  let broken = 0;
  let lateAssumptionBroken = 0;
  let onPace = 0;
  let onHeadroom = 0;
  const ratios: number[] = [];
  const bounds: number[] = [];
  const waits: number[] = [];
  for (let i = 0; i < trace.size; i++) {
    const bound = boundMs[i] as number;
    if (Number.isNaN(bound) || !include(i)) continue;
    given++;
    const wait = run.waitMs[i] as number;
    const startMs = (trace.arriveMs[i] as number) + wait;
    if ((nextArrival[i] as number) < startMs) continue;
    if (wait > bound && !assumptionsHeld(run, i)) {
      lateAssumptionBroken++;
      continue;
    }
    if ((run.assumedFreed?.slots[i] ?? 0) > 0) onPace++;
    if ((run.assumedHeadroom?.slots[i] ?? 0) > 0) onHeadroom++;
    if (wait > bound) broken++;
    ratios.push(bound / Math.max(1000, wait));
    bounds.push(bound / 1000);
    waits.push(wait / 1000);
  }
  for (const values of [ratios, bounds, waits]) values.sort((a, b) => a - b);
  const at = (values: number[], q: number) =>
    values[Math.min(values.length - 1, Math.ceil(q * values.length) - 1)] as number;
  return {
    given,
    checked: ratios.length,
    lateAssumptionBroken,
    onPace,
    onHeadroom,
    broken,
    ratio: ratios.length ? { p50: at(ratios, 0.5), p90: at(ratios, 0.9), max: ratios.at(-1) as number } : null,
    median: ratios.length ? { boundSeconds: at(bounds, 0.5), waitSeconds: at(waits, 0.5) } : null,
  };
}
