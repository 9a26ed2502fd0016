/**
 * The one SVG chart module: standalone bar charts for docs/bench (benchmarks) and docs/sim
 * (simulator). Hand-written SVG: two chart shapes do not justify a plotting library.
 */

export const escapeXml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const PALETTE = ['#1b7837', '#5aae61', '#b2182b', '#ef8a62', '#2166ac', '#762a83'];

function svgDocument(width: number, height: number, body: readonly string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...body,
    '</svg>',
  ].join('\n');
}

export interface Bar {
  readonly label: string;
  readonly value: number;
  readonly color?: string;
}

/** One horizontal bar per value, labelled with the value and its unit; a NaN (not measured) is left out. */
export function horizontalBarChart(title: string, unit: string, all: readonly Bar[]): string {
  const bars = all.filter((bar) => Number.isFinite(bar.value));
  const width = 640;
  const rowHeight = 26;
  const left = 230;
  const top = 36;
  const height = top + bars.length * rowHeight + 16;
  const max = Math.max(...bars.map((b) => b.value), 1e-9);
  const rows = bars.map((bar, i) => {
    const y = top + i * rowHeight;
    const w = Math.max(1, ((width - left - 90) * bar.value) / max);
    return [
      `<text x="${left - 8}" y="${y + 16}" text-anchor="end">${escapeXml(bar.label)}</text>`,
      `<rect x="${left}" y="${y + 3}" width="${w.toFixed(1)}" height="${rowHeight - 8}" fill="${bar.color ?? '#4c78a8'}"/>`,
      `<text x="${(left + w + 6).toFixed(1)}" y="${y + 16}">${escapeXml(`${bar.value.toFixed(bar.value < 10 ? 2 : 0)} ${unit}`)}</text>`,
    ].join('');
  });
  return svgDocument(width, height, [
    `<text x="10" y="20" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
    ...rows,
  ]);
}

/**
 * Grouped vertical bars on a log scale (waits span milliseconds to hours): one group per
 * category, one bar per series in each.
 */
export function groupedLogBarChart(
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
  return svgDocument(width, height, parts);
}
