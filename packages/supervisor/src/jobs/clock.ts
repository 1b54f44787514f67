// The one source of time of the periodic jobs actors, so that tests (and a
// future simulation) can reason about when checks happen.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
