// The scheduler's tunables, their defaults and their validation (the
// `replicator` config section of couch_replicator_scheduler).

import { SchedulerError } from './errors.js';

export interface SchedulerOptions {
  /**
   * Jobs running at once on this scheduler.
   * @default 500
   */
  maxJobs?: number;
  /**
   * At most this many continuous jobs are rotated out per interval when the
   * slots are full and jobs wait.
   * @default 20
   */
  maxChurn?: number;
  /**
   * Milliseconds between reschedules (stop excess jobs, start pending ones, rotate).
   * @default 60_000
   */
  interval?: number;
  /**
   * Events kept in each job's history.
   * @default 20
   */
  maxHistory?: number;
  /**
   * Seconds: a run that lasts longer than this before crashing starts a new
   * streak of consecutive crashes (its backoff starts again at 30 s).
   * @default 120
   */
  healthThreshold?: number;
}

export type ResolvedSchedulerOptions = Required<SchedulerOptions>;

export const DEFAULT_SCHEDULER_OPTIONS: Readonly<ResolvedSchedulerOptions> = Object.freeze({
  maxJobs: 500,
  maxChurn: 20,
  interval: 60_000,
  maxHistory: 20,
  healthThreshold: 120,
});

/** The options with defaults filled in; a bad value throws `invalid_option` naming it. */
export function resolveSchedulerOptions(options: SchedulerOptions = {}): ResolvedSchedulerOptions {
  if (typeof options !== 'object' || options === null) {
    throw new SchedulerError('invalid_option', `scheduler options are an object, got ${String(options)}`);
  }
  const resolved = { ...DEFAULT_SCHEDULER_OPTIONS };
  for (const key of Object.keys(DEFAULT_SCHEDULER_OPTIONS) as (keyof ResolvedSchedulerOptions)[]) {
    const value = options[key];
    if (value !== undefined) resolved[key] = value;
  }
  // maxJobs 0 is allowed: a scheduler that runs nothing (couch_replicator_scheduler allows it too).
  checkInteger('maxJobs', resolved.maxJobs, 0);
  // maxChurn 0 is allowed and disables rotation.
  checkInteger('maxChurn', resolved.maxChurn, 0);
  checkInteger('maxHistory', resolved.maxHistory, 1);
  checkNumber('interval', resolved.interval, 1);
  checkNumber('healthThreshold', resolved.healthThreshold, 0);
  return resolved;
}

export function checkInteger(name: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new SchedulerError('invalid_option', `${name} is an integer >= ${min}, got ${describe(value)}`);
  }
}

export function checkNumber(name: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new SchedulerError('invalid_option', `${name} is a finite number >= ${min}, got ${describe(value)}`);
  }
}

export function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
