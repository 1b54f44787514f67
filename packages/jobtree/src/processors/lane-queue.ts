// The runs a lane holds beyond those it runs: the main thread sends a lane,
// with the runs of a processor's slots, a few more of the same processor
// (its `ahead` runs), and the lane starts one of them as each run of that
// processor on it ends, at once, instead of waiting for the main thread to
// hear of the end and send the next job: a lane's slots stay busy between
// messages, and results and starts go back together. The processor's slots
// still bound how many of its handlers run: a queued run only ever takes the
// place of one that ended. A queued run the main thread aborts (its job
// cancelled, the processor stopping) is dropped unstarted, and so are the
// runs queued for a processor with no run left on the lane to make room for
// them; both are reported `returned`. Each start is also written to the
// lane's status ring (lane-status.ts), so that the main thread knows which
// queued runs started even when the thread dies before it says so.

import { type HandlerJobOf, type PackedRuns, unpackRuns } from './lane-protocol.js';
import { MAX_QUEUED_PER_LANE, STARTED_RING, STARTS } from './lane-status.js';

export interface QueuedRun {
  readonly serial: number;
  readonly job: HandlerJobOf;
}

const RING_MASK = MAX_QUEUED_PER_LANE - 1;

export class LaneQueue {
  readonly #status: Int32Array;
  /** Each processor's queued runs (by its share number), first come first started. */
  readonly #byShare = new Map<number, QueuedRun[]>();
  /** The share each queued run belongs to. */
  readonly #shareOf = new Map<number, number>();
  #starts = 0;
  /** Queued runs started since the last report to the main thread. */
  started: number[] = [];
  /** Queued runs dropped unstarted since the last report. */
  returned: number[] = [];

  constructor(status: Int32Array) {
    this.#status = status;
  }

  /** Whether there is a start or a return to report. */
  get changed(): boolean {
    return this.started.length > 0 || this.returned.length > 0;
  }

  /** Queues runs of a processor's jobs of `type`. */
  push(share: number, type: string, runs: PackedRuns): void {
    let queue = this.#byShare.get(share);
    if (queue === undefined) {
      queue = [];
      this.#byShare.set(share, queue);
    }
    const into = queue;
    unpackRuns(runs, type, (serial, job) => {
      into.push({ serial, job });
      this.#shareOf.set(serial, share);
    });
  }

  /** Drops a processor's queued runs unstarted (they come back as `returned`); false when none was queued. */
  returnAll(share: number): boolean {
    const queue = this.#byShare.get(share);
    if (queue === undefined || queue.length === 0) return false;
    for (const run of queue) {
      this.#shareOf.delete(run.serial);
      this.returned.push(run.serial);
    }
    queue.length = 0;
    return true;
  }

  /** The next queued run of a processor, counted started; undefined when none is queued. */
  take(share: number): QueuedRun | undefined {
    const queue = this.#byShare.get(share);
    const run = queue?.shift();
    if (run === undefined) return undefined;
    this.#shareOf.delete(run.serial);
    const status = this.#status;
    Atomics.store(status, STARTED_RING + (this.#starts & RING_MASK), run.serial);
    this.#starts = (this.#starts + 1) | 0;
    Atomics.store(status, STARTS, this.#starts);
    this.started.push(run.serial);
    return run;
  }

  /** Drops a queued run unstarted; false when it is not queued here (it started, or never came). */
  drop(serial: number): boolean {
    const share = this.#shareOf.get(serial);
    if (share === undefined) return false;
    this.#shareOf.delete(serial);
    const queue = this.#byShare.get(share) as QueuedRun[];
    queue.splice(
      queue.findIndex((run) => run.serial === serial),
      1,
    );
    this.returned.push(serial);
    return true;
  }
}

/** The serials of the queued runs a lane started that the main thread has not heard of, read from its status words. */
export function unreportedStarts(status: Int32Array, reported: number): number[] {
  const starts = Atomics.load(status, STARTS);
  const serials: number[] = [];
  for (let n = reported; n !== starts && serials.length < MAX_QUEUED_PER_LANE; n = (n + 1) | 0) serials.push(Atomics.load(status, STARTED_RING + (n & RING_MASK)));
  return serials;
}

/**
 * How many runs of a processor one lane may hold queued: as many as it runs
 * through in `batchMs` at `runMs` each (the measured lane time per run), at
 * most MAX_QUEUED_PER_LANE; none while that time is unknown (no lane has
 * run dry of the processor yet, or its runs never end by themselves).
 */
export function aheadPerLane(runMs: number, batchMs: number): number {
  if (!Number.isFinite(runMs)) return 0;
  return Math.min(MAX_QUEUED_PER_LANE, Math.floor(batchMs / Math.max(runMs, 1e-3)));
}
