// Measures a closed-loop workload: `concurrency` loops each run `operation`
// back to back, so exactly that many operations are in flight at every
// moment. A warm-up runs first and is not counted (JIT, caches, lmdb's map).
// Generic over what an operation is; every bench/*.ts may use it.

export interface ThroughputOptions {
  /** Operations in flight at once. */
  concurrency: number;
  /** Counted duration. */
  seconds: number;
  /** Uncounted run before it. @default seconds / 4 */
  warmupSeconds?: number;
}

export interface Throughput {
  /** Completed operations in the counted window. */
  operations: number;
  /** Operations per second. */
  perSecond: number;
  elapsedSeconds: number;
}

/**
 * Runs `operation(loop, n)` in `concurrency` loops for the warm-up and then
 * the counted window; `loop` is the loop's index, `n` a counter that keeps
 * growing across calls (use it to vary keys). Resolves once every loop has
 * finished its last operation, so nothing is left running.
 */
export async function measureThroughput(
  options: ThroughputOptions,
  operation: (loop: number, n: number) => Promise<unknown>,
): Promise<Throughput> {
  const { concurrency, seconds } = options;
  const begin = performance.now();
  const countFrom = begin + (options.warmupSeconds ?? seconds / 4) * 1000;
  const countUntil = countFrom + seconds * 1000;
  let n = 0;
  let counted = 0;
  // The clock, not a timer, ends the run: an operation that settles in
  // microtasks alone would starve a timer forever.
  const loops = Array.from({ length: concurrency }, async (_, loop) => {
    for (let i = 1; ; i++) {
      await operation(loop, n++);
      const now = performance.now();
      if (now >= countUntil) return;
      if (now >= countFrom) counted++;
      // Let timers and I/O callbacks run now and then, as real callers would.
      if (i % 256 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  });
  await Promise.all(loops);
  const elapsedSeconds = (countUntil - countFrom) / 1000;
  return { operations: counted, perSecond: counted / elapsedSeconds, elapsedSeconds };
}

/** Runs a synchronous `operation` in a tight loop for `seconds`, checking the clock every `batch` calls. */
export function measureSyncThroughput(seconds: number, operation: (n: number) => void, batch = 1000): Throughput {
  const warmupEnd = performance.now() + (seconds * 1000) / 4;
  let n = 0;
  while (performance.now() < warmupEnd) for (let i = 0; i < batch; i++) operation(n++);
  const start = performance.now();
  const end = start + seconds * 1000;
  let operations = 0;
  while (performance.now() < end) {
    for (let i = 0; i < batch; i++) operation(n++);
    operations += batch;
  }
  const elapsedSeconds = (performance.now() - start) / 1000;
  return { operations, perSecond: operations / elapsedSeconds, elapsedSeconds };
}

/**
 * Runs each measurement `rounds` times, alternating between them, and keeps
 * each one's best round. On a machine shared with other work, interference
 * only ever slows a round down, so the best round is the steadiest estimate,
 * and alternating gives the baseline and the subject the same conditions.
 */
export async function bestOfInterleaved<K extends string>(
  rounds: number,
  measurements: Record<K, () => Promise<Throughput> | Throughput>,
): Promise<Record<K, Throughput>> {
  const best = {} as Record<K, Throughput>;
  for (let round = 0; round < rounds; round++) {
    for (const name of Object.keys(measurements) as K[]) {
      const result = await measurements[name]();
      const current = best[name];
      if (current === undefined || result.perSecond > current.perSecond) best[name] = result;
    }
  }
  return best;
}
