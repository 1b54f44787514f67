// The peer benchmark's one table: a row per measurement, a column per
// system (its durability in the first row), then jobtree's best variant over
// the best peer, the target and whether it is met.

import { formatNumber } from '../table.js';
import type { DrainResult, LatencyResult, RateResult } from './bench-system.js';

export type Measurement = DrainResult | RateResult | LatencyResult;

export interface ReportRow {
  metric: string;
  /** Measured value per system label; absent when the system did not run it. */
  values: ReadonlyMap<string, number>;
  better: 'higher' | 'lower';
  /** What counts as met, if the issue sets a target for this row. */
  target?: Target;
}

export type Target =
  /** jobtree / best peer at least this. */
  | { kind: 'ratio'; atLeast: number }
  /** jobtree at most this value (an absolute bound, e.g. milliseconds). */
  | { kind: 'absolute'; atMost: number; unit: string }
  /** jobtree at most the lowest of these systems. */
  | { kind: 'noWorseThan'; labels: readonly string[]; name: string };

export const isJobtree = (label: string) => label.startsWith('jobtree');

function best(values: readonly number[], better: 'higher' | 'lower'): number | undefined {
  if (values.length === 0) return undefined;
  return better === 'higher' ? Math.max(...values) : Math.min(...values);
}

function pick(row: ReportRow, which: (label: string) => boolean): number | undefined {
  return best(
    [...row.values].filter(([label]) => which(label)).map(([, value]) => value),
    row.better,
  );
}

function judge(row: ReportRow, jobtree: number | undefined, ratio: number | undefined): { target: string; result: string } {
  const { target } = row;
  if (!target) return { target: '-', result: '-' };
  const verdict = (ok: boolean | undefined) => (ok === undefined ? '-' : ok ? 'pass' : 'FAIL');
  switch (target.kind) {
    case 'ratio':
      return { target: `>= ${target.atLeast}`, result: verdict(ratio === undefined ? undefined : ratio >= target.atLeast) };
    case 'absolute':
      return { target: `<= ${target.atMost} ${target.unit}`, result: verdict(jobtree === undefined ? undefined : jobtree <= target.atMost) };
    case 'noWorseThan': {
      const bound = best(
        target.labels.map((label) => row.values.get(label)).filter((value): value is number => value !== undefined),
        'lower',
      );
      return { target: `<= ${target.name}`, result: verdict(jobtree === undefined || bound === undefined ? undefined : jobtree <= bound) };
    }
  }
}

/** Right-aligns numbers and left-aligns text, cell by cell; a rule under the header. */
function layout(rows: readonly (readonly string[])[]): string {
  const widths = (rows[0] ?? []).map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  const numeric = (cell: string) => /^[\d.,]+$/.test(cell);
  const line = (row: readonly string[]) =>
    row
      .map((cell, column) => (column > 0 && numeric(cell) ? cell.padStart(widths[column] ?? 0) : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  const [header, ...body] = rows;
  return [line(header ?? []), widths.map((width) => '-'.repeat(width)).join('  '), ...body.map(line)].join('\n');
}

export function formatReport(labels: readonly string[], durability: ReadonlyMap<string, string>, rows: readonly ReportRow[]): string {
  const table: string[][] = [
    ['metric', ...labels, 'jobtree/best', 'target', 'result'],
    ['durability', ...labels.map((label) => durability.get(label) ?? '-'), '', '', ''],
  ];
  for (const row of rows) {
    const jobtree = pick(row, isJobtree);
    const peer = pick(row, (label) => !isJobtree(label));
    const ratio = jobtree === undefined || peer === undefined || peer === 0 ? undefined : jobtree / peer;
    const { target, result } = judge(row, jobtree, ratio);
    table.push([
      row.metric,
      ...labels.map((label) => {
        const value = row.values.get(label);
        return value === undefined ? '-' : formatNumber(value);
      }),
      ratio === undefined ? '-' : formatNumber(ratio),
      target,
      result,
    ]);
  }
  return layout(table);
}
