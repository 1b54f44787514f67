// A lane's shared status words. The lane's thread bumps TICK from a timer
// (so a thread stuck in synchronous code stops ticking) and keeps CURRENT set
// to the serial of the job whose code it is executing, -1 between jobs: when
// a thread is stuck or exits, CURRENT names the job that did it, and the
// other jobs on the thread are bystanders.

export const TICK = 0;
export const CURRENT = 1;
export const NO_JOB = -1;
const WORDS = 2;

/** How often a lane ticks. */
export const TICK_MS = 50;

export function createLaneStatus(): { buffer: SharedArrayBuffer; view: Int32Array } {
  const buffer = new SharedArrayBuffer(WORDS * Int32Array.BYTES_PER_ELEMENT);
  const view = new Int32Array(buffer);
  Atomics.store(view, CURRENT, NO_JOB);
  return { buffer, view };
}
