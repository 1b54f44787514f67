// Which ticks of the stored schedules are due, and adding their jobs: what
// the schedule ticker does on each wake-up, in whichever process runs it.
// Each schedule's due ticks go to the store in one call (`addScheduleTicks`),
// which adds a tick's job only if no process did already, so two tickers
// racing, or a ticker restarted between a tick and its run, add each tick's
// job once.

import { JobsError, type Jobs, MAX_TICKS_PER_CALL, type ScheduleRecord } from '@jobtree/core';
import { type ScheduleTimes, scheduleTimes } from './schedule-times.js';

/**
 * A tick late by less than this is on time under every backfill policy: a
 * busy machine, a ticker restarted, an owner handing its store over.
 */
export const LATE_MS = 60_000;

/** The ticks of one schedule to handle now. */
export interface DueTicks {
  /** The ticks whose jobs to add, in order. */
  run: number[];
  /** The latest tick handled by this pass (added or skipped as missed). */
  upTo: number;
  /** Whether ticks are left for another pass (more were due than one call adds). */
  more: boolean;
}

/**
 * The ticks of `record` due at `now` and how far they go: those not handled
 * yet (after its last tick, or after it was set), on time or, as its
 * backfill policy says, missed.
 */
export function dueTicks(record: ScheduleRecord, times: ScheduleTimes, now: number): DueTicks | undefined {
  const from = record.lastTick ?? record.setAt;
  const latest = times.atOrBefore(now);
  if (latest === undefined || latest <= from) return undefined;
  const backfill = record.backfill;
  const window = typeof backfill === 'object' ? Math.max(backfill.withinMs, LATE_MS) : LATE_MS;
  // Ticks at or before `missedUpTo` were missed; the later ones are on time (or within the window).
  const missedUpTo = now - window;
  const run: number[] = [];
  if (backfill === 'last') {
    const lastMissed = times.atOrBefore(missedUpTo);
    if (lastMissed !== undefined && lastMissed > from) run.push(lastMissed);
  }
  for (let tick = times.after(Math.max(from, missedUpTo)); tick !== undefined && tick <= now; tick = times.after(tick)) {
    if (run.length === MAX_TICKS_PER_CALL) return { run, upTo: run[run.length - 1] as number, more: true };
    run.push(tick);
  }
  return { run, upTo: latest, more: false };
}

/** The outcome of one pass over the schedules. */
export interface TickPass {
  /** The ids of the jobs added, by schedule name. */
  added: Record<string, string[]>;
  /** The earliest time the next pass has work (ms), or undefined when no schedule has a next tick. */
  nextAt: number | undefined;
  /** Schedules whose ticks could not be added this pass (their type has no timeout, say), with why; they are tried again at the next. */
  failed: Record<string, string>;
}

/** Parsed times by spec, kept across passes (a cron expression is read once). */
export class ScheduleTimesCache {
  readonly #times = new Map<string, ScheduleTimes>();

  of(record: ScheduleRecord): ScheduleTimes {
    const key = JSON.stringify(record.spec);
    let times = this.#times.get(key);
    if (times === undefined) {
      if (this.#times.size >= 1_000) this.#times.clear();
      times = scheduleTimes(record.spec);
      this.#times.set(key, times);
    }
    return times;
  }
}

/** Adds the jobs of every schedule's due ticks at `now` (app clock ms). */
export async function tickSchedules(jobs: Pick<Jobs, 'getSchedules' | 'addScheduleTicks'>, now: number, cache = new ScheduleTimesCache()): Promise<TickPass> {
  const pass: TickPass = { added: {}, nextAt: undefined, failed: {} };
  const soonest = (at: number | undefined) => {
    if (at !== undefined && (pass.nextAt === undefined || at < pass.nextAt)) pass.nextAt = at;
  };
  for (const record of await jobs.getSchedules()) {
    let times: ScheduleTimes;
    try {
      times = cache.of(record);
    } catch (error) {
      pass.failed[record.name] = (error as Error).message;
      continue;
    }
    const due = dueTicks(record, times, now);
    if (due === undefined) {
      soonest(times.after(Math.max(now, record.lastTick ?? record.setAt)));
      continue;
    }
    const next = times.after(Math.max(now, due.upTo)) ?? null;
    try {
      const added = await jobs.addScheduleTicks(record.name, record.setAt, due.run, due.upTo, next);
      if (added !== undefined && added.length > 0) pass.added[record.name] = added;
    } catch (error) {
      // A schedule that cannot add its jobs now (no type timeout, a paused
      // store) must not stop the others; anything else is the ticker's crash.
      if (!(error instanceof JobsError) || error.code === 'closed' || error.code === 'app_stopped' || error.code === 'owner_lost') throw error;
      pass.failed[record.name] = error.message;
      continue;
    }
    soonest(due.more ? now : (next ?? undefined));
  }
  return pass;
}
