// The app's scheduler as the admin endpoint sees it: `app.scheduler` once the
// app runs job processors (`app.process`), read by shape so that the endpoint
// works the same with or without one.

import type { JobSummary, SchedulerJobs } from '../processors/interfaces.js';
import type { SchedulerStats } from '../processors/schedule-table.js';

/** What the endpoint needs of a scheduler. */
export interface SchedulerView {
  jobs(): SchedulerJobs;
  job(type: string, id: string): JobSummary | undefined;
  /** One scheduler's stats, or stats per job type. */
  stats(): SchedulerStats | Record<string, SchedulerStats>;
}

/** The app's scheduler, when it has one now. */
export function schedulerOf(app: object): SchedulerView | undefined {
  let scheduler: unknown;
  try {
    scheduler = (app as { scheduler?: unknown }).scheduler;
  } catch {
    return undefined; // a getter that throws (closed app) means none
  }
  if (typeof scheduler !== 'object' || scheduler === null) return undefined;
  const candidate = scheduler as Partial<Record<keyof SchedulerView, unknown>>;
  if (typeof candidate.jobs !== 'function' || typeof candidate.stats !== 'function') return undefined;
  return scheduler as SchedulerView;
}

/**
 * The view while it schedules some job type, else undefined: an app's view is
 * there from its start, and holds a type from that type's first `process`
 * until its processor stops. Status, `/api/scheduler` and the live feed all
 * say "a scheduler runs" by this one rule.
 */
export function runningScheduler(view: SchedulerView | undefined): SchedulerView | undefined {
  return view !== undefined && Object.keys(statsByType(view)).length > 0 ? view : undefined;
}

/** Stats per type: a single scheduler's stats are filed under the empty type. */
export function statsByType(view: SchedulerView): Record<string, SchedulerStats> {
  const stats = view.stats();
  if (isStats(stats)) return { '': stats };
  return Object.fromEntries(Object.entries(stats).filter(([, value]) => isStats(value)));
}

function isStats(value: unknown): value is SchedulerStats {
  return typeof value === 'object' && value !== null && typeof (value as SchedulerStats).total === 'number' && typeof (value as SchedulerStats).running === 'number';
}
