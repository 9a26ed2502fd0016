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
