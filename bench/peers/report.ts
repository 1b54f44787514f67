// The peer benchmark's tables, per mode (each system in its own process, or
// all in one): the measurements, a column per system, each cell the median
// over the rounds with the best round beside it; then the targets,
// each a ratio (or a bound) computed from the medians of the same run, the
// best rounds' ratio beside it, and whether the median meets the target.

import { formatNumber } from '../table.js';
import type { DrainResult } from './bench-system.js';
import type { Measurement, Scenario } from './scenarios.js';
import { isJobtreeKey, SYSTEM_LABELS, type SystemKey } from './systems/catalog.js';

/** Every round's measurement, by scenario key and system. */
export type Samples = ReadonlyMap<string, ReadonlyMap<SystemKey, readonly Measurement[]>>;

type Better = 'higher' | 'lower';

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** A system's median and best round of one reading of one scenario; undefined when it did not run it. */
interface Stat {
  median: number;
  best: number;
  rounds: number;
}

function stat(samples: Samples, scenario: string, key: SystemKey, read: (m: Measurement) => number | undefined, better: Better): Stat | undefined {
  const values = (samples.get(scenario)?.get(key) ?? []).map(read).filter((value): value is number => value !== undefined && Number.isFinite(value));
  if (values.length === 0) return undefined;
  return { median: median(values), best: better === 'higher' ? Math.max(...values) : Math.min(...values), rounds: values.length };
}

const perSecond = (m: Measurement) => ('perSecond' in m ? m.perSecond : undefined);
const cpuPer10k = (m: Measurement) => ('cpuSeconds' in m ? ((m as DrainResult).cpuSeconds / (m as DrainResult).jobs) * 10_000 : undefined);
const firstJobMs = (m: Measurement) => ('firstJobMs' in m ? m.firstJobMs : undefined);
const p50 = (m: Measurement) => ('p50' in m ? m.p50 : undefined);
const p99 = (m: Measurement) => ('p99' in m ? m.p99 : undefined);

const n = (value: number) => value.toLocaleString('en-US');

interface Reading {
  metric: string;
  scenario: string;
  read: (m: Measurement) => number | undefined;
  better: Better;
}

function readings(scenarios: readonly Scenario[]): Reading[] {
  const rows: Reading[] = [];
  const drains = scenarios.filter((s): s is Extract<Scenario, { kind: 'drain' }> => s.kind === 'drain');
  for (const s of drains) rows.push({ metric: `drain ${n(s.count)} @ ${s.workers}, jobs/s`, scenario: s.key, read: perSecond, better: 'higher' });
  for (const s of drains) rows.push({ metric: `CPU s / 10k jobs, ${n(s.count)} @ ${s.workers}`, scenario: s.key, read: cpuPer10k, better: 'lower' });
  for (const s of scenarios) {
    if (s.kind === 'first-job') rows.push({ metric: 'first job done after start, ms', scenario: s.key, read: firstJobMs, better: 'lower' });
    if (s.kind === 'latency') {
      rows.push({ metric: 'add -> start p50, ms', scenario: s.key, read: p50, better: 'lower' });
      rows.push({ metric: 'add -> start p99, ms', scenario: s.key, read: p99, better: 'lower' });
    }
    if (s.kind === 'adds') rows.push({ metric: 'sequential adds/s', scenario: s.key, read: perSecond, better: 'higher' });
  }
  return rows;
}

