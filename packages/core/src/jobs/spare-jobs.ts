// How many jobs a local queue in `slots` mode holds beyond its owner's free
// slots: as many as free up, at the rate the owner's runs end while it has
// jobs to run, during two take round trips, so that the next take commits
// before the spare jobs run out. Runs that last long, or continuous jobs
// (which free their slots only when the owner rotates them out), get none:
// their slots' worth of jobs stays in the store's queue, visible to other
// nodes; so does a trickle of jobs that the owner runs as they come.
//
// The rate leaves out the time the owner was starved: a slot free, nothing
// held for it, while the store may have more jobs (the last take was full,
// or none has answered yet).
// Counted in, a take that came late would lower the rate, hence the spare
// jobs, hence make the next take late too, and the owner would settle at
// the pace of its takes rather than of its runs (and a queue that starts
// with no spare jobs would take a few at a time for long). Time spent
// waiting on a store that had no more jobs counts: a trickle of jobs run as
// they come gets no spare jobs.
//
// The most is two whole takes (as many as the queue has in flight): with
// less, a take whose round trip is long (an accept sent from a client
// process to the process that owns a shared store, and its jobs sent back)
// leaves slots empty while it is on its way, whatever the rate.
//
// When this process runs the store's transactions itself, the most is one
// take. An in-process take's round trip is long only while the event loop
// is busy, and then mostly with the runs of the jobs already held: holding
// more lengthens the next round trip rather than covering it (the measured
// round trip, hence the spare jobs, climbed to two whole takes in a drain
// bound by the main thread), and every job held keeps its objects alive
// across garbage collections (in such a drain, ~850 bytes per job promoted
// to the old generation with two whole takes held, ~180 with half a take).
// Half a take is too few the other way: in a drain of 100,000 no-op jobs
// at 50 handlers, most takes came when the queue was already empty (the
// handlers had run all it held), and the main thread idled about a third
// of the time. In `bench:peers` runs that alternated the bounds (five with
// half a take and with one, three with two takes), that drain's median
// with one take was 12% above half a take's with handlers on the main
// thread and 18% above it with handlers in threads, for less CPU per job;
// two takes did no better than one.

import { MAX_ACCEPT_MANY } from './accept-batcher.js';

/** Take round trips the spare jobs cover. */
const TAKES_COVERED = 2;
/** The most spare jobs, whatever the rate: as many as the takes covered bring at most. */
const MAX_SPARE = MAX_ACCEPT_MANY * TAKES_COVERED;
/** The most spare jobs, whatever the rate, when this process runs the store's transactions (see the file's comment). */
export const MAX_SPARE_IN_PROCESS = MAX_ACCEPT_MANY;
/** How often the rate at which runs end is measured. */
const RATE_WINDOW_MS = 50;
/** A window in which the owner was starved all but this long, and no run ended, tells nothing of its first rate. */
const MIN_BUSY_MS = 0.1;
/**
 * Once there is a rate, the least time not starved over which a new one is
 * measured; a window with less goes on until it has that much (its rate
 * stays as it was meanwhile). An owner that holds no spare jobs is starved
 * from each end of a run until the next take, so a time not starved is the
 * wait from a take to the next end; a run that ends just after a take came,
 * as a long run may by chance,
 * would otherwise count over a sliver of time as a pace of thousands of runs
 * a second, and leave as many spare jobs hidden from other nodes until the
 * rate decays. Over a tenth of a window a lone run counts for 1 in 5 ms at
 * most, a few spare jobs; runs that do end quickly fill that time in a
 * window or a few, whatever the takes' delay.
 */
const MIN_RATE_BUSY_MS = RATE_WINDOW_MS / 10;
/**
 * Runs that end before the first window is over give the first rate at
 * once: a queue that starts with no spare jobs takes only for its free
 * slots, a few jobs a take, until it has one.
 */
const FIRST_RATE_RUNS = 4;

export class SpareJobs {
  readonly #now: () => number;
  /** Runs that ended while the owner was not starved, since `#windowStart`, and the rate measured so far (runs per ms). */
  #ends = 0;
  #windowStart: number;
  #rate = 0;
  /** Since when the owner is starved (undefined while it is not). */
  #starvedSince: number | undefined;
  /** Time the owner was starved in this window, before `#starvedSince`. */
  #starved = 0;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
    this.#windowStart = now();
    // Until its first jobs come, the owner's wait says nothing of the pace of its runs.
    this.#starvedSince = this.#windowStart;
  }

  /** One of the owner's runs ended by itself (finished or crashed), freeing its slot. */
  ended(): void {
    if (this.#starvedSince === undefined) this.#ends++;
  }

  /** Whether the owner is now starved: a slot of it is free, the queue holds nothing for it, and the store has more jobs. */
  starved(starved: boolean): void {
    if (starved === (this.#starvedSince !== undefined)) return;
    const now = this.#now();
    if (starved) {
      this.#starvedSince = now;
      return;
    }
    this.#starved += now - Math.max(this.#starvedSince as number, this.#windowStart);
    this.#starvedSince = undefined;
  }

  /**
   * Spare jobs to hold when a take's round trip is `takeMs`; `inProcess`:
   * this process runs the store's transactions (see the file's comment).
   */
  count(takeMs: number, inProcess = false): number {
    const now = this.#now();
    const span = now - this.#windowStart;
    if (span >= RATE_WINDOW_MS || (this.#rate === 0 && this.#ends >= FIRST_RATE_RUNS)) {
      const starved = this.#starved + (this.#starvedSince === undefined ? 0 : now - Math.max(this.#starvedSince, this.#windowStart));
      const busy = span - starved;
      if (this.#rate === 0) {
        if (busy >= MIN_BUSY_MS || this.#ends > 0) this.#rate = this.#ends / Math.max(busy, MIN_BUSY_MS);
        this.#nextWindow(now);
      } else if (busy >= MIN_RATE_BUSY_MS) {
        // Averaged with the last window; a quiet window halves it.
        this.#rate = (this.#rate + this.#ends / busy) / 2;
        this.#nextWindow(now);
      }
    }
    return Math.min(inProcess ? MAX_SPARE_IN_PROCESS : MAX_SPARE, Math.floor(this.#rate * takeMs * TAKES_COVERED));
  }

  #nextWindow(now: number): void {
    this.#ends = 0;
    this.#starved = 0;
    this.#windowStart = now;
  }
}
