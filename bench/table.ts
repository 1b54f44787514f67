// Prints a benchmark's results as an aligned plain-text table. Generic: any
// bench/*.ts can hand it rows of strings; `ratioRow` builds the usual
// "jobtree vs a baseline measured in the same run" row.

export type Cell = string | number;

/** Right-aligns numbers, left-aligns text, pads every column to its widest cell. */
export function formatTable(header: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const cells = [header, ...rows].map((row) => row.map((cell) => (typeof cell === 'number' ? formatNumber(cell) : cell)));
  const widths = header.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  const numeric = header.map((_, column) => rows.every((row) => typeof row[column] !== 'string' || /^[\d.,-]+$/.test(String(row[column]))));
  const line = (row: readonly string[]) =>
    row
      .map((cell, column) => {
        const width = widths[column] ?? 0;
        return numeric[column] && row !== cells[0] ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  const [first, ...rest] = cells;
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [line(first ?? []), rule, ...rest.map(line)].join('\n');
}

/** Three significant digits for small numbers, thousands separators for large ones. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  if (value === 0) return '0';
  return Number(value.toPrecision(3)).toString();
}

export interface Comparison {
  metric: string;
  /** The measured value of the thing under test. */
  value: number;
  /** The same measurement on the baseline, in the same run. */
  baseline: number;
  /** The lowest acceptable value / baseline. */
  target: number;
}

export const RATIO_HEADER = ['metric', 'jobtree', 'baseline', 'ratio', 'target', 'result'] as const;

/** A row of RATIO_HEADER: the ratio, the target as `>= x`, and pass/FAIL. */
export function ratioRow({ metric, value, baseline, target }: Comparison): Cell[] {
  const ratio = baseline === 0 ? 0 : value / baseline;
  return [metric, value, baseline, Number(ratio.toPrecision(3)), `>= ${target}`, ratio >= target ? 'pass' : 'FAIL'];
}

/** A row of RATIO_HEADER for a number reported without a target. */
export function infoRow(metric: string, value: number, baseline?: number): Cell[] {
  const ratio = baseline === undefined || baseline === 0 ? '-' : Number((value / baseline).toPrecision(3));
  return [metric, value, baseline ?? '-', ratio, '-', 'info'];
}
