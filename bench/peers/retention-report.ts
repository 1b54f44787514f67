// The table of `--retention`: per jobtree variant and drain, its rate with
// retention on and off (each the median over the rounds, the best round
// beside it), the ratio of the medians on / off with the best rounds'
// ratio and each round's own ratio (on and off ran one after the other in
// the same round) beside it, and whether the median ratio keeps the
// target: with retention on and its default settings, the drain stays
// within 5% of its rate without retention. Then the pairs pooled, per
// variant over its drains and over every variant, with the interval that
// says whether so many pairs settle the target (paired-ratios.ts): one
// cell's few rounds cannot on a noisy machine.

import { type Cell, formatNumber, formatTable } from '../table.js';
import type { DrainResult } from './bench-system.js';
import { pairedRatios, verdictAtLeast } from './paired-ratios.js';
import { median, type Samples } from './report.js';
import type { Measurement, Scenario } from './scenarios.js';
import { SYSTEM_LABELS, type SystemKey } from './systems/catalog.js';
import type { RetentionSetting } from './systems/retention-setting.js';

/** The least share of its rate without retention a drain keeps with it on. */
export const RETENTION_DRAIN_TARGET = 0.95;

const rates = (samples: Samples, scenario: string, key: SystemKey): number[] =>
  (samples.get(scenario)?.get(key) ?? []).map((m: Measurement) => ('perSecond' in m ? m.perSecond : Number.NaN));
const cpuPer10k = (samples: Samples, scenario: string, key: SystemKey): number[] =>
  (samples.get(scenario)?.get(key) ?? []).map((m: Measurement) => ('cpuSeconds' in m ? ((m as DrainResult).cpuSeconds / (m as DrainResult).jobs) * 10_000 : Number.NaN));

const n = (value: number) => value.toLocaleString('en-US');

export function formatRetentionComparison(keys: readonly SystemKey[], bySetting: ReadonlyMap<RetentionSetting, Samples>, scenarios: readonly Scenario[]): string {
  const on = bySetting.get('on') ?? new Map();
  const off = bySetting.get('off') ?? new Map();
  const rows: Cell[][] = [];
  const pooled = new Map<SystemKey, number[]>();
  for (const s of scenarios) {
    if (s.kind !== 'drain') continue;
    for (const key of keys) {
      const withIt = rates(on, s.key, key);
      const without = rates(off, s.key, key);
      if (withIt.length === 0 || without.length === 0) continue;
      const ratio = median(withIt) / median(without);
      // Round i of one setting ran right before or after round i of the other.
      const pairs = withIt.slice(0, without.length).map((rate, round) => rate / (without[round] as number));
      pooled.set(key, [...(pooled.get(key) ?? []), ...pairs]);
      const cpuRatio = median(cpuPer10k(on, s.key, key)) / median(cpuPer10k(off, s.key, key));
      rows.push([
        `drain ${n(s.count)} @ ${s.workers}`,
        SYSTEM_LABELS[key],
        `${formatNumber(median(withIt))} (${formatNumber(Math.max(...withIt))})`,
        `${formatNumber(median(without))} (${formatNumber(Math.max(...without))})`,
        ratio.toFixed(3),
        (Math.max(...withIt) / Math.max(...without)).toFixed(3),
        `${median(pairs).toFixed(3)} (${Math.min(...pairs).toFixed(3)}-${Math.max(...pairs).toFixed(3)})`,
        cpuRatio.toFixed(3),
        ratio >= RETENTION_DRAIN_TARGET ? 'met' : 'MISSED',
      ]);
    }
  }
  if (rows.length === 0) return '(no drain ran with retention both on and off)';
  const cells = formatTable(
    [
      'drain',
      'variant',
      'on, jobs/s (best)',
      'off, jobs/s (best)',
      'on / off, medians',
      'best rounds',
      'per round: median (min-max)',
      'CPU on / off',
      `>= ${RETENTION_DRAIN_TARGET}`,
    ],
    rows,
  );
  return `${cells}\n\nevery round's on / off pooled: geometric mean and its 95% interval; met when the whole interval is >= ${RETENTION_DRAIN_TARGET}\n\n${formatPooled(pooled)}`;
}

function formatPooled(pooled: ReadonlyMap<SystemKey, readonly number[]>): string {
  const rows: Cell[][] = [];
  const row = (label: string, ratios: readonly number[]) => {
    const stat = pairedRatios(ratios);
    rows.push([label, String(stat.pairs), stat.mean.toFixed(3), `${stat.low.toFixed(3)}-${stat.high.toFixed(3)}`, verdictAtLeast(stat, RETENTION_DRAIN_TARGET)]);
  };
  for (const [key, ratios] of pooled) row(`${SYSTEM_LABELS[key]}, every drain`, ratios);
  if (pooled.size > 1) row('every variant and drain', [...pooled.values()].flat());
  return formatTable(['pooled over', 'pairs', 'on / off', '95% interval', `>= ${RETENTION_DRAIN_TARGET}`], rows);
}
