// The machine's own wake-up after idling, measured in the same run as an
// idle-worker latency benchmark, so that its p99 can be read against what
// the machine does to any code that runs after a pause.
//
// Two probes, alternating, each after the same idle gap as the latency
// samples: a fixed amount of CPU work (calibrated busy to take about
// SLICE_MS, about what one add -> start costs the main thread) and a
// round trip to an idle worker thread (the thread hops an add -> start makes:
// to lmdb's writer thread and back, to a handler thread). Neither touches the
// job system. On the 2-core VMs these benchmarks run on, a slice after a
// 10 ms pause took p50 0.38 ms and p99 4.1 ms (and 0.42 ms at p99 with no
// pause): in a few percent of wake-ups the vCPU runs an order of magnitude
// slower for several milliseconds, which sets the p99 of every idle-worker
// latency, a peer's too.

import { Worker } from 'node:worker_threads';

/** The CPU slice's target duration when the machine is busy (warm, not idling). */
const SLICE_MS = 0.3;
const CALIBRATION_RUNS = 30;

export interface Percentiles {
  p50: number;
  p99: number;
}

export interface IdleWake {
  /** The slice run with no pause before it (its nominal cost), ms. */
  busySlice: Percentiles;
  /** The same slice after each idle gap, ms. */
  slice: Percentiles;
  /** A message to an idle worker thread and its answer, after each idle gap, ms. */
  ping: Percentiles;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function percentiles(samples: readonly number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
  return { p50: at(0.5), p99: at(0.99) };
}

/** Kept in a module field so the loop's result is used and the work cannot be optimized away. */
let sink = 0;

function work(iterations: number): void {
  let x = sink;
  for (let k = 0; k < iterations; k++) x = (x + (k ^ (x >>> 3))) | 0;
  sink = x;
}

function timed(iterations: number): number {
  const start = performance.now();
  work(iterations);
  return performance.now() - start;
}

/** Iterations of `work` that take about SLICE_MS back to back (the median of a few runs). */
function calibrate(): number {
  let iterations = 10_000;
  for (let i = 0; i < 5; i++) timed(iterations); // compiled before it is timed
  for (let round = 0; round < 4; round++) {
    const runs = Array.from({ length: CALIBRATION_RUNS }, () => timed(iterations));
    const median = percentiles(runs).p50;
    iterations = Math.max(1_000, Math.round((iterations * SLICE_MS) / Math.max(median, 1e-3)));
  }
  return iterations;
}

/** Measures `samples` of each probe, `gapMs` of idling before each. */
export async function measureIdleWake(samples: number, gapMs: number): Promise<IdleWake> {
  const iterations = calibrate();
  const busy = Array.from({ length: samples }, () => timed(iterations));
  const echo = new Worker("require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m));", {
    eval: true,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      echo.once('online', resolve);
      echo.once('error', reject);
    });
    const ping = (): Promise<number> =>
      new Promise((resolve) => {
        const start = performance.now();
        echo.once('message', () => resolve(performance.now() - start));
        echo.postMessage(0);
      });
    for (let i = 0; i < 20; i++) await ping(); // the echo's handler compiled
    const slices: number[] = [];
    const pings: number[] = [];
    for (let i = 0; i < samples; i++) {
      await sleep(gapMs);
      slices.push(timed(iterations));
      await sleep(gapMs);
      pings.push(await ping());
    }
    return { busySlice: percentiles(busy), slice: percentiles(slices), ping: percentiles(pings) };
  } finally {
    await echo.terminate();
  }
}

/** The median of each figure over several measurements. */
export function medianWake(wakes: readonly IdleWake[]): IdleWake {
  const median = (values: number[]) => percentiles(values).p50;
  const of = (pick: (wake: IdleWake) => Percentiles): Percentiles => ({
    p50: median(wakes.map((wake) => pick(wake).p50)),
    p99: median(wakes.map((wake) => pick(wake).p99)),
  });
  return { busySlice: of((w) => w.busySlice), slice: of((w) => w.slice), ping: of((w) => w.ping) };
}

/** Rows of [probe, p50, p99] for a table, in ms. */
export function idleWakeRows(wake: IdleWake, gapMs: number): [string, number, number][] {
  return [
    ['a fixed CPU slice, back to back', wake.busySlice.p50, wake.busySlice.p99],
    [`the same slice after ${gapMs} ms idle`, wake.slice.p50, wake.slice.p99],
    [`a worker-thread round trip after ${gapMs} ms idle`, wake.ping.p50, wake.ping.p99],
  ];
}
