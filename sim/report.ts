/** Text tables and SVG charts of simulation results (drawn by report/). */
import { groupedLogBarChart } from '../report/chart.ts';
import { formatTable } from '../report/table.ts';
import { LEASE_SECONDS } from './api-bound.ts';
import { maxHoldSeconds, type RunResult } from './engine.ts';
import { boundStats, type RunSummary, type WaitStats, waitStats } from './metrics.ts';
import type { Trace } from './trace.ts';

const seconds = (value: number) =>
  value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
const percent = (value: number) => `${(value * 100).toFixed(0)}%`;

/** Tenants grouped by name prefix ("quiet-17" → "quiet"), so 10,000 tenants still print as a few rows. */
export function tenantGroups(trace: Trace): { names: string[]; groupOf: Int32Array } {
  const names: string[] = [];
  const index = new Map<string, number>();
  const groupOf = new Int32Array(trace.tenantIds.length);
  trace.tenantIds.forEach((id, t) => {
    const name = id.replace(/-\d+$/, '');
    let g = index.get(name);
    if (g === undefined) {
      g = names.length;
      names.push(name);
      index.set(name, g);
    }
    groupOf[t] = g;
  });
  return { names, groupOf };
}

export interface GroupStats {
  readonly group: string;
  readonly tenants: number;
  readonly stats: WaitStats;
  readonly worstTenantP99: number;
  readonly meanShare: number;
}

export function groupStats(trace: Trace, run: RunResult, summary: RunSummary): GroupStats[] {
  const { names, groupOf } = tenantGroups(trace);
  return names.map((group, g) => {
    const members = summary.tenants.filter((_, t) => groupOf[t] === g);
    const shares = members.map((m) => m.meanShare).filter((s) => !Number.isNaN(s));
    return {
      group,
      tenants: members.length,
      stats: waitStats(run.waitMs, (i) => groupOf[trace.tenant[i] as number] === g),
      worstTenantP99: Math.max(...members.map((m) => m.stats.p99)),
      meanShare: shares.length ? shares.reduce((a, b) => a + b, 0) / shares.length : Number.NaN,
    };
  });
}

