// The times of a schedule's ticks, from its spec: a cron expression read by
// croner (5 fields, or 6 with seconds first; its time zone, DST included),
// or a fixed interval, whose ticks are the multiples of `everyMs` since the
// epoch (so every process computes the same ones, whenever it started).
// Across a DST change, a cron expression with no `*` or `/` in its second,
// minute and hour fields names wall-clock times, as in Vixie cron: each runs
// once on the fall-back night (at its first occurrence) and, when it falls
// in the spring-forward gap, at the end of the gap. One with `*` or `/`
// there runs by the clock: through both fall-back hours, none in the gap.

import { JobsError, type ScheduleSpec } from '@jobtree/core';
import { Cron } from 'croner';
import { cronRangeError } from './cron-fields.js';

export interface ScheduleTimes {
  /** The first tick strictly after `ms`, or undefined when none comes. */
  after(ms: number): number | undefined;
  /** The latest tick at or before `ms`, or undefined when none was. */
  atOrBefore(ms: number): number | undefined;
}

/** The times of `spec`; a bad cron expression or time zone is JobsError `invalid_schedule`. */
export function scheduleTimes(spec: ScheduleSpec): ScheduleTimes {
  if ('everyMs' in spec) {
    const every = spec.everyMs;
    return {
      after: (ms) => (Math.floor(ms / every) + 1) * every,
      atOrBefore: (ms) => Math.floor(ms / every) * every,
    };
  }
  let cron: Cron;
  try {
    // croner's default counts only a single value per field as a fixed time: `30 2,14 * * *` would run twice on the fall-back night and not at all on the spring-forward one.
    cron = new Cron(spec.cron, { ...(spec.timezone !== undefined ? { timezone: spec.timezone } : {}), mode: '5-or-6-parts', fixedTimeRule: 'no-wildcard', paused: true });
    // A bad time zone shows only when a time is computed.
    cron.nextRun(new Date(0));
  } catch (error) {
    const where = spec.timezone === undefined ? '' : ` in time zone ${JSON.stringify(spec.timezone)}`;
    // croner counts some fields from zero in its messages (a month 13 is its "12"): a value out of range is told as written.
    const why = cronRangeError(spec.cron) ?? (error as Error).message;
    throw new JobsError('invalid_schedule', `${JSON.stringify(spec.cron)}${where} is not a cron expression croner reads: ${why}`, { cause: error });
  }
  return {
    after: (ms) => cron.nextRun(new Date(ms))?.getTime(),
    // previousRuns counts a run in the reference's own second as before it: one ms later includes `ms` itself.
    atOrBefore: (ms) => cron.previousRuns(1, new Date(ms + 1))[0]?.getTime(),
  };
}
