// What the peer benchmark measures, as data both its own process and a
// system process read: the drains (C jobs added first, then W handlers
// drain them), one add at a time, the first job after the workers start,
// and add -> handler start with an idle worker. `--jobs` scales the counts.

import type { BenchSystem, DrainResult, FirstJobResult, LatencyResult, RateResult } from './bench-system.js';

export type Measurement = DrainResult | RateResult | LatencyResult | FirstJobResult;

export type Scenario =
  | { kind: 'drain'; key: string; count: number; workers: number; large: boolean }
  | { kind: 'adds'; key: string; count: number }
  | { kind: 'first-job'; key: string }
  | { kind: 'latency'; key: string; samples: number; gapMs: number };

export const SCENARIO_KINDS = ['drain', 'adds', 'first-job', 'latency'] as const;

/** The drains: 20,000 jobs at 1, 8 and 50 handlers, and a backlog of 100,000 at 50. */
const DRAINS = [
  { count: 20_000, workers: 1, large: false },
  { count: 20_000, workers: 8, large: false },
  { count: 20_000, workers: 50, large: false },
  { count: 100_000, workers: 50, large: true },
];
/**
 * The warm-up drains' share of the drains' job counts: before its first
 * measured drain, a system process drains, unmeasured, a quarter of the
 * first drain at each handler count the drains use, so that a drain
 * measures a worker whose hot code V8 has compiled (a long-running worker,
 * as users run one), not V8 compiling it. In a new process V8's background
 * compiler threads take about as much CPU during a 20,000-job drain as the
 * drain itself, on a 2-core machine. A single warm-up of 5,000 jobs at
 * one handler is not enough for jobtree: they still took a quarter to a
 * third of the next drain's CPU, against next to none after the warm-ups
 * at 1, 8 and 50 handlers (15,000 jobs, each count's code paths run).
 */
const WARM_UP_SHARE = 0.25;
const SEQUENTIAL_ADDS = 2_000;
const LATENCY_SAMPLES = 300;
const LATENCY_GAP_MS = 10;

/** The scenarios with every count multiplied by `scale` (at least 100 jobs, 50 latency samples). */
export function scenarios(scale: number): Scenario[] {
  const scaled = (n: number, least: number) => Math.max(least, Math.round(n * scale));
  return [
    ...DRAINS.map(({ count, workers, large }): Scenario => {
      const jobs = scaled(count, 100);
      return { kind: 'drain', key: `drain ${jobs} ${workers}`, count: jobs, workers, large };
    }),
    { kind: 'first-job', key: 'first-job' },
    { kind: 'latency', key: 'latency', samples: scaled(LATENCY_SAMPLES, 50), gapMs: LATENCY_GAP_MS },
    { kind: 'adds', key: 'adds', count: scaled(SEQUENTIAL_ADDS, 100) },
  ];
}

const n = (value: number) => value.toLocaleString('en-US');

export function describe(scenario: Scenario): string {
  switch (scenario.kind) {
    case 'drain':
      return `drain ${n(scenario.count)} @ ${scenario.workers}`;
    case 'adds':
      return `${n(scenario.count)} sequential adds`;
    case 'first-job':
      return 'first job done after the workers start';
    case 'latency':
      return `add -> start latency, ${scenario.samples} samples ${scenario.gapMs} ms apart`;
  }
}

/** A run of `scenario` on `system`, to start later; `undefined` when the system has no way to run it. */
export function scenarioRun(system: BenchSystem, scenario: Scenario): (() => Promise<Measurement>) | undefined {
  switch (scenario.kind) {
    case 'drain': {
      const drain = system.drain?.bind(system);
      return drain && (() => drain(scenario.count, scenario.workers));
    }
    case 'adds': {
      const adds = system.sequentialAdds?.bind(system);
      return adds && (() => adds(scenario.count));
    }
    case 'first-job': {
      const first = system.firstJob?.bind(system);
      return first && (() => first());
    }
    case 'latency': {
      const latency = system.latency?.bind(system);
      return latency && (() => latency(scenario.samples, scenario.gapMs));
    }
  }
}

/**
 * The unmeasured warm-up drains run before the first drain of `scenarios`
 * (see `WARM_UP_SHARE`): for each handler count the drains use, in their
 * order, a quarter of the first drain's job count at that count; none when
 * no drain is among them or the system has none.
 */
export function warmUpRuns(system: BenchSystem, scenarios: readonly Scenario[]): { what: string; run: () => Promise<DrainResult> }[] {
  const drain = system.drain?.bind(system);
  if (drain === undefined) return [];
  const firstAt = new Map<number, number>();
  for (const scenario of scenarios) {
    if (scenario.kind === 'drain' && !firstAt.has(scenario.workers)) firstAt.set(scenario.workers, scenario.count);
  }
  return [...firstAt].map(([workers, first]) => {
    const count = Math.max(100, Math.round(first * WARM_UP_SHARE));
    return { what: `warm-up drain ${n(count)} @ ${workers}, not measured`, run: () => drain(count, workers) };
  });
}

export function summary(measurement: Measurement): string {
  if ('p50' in measurement) return `p50 ${measurement.p50.toFixed(2)} ms, p99 ${measurement.p99.toFixed(2)} ms`;
  if ('firstJobMs' in measurement) return `${measurement.firstJobMs.toFixed(1)} ms`;
  if ('seconds' in measurement) {
    const cpu = (measurement.cpuSeconds / measurement.jobs) * 10_000;
    return `${n(Math.round(measurement.perSecond))} jobs/s (${measurement.seconds.toFixed(1)} s, ${cpu.toFixed(2)} CPU s / 10k jobs)`;
  }
  return `${n(Math.round(measurement.perSecond))} /s`;
}
