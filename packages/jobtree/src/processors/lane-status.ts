// A lane's shared status words. The lane's thread bumps TICK from a timer
// (so a thread stuck in synchronous code stops ticking) and keeps CURRENT set
// to the serial of the job whose code it is executing, -1 between jobs: when
// a thread is stuck or exits, CURRENT names the job that did it, and the
// other jobs on the thread are bystanders. STARTS counts the runs queued in
// the lane (see lane-queue.ts) that it started, and the ring after it holds
// their serials: a thread that dies before it reports a start still tells
// which of its queued runs did start.

export const TICK = 0;
export const CURRENT = 1;
export const STARTS = 2;
export const NO_JOB = -1;
/** The most runs queued in one lane: the ring keeps as many starts the main thread has not heard of. */
export const MAX_QUEUED_PER_LANE = 64;
/** The first word of the ring of started serials (the start numbered n is at STARTED_RING + n % MAX_QUEUED_PER_LANE). */
export const STARTED_RING = 3;
const WORDS = STARTED_RING + MAX_QUEUED_PER_LANE;

/** How often a lane ticks. */
export const TICK_MS = 50;

export function createLaneStatus(): { buffer: SharedArrayBuffer; view: Int32Array } {
  const buffer = new SharedArrayBuffer(WORDS * Int32Array.BYTES_PER_ELEMENT);
  const view = new Int32Array(buffer);
  Atomics.store(view, CURRENT, NO_JOB);
  return { buffer, view };
}
