// A clock that runs `speed` times faster than the wall clock, for the
// scheduler (its `clock` option): a crashed job's 30-second backoff then
// costs 30 / speed real seconds, so a chaos run can crash handlers and
// still drain in time. Only the scheduler takes it; the activity monitors
// and the store run on real time.

import type { Clock } from '../../packages/jobtree/src/processors/index.js';

export function fastClock(speed: number): Clock {
  const start = Date.now();
  return {
    now: () => start + (Date.now() - start) * speed,
    setTimeout: (callback, ms) => setTimeout(callback, ms / speed),
    clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  };
}
