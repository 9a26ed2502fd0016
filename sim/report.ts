/** Text tables and hand-rolled SVG charts of simulation results (no dependencies). */
import type { RunResult } from './engine.ts';
import { type RunSummary, type WaitStats, waitStats } from './metrics.ts';
import type { Trace } from './trace.ts';

const seconds = (value: number) =>
  value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
const percent = (value: number) => `${(value * 100).toFixed(0)}%`;

/** A Markdown table with aligned columns (pastes into docs as is). */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')} |`;
  return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

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
  const headline = table(
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
  );
  const perGroup = table(
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
  );
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
  ].join('\n');
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const PALETTE = ['#1b7837', '#5aae61', '#b2182b', '#ef8a62', '#2166ac', '#762a83'];

/**
 * Grouped bar chart on a log scale (waits span milliseconds to hours).
 * categories: x groups; series: one bar per category each.
 */
export function barChartSvg(
  title: string,
  categories: readonly string[],
  series: readonly { name: string; values: readonly number[] }[],
): string {
  const width = 900;
  const height = 420;
  const margin = { top: 50, right: 180, bottom: 60, left: 70 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const decades = Math.ceil(Math.log10(max + 1) + 1);
  const y = (value: number) => margin.top + plotH - (Math.log10(value + 1) / decades) * plotH;
  const groupW = plotW / categories.length;
  const barW = (groupW * 0.8) / series.length;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15">${escapeXml(title)}</text>`,
  ];
  for (let d = 0; d <= decades; d++) {
    const value = d === 0 ? 0 : 10 ** (d - 1);
    const yy = y(value);
    parts.push(`<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${yy}" y2="${yy}" stroke="#ddd"/>`);
    parts.push(`<text x="${margin.left - 6}" y="${yy + 4}" text-anchor="end">${value}</text>`);
  }
  parts.push(
    `<text transform="translate(18 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">wait, seconds (log scale)</text>`,
  );
  categories.forEach((category, c) => {
    const x0 = margin.left + c * groupW + groupW * 0.1;
    series.forEach((s, i) => {
      const value = s.values[c] ?? 0;
      const top = y(value);
      parts.push(
        `<rect x="${x0 + i * barW}" y="${top}" width="${barW - 1}" height="${margin.top + plotH - top}" fill="${PALETTE[i % PALETTE.length]}"><title>${escapeXml(`${s.name} · ${category}: ${value.toFixed(2)} s`)}</title></rect>`,
      );
    });
    parts.push(
      `<text x="${x0 + groupW * 0.4}" y="${margin.top + plotH + 18}" text-anchor="middle">${escapeXml(category)}</text>`,
    );
  });
  series.forEach((s, i) => {
    const yy = margin.top + 10 + i * 20;
    parts.push(
      `<rect x="${width - margin.right + 20}" y="${yy - 10}" width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/>`,
    );
    parts.push(`<text x="${width - margin.right + 38}" y="${yy}">${escapeXml(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
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
  charts[`${trace.scenario}-p99-by-tenant.svg`] = barChartSvg(
    `${trace.scenario}: p99 wait by tenant group`,
    groupNames,
    runs.map(({ summary }, r) => ({ name: summary.dispatcher, values: (groups[r] ?? []).map((g) => g.stats.p99) })),
  );
  charts[`${trace.scenario}-max-by-tier.svg`] = barChartSvg(
    `${trace.scenario}: max wait by tier`,
    tiers,
    runs.map(({ summary }) => ({ name: summary.dispatcher, values: tiers.map((t) => summary.tiers[t]?.max ?? 0) })),
  );
  return charts;
}
