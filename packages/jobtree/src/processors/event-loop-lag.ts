// How long the main thread's event loop was held up: a perf_hooks delay
// monitor, read and reset at a fixed period. Handlers that run on the main
// thread share its loop with the application and the scheduler; one that
// computes for long holds up everything else, and this is how it shows.

import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

/** The monitor's sampling period (ms): finer than any threshold worth reporting. */
const RESOLUTION_MS = 10;

export class EventLoopLag {
  readonly #histogram: IntervalHistogram;
  readonly #timer: NodeJS.Timeout;

  /** Calls `checked` every `everyMs` with the longest delay (ms) the loop had since the previous call. */
  constructor(everyMs: number, checked: (maxLagMs: number) => void) {
    this.#histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.#histogram.enable();
    this.#timer = setInterval(() => {
      const maxLagMs = this.#histogram.max / 1e6;
      this.#histogram.reset();
      checked(maxLagMs);
    }, everyMs);
    // Watching never keeps a process alive.
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#histogram.disable();
  }
}
