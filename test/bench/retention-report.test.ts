import test from 'ava';
import type { DrainResult } from '../../bench/peers/bench-system.js';
import type { Samples } from '../../bench/peers/report.js';
import { formatRetentionComparison } from '../../bench/peers/retention-report.js';
import type { Scenario } from '../../bench/peers/scenarios.js';
import type { SystemKey } from '../../bench/peers/systems/catalog.js';
import type { RetentionSetting } from '../../bench/peers/systems/retention-setting.js';

const drains: Scenario[] = [
  { kind: 'drain', key: 'drain 20000 1', count: 20_000, workers: 1, large: false },
  { kind: 'drain', key: 'drain 20000 8', count: 20_000, workers: 8, large: false },
];
const drain = (perSecond: number): DrainResult => ({ jobs: 20_000, seconds: 20_000 / perSecond, perSecond, cpuSeconds: 1 });

/** Rounds of one variant: on and off rates per round, the same for both drains. */
function samples(key: SystemKey, on: readonly number[], off: readonly number[]): Map<RetentionSetting, Samples> {
  const of = (rates: readonly number[]): Samples => new Map(drains.map((s) => [s.key, new Map([[key, rates.map(drain)]])]));
  return new Map([
    ['on', of(on)],
    ['off', of(off)],
  ]);
}

/** The pooled table's row for a label, split into its cells. */
function pooledRow(report: string, label: string): string[] {
  const pooled = report.slice(report.indexOf('pooled over'));
  const line = pooled.split('\n').find((l) => l.startsWith(label));
  if (line === undefined) throw new Error(`no pooled row ${label} in:\n${report}`);
  return line.slice(label.length).trim().split(/\s+/);
}

test('the pairs of every drain of a variant are pooled, and many pairs within the target settle it', (t) => {
  const off = Array.from({ length: 30 }, (_, i) => 10_000 + (i % 3) * 1_000);
  const on = off.map((rate, i) => rate * (i % 2 === 0 ? 0.9 : 1 / 0.9));
  const report = formatRetentionComparison(['app.process'], samples('app.process', on, off), drains);
  const [pairs, mean, , verdict] = pooledRow(report, 'app.process, every drain');
  t.is(pairs, '60');
  t.is(mean, '1.000');
  t.is(verdict, 'met');
});

test('a few noisy pairs leave the target unsettled, and a clear loss misses it', (t) => {
  const few = formatRetentionComparison(['local-queue'], samples('local-queue', [8_000, 12_000], [10_000, 10_000]), drains);
  t.is(pooledRow(few, 'LocalQueue, every drain').at(-1), 'unsettled');
  const off = Array.from({ length: 10 }, () => 10_000);
  const slower = formatRetentionComparison(['local-queue'], samples('local-queue', off.map((rate, i) => rate * (0.8 + (i % 2) * 0.02)), off), drains);
  t.is(pooledRow(slower, 'LocalQueue, every drain').at(-1), 'MISSED');
});
