// The one source of time of the periodic actors (activity monitors, type
// monitors, the jobs server) and of the scheduler: what they read as "now"
// and how long their timers really wait. The system clock is real time; a
// scaled clock runs `speed` times faster, so that a test of a 60-second type
// timeout takes one second. A clock crosses threads as its spec.

/** Time as the periodic actors and the scheduler see it. */
export interface Clock {
  /** Milliseconds since the epoch, on this clock. */
  now(): number;
  /** Calls `callback` after `ms` milliseconds of this clock. */
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Real milliseconds that `ms` of this clock take. */
  realMs(ms: number): number;
}

/** A clock as plain data, to give it to actors in other threads. */
export interface ClockSpec {
  /** How many times faster than real time it runs. 1 is real time. */
  speed: number;
  /** The real time (epoch ms) at which it read the same as the real clock. */
  origin: number;
}

export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  setTimeout: (callback: () => void, ms: number): unknown => setTimeout(callback, ms),
  clearTimeout: (handle: unknown): void => clearTimeout(handle as NodeJS.Timeout),
  realMs: (ms: number) => ms,
});

/** The clock a spec describes (the system clock for speed 1). */
export function clockFromSpec(spec: ClockSpec | undefined): Clock {
  if (spec === undefined || spec.speed === 1) return systemClock;
  const { speed, origin } = spec;
  return Object.freeze({
    now: () => origin + (Date.now() - origin) * speed,
    setTimeout: (callback: () => void, ms: number): unknown => setTimeout(callback, ms / speed),
    clearTimeout: (handle: unknown): void => clearTimeout(handle as NodeJS.Timeout),
    realMs: (ms: number) => ms / speed,
  });
}
