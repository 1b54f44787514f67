// How many jobs a local queue in `slots` mode holds beyond its owner's free
// slots: as many as free up, at the rate the owner's runs have been ending,
// during two take round trips, so that the next take commits before the
// spare jobs run out. Runs that last long, or continuous jobs (which free
// their slots only when the owner rotates them out), get none: their slots'
// worth of jobs stays in the store's queue, visible to other nodes.

/** Take round trips the spare jobs cover. */
const TAKES_COVERED = 2;
/** The most spare jobs, whatever the rate (one acceptMany's most). */
const MAX_SPARE = 1_000;
/** How often the rate at which runs end is measured. */
const RATE_WINDOW_MS = 50;

export class SpareJobs {
  /** Runs that ended since `#windowStart`, and the rate measured so far (runs per ms). */
  #ends = 0;
  #windowStart = performance.now();
  #rate = 0;

  /** One of the owner's runs ended by itself (finished or crashed), freeing its slot. */
  ended(): void {
    this.#ends++;
  }

  /** Spare jobs to hold when a take's round trip is `takeMs`. */
  count(takeMs: number): number {
    const now = performance.now();
    const span = now - this.#windowStart;
    if (span >= RATE_WINDOW_MS) {
      // Averaged with the last window; a quiet window halves it.
      this.#rate = (this.#rate + this.#ends / span) / 2;
      this.#ends = 0;
      this.#windowStart = now;
    }
    return Math.min(MAX_SPARE, Math.floor(this.#rate * takeMs * TAKES_COVERED));
  }
}
