// What each compared system (jobtree's LocalQueue and app.process in both
// modes, BullMQ's Worker and sandboxed processors, graphile-worker and its
// batched setup) offers the peer benchmark: the scenarios it can run. A
// system leaves out a scenario it has no way to run, and its cell stays
// empty.

export interface DrainResult {
  jobs: number;
  /** From the first handler start until the last job's completion was confirmed. */
  seconds: number;
  perSecond: number;
  /** CPU seconds of adding and draining the jobs: this process plus the system's server, if any. */
  cpuSeconds: number;
}

export interface LatencyResult {
  /** Milliseconds from calling add to the handler starting. */
  p50: number;
  p99: number;
}

export interface RateResult {
  perSecond: number;
}

export interface FirstJobResult {
  /** Milliseconds from the workers being started (see each system's `firstJob`) to the first job's completion. */
  firstJobMs: number;
}

export interface BenchSystem {
  /** Column header. */
  readonly label: string;
  /** What `--only` matches, and what a system process is told to run. */
  readonly key: string;
  /** How durable an acknowledged add or completion is, in a few words. */
  readonly durability: string;
  /** Adds `count` no-op jobs, then drains them with `workers` handlers running at once. */
  drain?(count: number, workers: number): Promise<DrainResult>;
  /** One add at a time, each awaited: adds per second. */
  sequentialAdds?(count: number): Promise<RateResult>;
  /** add -> handler start with one idle worker, `gapMs` between adds. */
  latency?(samples: number, gapMs: number): Promise<LatencyResult>;
  /** One job waits; the workers start; the time from their start to that job's completion. */
  firstJob?(): Promise<FirstJobResult>;
  close(): Promise<void>;
}

/**
 * Adds made before a latency run's measured ones and left out of its
 * percentiles: the first adds in a process run code V8 has not compiled yet
 * (10-16 ms for the first, 3-6 ms for the next few, measured for jobtree),
 * which a running service compiled long before. Every system gets them.
 */
export const LATENCY_WARM_UP_SAMPLES = 20;

/** The id of add number `i` of a latency run, warm-up adds first. */
export function latencySampleId(i: number): string {
  return i < LATENCY_WARM_UP_SAMPLES ? `w${i}` : `l${i - LATENCY_WARM_UP_SAMPLES}`;
}

/** Whether a latency run's add of this id is measured (not a warm-up add). */
export function isMeasuredSample(id: string): boolean {
  return id.startsWith('l');
}

export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}

export function latencyOf(samples: number[]): LatencyResult {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
