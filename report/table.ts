/**
 * The one table formatter: the CLI's listings, the simulator's and the benchmarks' results.
 * Markdown pastes into docs as is; text puts columns two spaces apart. Widths are measured with
 * `width`, so cells carrying ANSI colours (the CLI) still line up.
 */
export type Align = 'left' | 'right';

export interface TableOptions {
  /** A Markdown table (pipes, a delimiter row) instead of plain text columns. @default false */
  readonly markdown?: boolean;
  /** Alignment of each column (text only). @default every column left */
  readonly align?: (column: number) => Align;
  /** How wide a cell shows. @default its length */
  readonly width?: (cell: string) => number;
}

export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  options: TableOptions = {},
): string {
  const width = options.width ?? ((cell: string) => cell.length);
  const align = options.align ?? (() => 'left');
  const all = [headers, ...rows];
  const widths = headers.map((_, c) => Math.max(...all.map((row) => width(row[c] ?? ''))));
  const fill = (cell: string, c: number) => ' '.repeat(Math.max(0, (widths[c] ?? 0) - width(cell)));
  if (options.markdown) {
    const line = (cells: readonly string[]) => `| ${cells.map((cell, c) => cell + fill(cell, c)).join(' | ')} |`;
    return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
  }
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => {
        if (align(c) === 'right') return fill(cell, c) + cell;
        // A left-aligned last column needs no padding after it.
        return c === cells.length - 1 ? cell : cell + fill(cell, c);
      })
      .join('  ')
      .trimEnd();
  return all.map(line).join('\n');
}
