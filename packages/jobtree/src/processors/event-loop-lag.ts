// How long the main thread's event loop was held up: one perf_hooks delay
// monitor per thread, shared by every runner that watches, read and reset at
// a fixed period. Handlers that run on the main thread share its loop with
// the application and the scheduler; one that computes for long holds up
// everything else, and this is how it shows.

import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

/** The monitor's sampling period (ms): finer than any threshold worth reporting, coarse enough to cost nothing. */
const RESOLUTION_MS = 20;
/** How often the longest delay is read and handed to the watchers (ms). */
export const LAG_CHECK_MS = 100;

type Watcher = (maxLagMs: number) => void;

const watchers = new Set<Watcher>();
let monitor: { histogram: IntervalHistogram; timer: NodeJS.Timeout } | undefined;

/**
 * Calls `watcher` every LAG_CHECK_MS with the longest delay (ms) the event
 * loop had since the previous call; returns the function that stops it. The
 * monitor runs while anyone watches.
 */
export function watchEventLoopLag(watcher: Watcher): () => void {
  watchers.add(watcher);
  if (monitor === undefined) {
    const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    histogram.enable();
    let lastCheck = performance.now();
    const timer = setInterval(() => {
      // The histogram may record a long delay only after this read (its
      // timer and this one fire in the same turn, in either order): this
      // timer's own lateness tells the same delay at once.
      const now = performance.now();
      const late = now - lastCheck - LAG_CHECK_MS;
      lastCheck = now;
      const maxLagMs = Math.max(histogram.max / 1e6, late);
      histogram.reset();
      for (const each of watchers) each(maxLagMs);
    }, LAG_CHECK_MS);
    // Watching never keeps a process alive.
    timer.unref();
    monitor = { histogram, timer };
  }
  return () => {
    if (!watchers.delete(watcher) || watchers.size > 0 || monitor === undefined) return;
    clearInterval(monitor.timer);
    monitor.histogram.disable();
    monitor = undefined;
  };
}
