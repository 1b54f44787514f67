// The clock a `Jobs` handle counts rate limits on (see rate-log.ts): what
// "now" is for a take under a rate, and how long a take held back by the
// rate really waits before it tries again. The system clock by default; a
// test gives one it moves by hand, or one that runs faster than real time
// (the app's `clockSpeed`). Scheduled times and activity timeouts keep the
// system clock.

import { JobsError } from '../errors.js';
import { describe } from './job-input.js';

/** Time as a `Jobs` handle's rate limits see it. */
export interface JobsClock {
  /** Milliseconds since the epoch, on this clock. */
  now(): number;
  /**
   * Real milliseconds that `ms` of this clock take: how long a take held
   * back by a rate waits for its window to let it through. Without it, one
   * ms of the clock is one real ms (a clock moved by hand then wakes such a
   * take by real time, or by any change to the type's rate row).
   */
  realMs?(ms: number): number;
}

export const systemJobsClock: JobsClock = Object.freeze({ now: () => Date.now() });

/** Checks a `clock` option: `undefined` (the system clock) or an object with `now()` and an optional `realMs(ms)`. */
export function checkJobsClock(clock: unknown): JobsClock | undefined {
  if (clock === undefined) return undefined;
  if (
    typeof clock === 'object' &&
    clock !== null &&
    typeof (clock as JobsClock).now === 'function' &&
    ((clock as JobsClock).realMs === undefined || typeof (clock as JobsClock).realMs === 'function')
  ) {
    return clock as JobsClock;
  }
  throw new JobsError('invalid_option', `clock is { now(): number, realMs?(ms): number }, got ${describe(clock)}`);
}