export function renderText(trace: Trace, runs: readonly { run: RunResult; summary: RunSummary }[]): string {
  const tiers = Object.keys(runs[0]?.summary.tiers ?? {});
  const headline = formatTable(
    [
      'dispatcher',
      'p50 s',
      'p99 s',
      'max s',
      ...tiers.flatMap((t) => [`${t} p99`, `${t} max`]),
      'Jain',
      'util λ',
      'util F',
      'wall s',
    ],
    runs.map(({ summary: s }) => [
      s.dispatcher,
      seconds(s.overall.p50),
      seconds(s.overall.p99),
      seconds(s.overall.max),
      ...tiers.flatMap((t) => [seconds(s.tiers[t]?.p99 ?? 0), seconds(s.tiers[t]?.max ?? 0)]),
      s.jain.toFixed(3),
      percent(s.utilization.lambda),
      percent(s.utilization.fargate),
      s.wallSeconds.toFixed(1),
    ]),
    { markdown: true },
  );
  const perGroup = formatTable(
    ['dispatcher', 'tenants', 'p50 s', 'p99 s', 'max s', 'worst tenant p99', 'mean w. DRF share'],
    runs.flatMap(({ run, summary }) =>
      groupStats(trace, run, summary).map((g) => [
        `${summary.dispatcher} · ${g.group}`,
        `${g.tenants}`,
        seconds(g.stats.p50),
        seconds(g.stats.p99),
        seconds(g.stats.max),
        seconds(g.worstTenantP99),
        Number.isNaN(g.meanShare) ? '-' : g.meanShare.toFixed(3),
      ]),
    ),
    { markdown: true },
  );
  const withBounds = runs.filter(({ run }) => run.boundMs);
  const { names, groupOf } = tenantGroups(trace);
  // Each group, then split by whether its tenant ran a task at submit (the bound then waits for it).
  const splits = [
    { label: '', include: (_run: RunResult, _i: number) => true },
    { label: ' · tenant idle at submit', include: (run: RunResult, i: number) => run.tenantRanAtSubmit?.[i] === 0 },
    { label: ' · tenant running at submit', include: (run: RunResult, i: number) => run.tenantRanAtSubmit?.[i] === 1 },
  ];
  const bounds = withBounds.length
    ? formatTable(
        [
          'dispatcher',
          'given',
          'checked',
          'on pace',
          'on headroom',
          'broken',
          'late, assumption broken',
          'bound / wait p50',
          'p90',
          'max',
          'bound p50 s',
          'wait p50 s',
        ],
        withBounds.flatMap(({ run, summary }) =>
          names.flatMap((group, g) =>
            splits.map(({ label, include }) => {
              const b = boundStats(trace, run, (i) => groupOf[trace.tenant[i] as number] === g && include(run, i));
              const ratio = (value: number | undefined) => (value === undefined ? '-' : `${value.toFixed(0)}×`);
              return [
                `${summary.dispatcher} · ${group}${label}`,
                `${b.given}`,
                `${b.checked}`,
                `${b.onPace}`,
                `${b.onHeadroom}`,
                `${b.broken}`,
                `${b.lateAssumptionBroken}`,
                ratio(b.ratio?.p50),
                ratio(b.ratio?.p90),
                ratio(b.ratio?.max),
                b.median ? seconds(b.median.boundSeconds) : '-',
                b.median ? seconds(b.median.waitSeconds) : '-',
              ];
            }),
          ),
        ),
        { markdown: true },
      )
    : undefined;
  const hold = maxHoldSeconds(trace);
  let atCap = 0;
  const used = [false, false];
  for (let i = 0; i < trace.size; i++) {
    used[trace.runtime[i] as number] = true;
    const cap = trace.runtime[i] === 0 ? hold.lambda : hold.fargate;
    if ((trace.timeoutMs[i] as number) >= cap * 1000) atCap++;
  }
  const taus = [
    ...(used[0] ? [`Lambda ${hold.lambda + 2 * LEASE_SECONDS} s`] : []),
    ...(used[1] ? [`Fargate ${hold.fargate + 2 * LEASE_SECONDS} s`] : []),
  ];
  return [
    `## ${trace.scenario}: ${trace.size.toLocaleString('en')} tasks, ${trace.tenantIds.length.toLocaleString('en')} tenants`,
    '',
    trace.description,
    '',
    'Wait from arrival to dispatch (seconds); Jain index of backlogged tenants’ weighted dominant shares (1 = equal); utilization of the Lambda and Fargate pools.',
    '',
    headline,
    '',
    'Per tenant group:',
    '',
    perGroup,
    '',
    ...(bounds
      ? [
          "The API's wait bound at submit (sim/api-bound.ts: app/wait.ts over a snapshot up to 2 s old), for tasks that are their tenant's only waiting one; checked when the tenant then submitted nothing before the task started; the wait counted at least 1 s in the ratio. " +
            `${percent(atCap / Math.max(1, trace.size))} of the tasks have their pool's longest timeout in the trace (the pool's cap); τ, what the bound charges a task dispatched after the snapshot, is that cap plus the leases: ${taus.join(', ')}:`,
          '',
          bounds,
          '',
        ]
      : []),
  ].join('\n');
}

/** The charts of one scenario: p99 wait per tier and per tenant group, one bar per dispatcher. */
export function renderCharts(
  trace: Trace,
  runs: readonly { run: RunResult; summary: RunSummary }[],
): Record<string, string> {
  const charts: Record<string, string> = {};
  const tiers = Object.keys(runs[0]?.summary.tiers ?? {});
  const groups = runs.map(({ run, summary }) => groupStats(trace, run, summary));
  const groupNames = groups[0]?.map((g) => g.group) ?? [];
  charts[`${trace.scenario}-p99-by-tenant.svg`] = groupedLogBarChart(
    `${trace.scenario}: p99 wait by tenant group`,
    groupNames,
    runs.map(({ summary }, r) => ({ name: summary.dispatcher, values: (groups[r] ?? []).map((g) => g.stats.p99) })),
  );
  charts[`${trace.scenario}-max-by-tier.svg`] = groupedLogBarChart(
    `${trace.scenario}: max wait by tier`,
    tiers,
    runs.map(({ summary }) => ({ name: summary.dispatcher, values: tiers.map((t) => summary.tiers[t]?.max ?? 0) })),
  );
  return charts;
}
