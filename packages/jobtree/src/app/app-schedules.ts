// What `app.schedule` and `app.schedules()` do before and after the store:
// the app's arguments made into a stored schedule (its cron expression read
// once here, so a bad one is refused at the call), and each stored schedule
// with its next tick as of now.

import { type JsonValue, JobsError, type ScheduleBackfill, type ScheduleInput, type ScheduleRecord, type ScheduleSpec, checkScheduleSpecShape } from '@jobtree/core';
import { scheduleTimes } from './schedule-times.js';

/** The options of `app.schedule`. */
export interface ScheduleOptions {
  /** The type of each tick's job (it needs a type timeout by the time ticks come). */
  type: string;
  /** The data of each tick's job. @default null */
  data?: JsonValue;
  /** The priority of each tick's job. @default 0 */
  priority?: number;
  /**
   * The IANA time zone of a cron expression given as a string (`'Europe/Berlin'`).
   * @default the zone of the schedule it replaces, if that is a cron
   * schedule with one; else the zone of the process that sets it. Stored
   * with the schedule.
   */
  timezone?: string;
  /**
   * What becomes of ticks missed while no app ran: `'none'` skips them,
   * `'last'` runs the latest of them, `{ withinMs }` runs each one no older
   * than that. A tick late by less than a minute is on time under each.
   * @default 'none'
   */
  backfill?: ScheduleBackfill;
}

/** A stored schedule with its next tick as of now (`nextTick`, ms; null when none comes). */
export type ScheduleInfo = ScheduleRecord;

const OPTION_NAMES = new Set(['type', 'data', 'priority', 'timezone', 'backfill']);

/**
 * `app.schedule`'s arguments as a schedule to store at `now` (app clock
 * ms), over `stored`, the schedule of that name already in the store if any.
 */
export function scheduleInput(name: string, spec: string | ScheduleSpec, options: ScheduleOptions, now: number, stored?: ScheduleRecord): ScheduleInput {
  if (typeof options !== 'object' || options === null) throw new JobsError('invalid_option', 'schedule takes options with at least { type }');
  for (const key of Object.keys(options)) {
    if (!OPTION_NAMES.has(key) && (options as unknown as Record<string, unknown>)[key] !== undefined) {
      throw new JobsError('invalid_option', `schedule has no option ${JSON.stringify(key)} (it takes ${[...OPTION_NAMES].join(', ')})`);
    }
  }
  let full: ScheduleSpec;
  if (typeof spec === 'string') full = options.timezone === undefined ? { cron: spec } : { cron: spec, timezone: options.timezone };
  else {
    if (options.timezone !== undefined) {
      if (typeof spec !== 'object' || spec === null || !('cron' in spec) || spec.timezone !== undefined) {
        throw new JobsError('invalid_schedule', 'the timezone option goes with a cron expression (not an interval, nor a spec with its own timezone)');
      }
      full = { ...spec, timezone: options.timezone };
    } else full = spec;
  }
  checkScheduleSpecShape(full);
  // Stored, not left to each ticker: processes and nodes in other zones would otherwise each add their own ticks.
  if ('cron' in full && (full.timezone === undefined || full.timezone === '')) {
    // A schedule set at each start by processes in several zones keeps one zone (and so its times and last tick): the one it has.
    const zone = storedZone(stored) ?? processTimeZone();
    full = zone === undefined ? { cron: full.cron } : { cron: full.cron, timezone: zone };
  }
  const times = scheduleTimes(full);
  const nextTick = times.after(now);
  if (nextTick === undefined && 'cron' in full) {
    throw new JobsError('invalid_schedule', `${JSON.stringify(full.cron)} never matches (no such day of the month, say): it would add no job`);
  }
  return {
    name,
    spec: full,
    type: options.type,
    data: options.data ?? null,
    priority: options.priority ?? 0,
    backfill: options.backfill ?? 'none',
    setAt: now,
    nextTick: nextTick ?? null,
  };
}

/** Whether `app.schedule`'s arguments are a cron expression with no time zone: the zone of the schedule it replaces, if any, is kept. */
export function zoneLeftOut(spec: string | ScheduleSpec, options: ScheduleOptions): boolean {
  // An empty zone is none given, as scheduleInput reads it.
  if (typeof options !== 'object' || options === null || (options.timezone !== undefined && options.timezone !== '')) return false;
  return typeof spec === 'string' || (typeof spec === 'object' && spec !== null && 'cron' in spec && (spec.timezone === undefined || spec.timezone === ''));
}

/** The zone of a stored cron schedule, if it has one. */
function storedZone(stored: ScheduleRecord | undefined): string | undefined {
  if (stored === undefined || !('cron' in stored.spec)) return undefined;
  const zone = stored.spec.timezone;
  return zone === undefined || zone === '' ? undefined : zone;
}

/**
 * The IANA time zone this process runs in (its `TZ`, else the system's), or
 * undefined when Intl cannot name it: with `TZ` empty it reports
 * `Etc/Unknown`, which no zone-aware formatter takes, and with a path
 * (`:/etc/localtime`) or an unknown name it reports none. Such a process
 * stores no zone, and the ticker reads the expression in its own.
 */
function processTimeZone(): string | undefined {
  const zone: string | undefined = new Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone === undefined) return undefined;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return zone;
  } catch {
    return undefined;
  }
}

/** Each schedule with its next tick as of `now`. */
export function withNextTicks(records: readonly ScheduleRecord[], now: number): ScheduleInfo[] {
  return records.map((record) => {
    let next: number | null = record.nextTick;
    try {
      next = scheduleTimes(record.spec).after(Math.max(now, record.lastTick ?? record.setAt)) ?? null;
    } catch {
      // A spec this version cannot read: the stored next tick.
    }
    return { ...record, nextTick: next };
  });
}