/** Right-aligns numbers and left-aligns text, cell by cell; a rule under the header. */
function layout(rows: readonly (readonly string[])[]): string {
  const widths = (rows[0] ?? []).map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  const numeric = (cell: string) => /^[\d.,]+( \([\d.,]+\))?x?$/.test(cell);
  const line = (row: readonly string[]) =>
    row
      .map((cell, column) => (column > 0 && numeric(cell) ? cell.padStart(widths[column] ?? 0) : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  const [header, ...body] = rows;
  return [line(header ?? []), widths.map((width) => '-'.repeat(width)).join('  '), ...body.map(line)].join('\n');
}

const cell = (value: Stat | undefined) =>
  value === undefined ? '-' : value.rounds === 1 ? formatNumber(value.median) : `${formatNumber(value.median)} (${formatNumber(value.best)})`;

/** The measurements: a column per system, `median (best round)` in each cell. */
export function formatValues(keys: readonly SystemKey[], durability: ReadonlyMap<SystemKey, string>, samples: Samples, scenarios: readonly Scenario[]): string {
  const table: string[][] = [
    ['metric', ...keys.map((key) => SYSTEM_LABELS[key])],
    ['durability', ...keys.map((key) => durability.get(key) ?? '-')],
  ];
  for (const row of readings(scenarios)) {
    const cells = keys.map((key) => cell(stat(samples, row.scenario, key, row.read, row.better)));
    if (cells.every((c) => c === '-')) continue;
    table.push([row.metric, ...cells]);
  }
  return layout(table);
}

/** The best of `keys` in a reading (by median), and its stat. */
function bestOf(samples: Samples, keys: readonly SystemKey[], reading: Omit<Reading, 'metric'>): { key: SystemKey; stat: Stat } | undefined {
  let found: { key: SystemKey; stat: Stat } | undefined;
  for (const key of keys) {
    const s = stat(samples, reading.scenario, key, reading.read, reading.better);
    if (s === undefined) continue;
    const wins = found === undefined || (reading.better === 'higher' ? s.median > found.stat.median : s.median < found.stat.median);
    if (wins) found = { key, stat: s };
  }
  return found;
}

/**
 * The targets, checked on the medians of this run: app.process
 * (handlers on the main thread) at least 1.5x the best peer at 20,000 jobs
 * and 2x at 100,000; in threads at least level with the best peer at 8 and
 * 50 handlers and 2x BullMQ's sandboxed processors; the first job done
 * within 30 ms of process() resolving; add -> start p50 <= 1 ms and
 * p99 <= 5 ms in both modes. Beside them, for context, LocalQueue over the
 * best peer and app.process over LocalQueue (no target).
 */
export function formatTargets(keys: readonly SystemKey[], samples: Samples, scenarios: readonly Scenario[]): string {
  const peers = keys.filter((key) => !isJobtreeKey(key));
  const table: string[][] = [['check', 'median', 'best rounds', 'target', 'result']];
  const ratio = (check: string, subject: SystemKey, against: readonly SystemKey[], scenario: string, atLeast: number | undefined) => {
    const reading = { scenario, read: perSecond, better: 'higher' as const };
    const mine = stat(samples, scenario, subject, perSecond, 'higher');
    const other = bestOf(samples, against, reading);
    if (mine === undefined || other === undefined) return;
    const best = Math.max(...against.map((key) => stat(samples, scenario, key, perSecond, 'higher')?.best ?? 0));
    const value = mine.median / other.stat.median;
    const label = against.length === 1 ? SYSTEM_LABELS[other.key] : `best peer (${SYSTEM_LABELS[other.key]})`;
    table.push([
      `${check}: ${SYSTEM_LABELS[subject]} / ${label}`,
      `${formatNumber(value)}x`,
      `${formatNumber(mine.best / best)}x`,
      atLeast === undefined ? '-' : `>= ${atLeast}x`,
      atLeast === undefined ? '-' : value >= atLeast ? 'met' : 'MISSED',
    ]);
  };
  const bound = (check: string, subject: SystemKey, scenario: string, read: (m: Measurement) => number | undefined, atMost: number) => {
    const mine = stat(samples, scenario, subject, read, 'lower');
    if (mine === undefined) return;
    table.push([`${check}: ${SYSTEM_LABELS[subject]}`, `${formatNumber(mine.median)} ms`, `${formatNumber(mine.best)} ms`, `<= ${atMost} ms`, mine.median <= atMost ? 'met' : 'MISSED']);
  };
  for (const s of scenarios) {
    if (s.kind !== 'drain') continue;
    ratio(`drain ${n(s.count)} @ ${s.workers}`, 'app.process', peers, s.key, s.large ? 2 : 1.5);
  }
  for (const s of scenarios) {
    if (s.kind !== 'drain') continue;
    ratio(`drain ${n(s.count)} @ ${s.workers}`, 'app.process-threads', peers, s.key, s.workers >= 8 && !s.large ? 1 : undefined);
  }
  for (const s of scenarios) {
    if (s.kind !== 'drain') continue;
    ratio(`drain ${n(s.count)} @ ${s.workers}`, 'app.process-threads', ['bullmq-sandboxed'], s.key, 2);
  }
  for (const s of scenarios) {
    if (s.kind === 'first-job') {
      bound('first job after process() resolved', 'app.process', s.key, firstJobMs, 30);
      bound('first job after process() resolved', 'app.process-threads', s.key, firstJobMs, 30);
    }
    if (s.kind === 'latency') {
      for (const key of ['app.process', 'app.process-threads'] as const) {
        bound('add -> start p50', key, s.key, p50, 1);
        bound('add -> start p99', key, s.key, p99, 5);
      }
    }
  }
  for (const s of scenarios) {
    if (s.kind !== 'drain') continue;
    ratio(`drain ${n(s.count)} @ ${s.workers}`, 'local-queue', peers, s.key, undefined);
  }
  for (const s of scenarios) {
    if (s.kind !== 'drain') continue;
    ratio(`drain ${n(s.count)} @ ${s.workers}`, 'app.process', ['local-queue'], s.key, undefined);
  }
  return table.length === 1 ? '(no target could be checked: a system it compares did not run)' : layout(table);
}
