// A processor's retry policy: how long a crashed job waits before its next
// attempt (a function of the attempt and the error, or an exponential or
// fixed schedule), which errors are not worth another attempt, and how long
// one run may last. A job added with its own policy (`add(..., { retry })`)
// overrides its type's, field by field. Everything here runs on the main
// thread, where the scheduler decides.

import type { BackoffSchedule, Job, JobRetryPolicy } from '@jobtree/core';
import { OptionNames } from '@jobtree/core';
import { SchedulerError } from './errors.js';
import { BACKOFF_BASE_MS, MAX_BACKOFF_EXPONENT } from './history.js';

/** A failed run as a retry policy sees it: its handler's error, as it crossed from the handler's thread. */
export interface RunFailure {
  readonly name: string;
  readonly message: string;
}

/**
 * How long (milliseconds) a job waits after a failed run before its next
 * attempt. `attempt` is the attempt that just failed: 1 after the first
 * run, n after n failures in a row.
 */
export type BackoffFunction = (attempt: number, error: RunFailure) => number;

/** A processor's `backoff` option: a schedule, or a function. */
export type Backoff = BackoffFunction | BackoffSchedule;

/** Whether a failed run's job gets another attempt: `false` gives it up now. */
export type RetryPredicate = (error: RunFailure) => boolean;

/** Today's schedule: 30 s, doubling per failure in a row up to 2^10 times that. */
export const DEFAULT_BACKOFF: BackoffSchedule = Object.freeze({
  type: 'exponential',
  delayMs: BACKOFF_BASE_MS,
  maxDelayMs: BACKOFF_BASE_MS * 2 ** MAX_BACKOFF_EXPONENT,
});

const SCHEDULE_NAMES = new OptionNames('backoff', ['type', 'delayMs', 'maxDelayMs', 'jitter'], {
  delay: 'delayMs',
  maxDelay: 'maxDelayMs',
  factor: "an exponential schedule doubles: { type: 'exponential', delayMs }",
});

/**
 * The wait of a schedule after `attempt` failures in a row, before jitter:
 * `fixed` waits `delayMs` every time; `exponential` waits
 * `delayMs · 2^(attempt − 1)`. Either is capped at `maxDelayMs` (for an
 * exponential schedule without one, at `delayMs · 2^10`).
 */
export function scheduledDelayMs(schedule: BackoffSchedule, attempt: number): number {
  const { delayMs } = schedule;
  if (schedule.type === 'fixed') return Math.min(delayMs, schedule.maxDelayMs ?? delayMs);
  const cap = schedule.maxDelayMs ?? delayMs * 2 ** MAX_BACKOFF_EXPONENT;
  // The exponent stops growing once the cap is reached: no overflow to Infinity for long streaks.
  const exponent = Math.min(Math.max(0, attempt - 1), 1023);
  return Math.min(delayMs * 2 ** exponent, cap);
}

/**
 * A schedule as a function. `jitter` j (0 to 1) takes up to that fraction
 * off each wait, at random: the wait is uniform in [d · (1 − j), d], d the
 * wait without jitter, so a jittered wait never exceeds `maxDelayMs`.
 */
export function scheduleFunction(schedule: BackoffSchedule, random: () => number = Math.random): BackoffFunction {
  const jitter = schedule.jitter ?? 0;
  if (jitter === 0) return (attempt) => scheduledDelayMs(schedule, attempt);
  return (attempt) => {
    const delay = scheduledDelayMs(schedule, attempt);
    return delay - delay * jitter * random();
  };
}

/** Checks a schedule's fields; a bad one throws `invalid_option` naming it (`name` is where the schedule was given). */
export function checkBackoffSchedule(schedule: unknown, name = 'backoff'): BackoffSchedule {
  if (typeof schedule !== 'object' || schedule === null || Array.isArray(schedule)) {
    throw new SchedulerError('invalid_option', `${name} is a function or { type: 'exponential' | 'fixed', delayMs, maxDelayMs?, jitter? }, got ${describe(schedule)}`);
  }
  const unknown = SCHEDULE_NAMES.unknownIn(schedule);
  if (unknown !== undefined) throw new SchedulerError('invalid_option', `${name}: ${unknown}`);
  const { type, delayMs, maxDelayMs, jitter } = schedule as Record<string, unknown>;
  if (type !== 'exponential' && type !== 'fixed') {
    throw new SchedulerError('invalid_option', `${name}.type is 'exponential' or 'fixed', got ${describe(type)}`);
  }
  checkMs(`${name}.delayMs`, delayMs);
  if (maxDelayMs !== undefined) {
    checkMs(`${name}.maxDelayMs`, maxDelayMs);
    if ((maxDelayMs as number) < (delayMs as number)) {
      throw new SchedulerError('invalid_option', `${name}.maxDelayMs (${maxDelayMs}) is less than its delayMs (${delayMs})`);
    }
  }
  if (jitter !== undefined && !(typeof jitter === 'number' && jitter >= 0 && jitter <= 1)) {
    throw new SchedulerError('invalid_option', `${name}.jitter is a fraction from 0 to 1, got ${describe(jitter)}`);
  }
  return schedule as BackoffSchedule;
}

/** A processor's `backoff` as a function; a bad schedule throws `invalid_option`. */
export function resolveBackoff(backoff: Backoff | undefined): BackoffFunction {
  if (backoff === undefined) return scheduleFunction(DEFAULT_BACKOFF);
  if (typeof backoff === 'function') return backoff;
  return scheduleFunction(checkBackoffSchedule(backoff));
}

/** A processor's `retryIf`: a function, or left out. */
export function checkRetryIf(retryIf: unknown): RetryPredicate | undefined {
  if (retryIf === undefined || typeof retryIf === 'function') return retryIf as RetryPredicate | undefined;
  throw new SchedulerError('invalid_option', `retryIf is a function (error) => boolean, got ${describe(retryIf)}`);
}

/** A longest run: milliseconds > 0, or left out (no limit). */
export function checkMaxRunMs(maxRunMs: unknown, name = 'maxRunMs'): number | undefined {
  if (maxRunMs === undefined) return undefined;
  if (typeof maxRunMs !== 'number' || !Number.isFinite(maxRunMs) || maxRunMs <= 0 || maxRunMs > MAX_TIMER_MS) {
    throw new SchedulerError('invalid_option', `${name} is a number of milliseconds from 1 to ${MAX_TIMER_MS}, got ${describe(maxRunMs)}`);
  }
  return maxRunMs;
}

/** The longest a timer waits (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/** What a scheduler's type policy holds, resolved. */
export interface TypeRetryPolicy {
  readonly attempts: { readonly oneShot: number; readonly continuous: number };
  readonly backoff: BackoffFunction;
  readonly retryIf: RetryPredicate | undefined;
  readonly maxRunMs: number | undefined;
}

/** The attempts a job has: its own policy's, or its type's for its kind. */
export function attemptsOf(job: Job, policy: TypeRetryPolicy): number {
  return job.retry?.attempts ?? (job.continuous ? policy.attempts.continuous : policy.attempts.oneShot);
}

/** The longest a run of `job` may last: its own policy's, or its type's (undefined: no limit). */
export function maxRunMsOf(job: Job, policy: TypeRetryPolicy): number | undefined {
  return job.retry?.maxRunMs ?? policy.maxRunMs;
}

/**
 * The wait before `job`'s next attempt after `attempt` failures in a row:
 * its own schedule's, or its type's backoff. A backoff function that throws
 * or returns something other than a finite number >= 0 is reported through
 * `report` and the default schedule applies.
 */
export function backoffOf(job: Job, policy: TypeRetryPolicy, attempt: number, error: RunFailure, report: (error: unknown) => void): number {
  const own: JobRetryPolicy | undefined = job.retry;
  if (own?.backoff !== undefined) return scheduleFunction(own.backoff)(attempt, error);
  let wait: unknown;
  try {
    wait = policy.backoff(attempt, error);
  } catch (failure) {
    report(new SchedulerError('invalid_option', `the backoff function threw for attempt ${attempt}: ${String(failure)}`, { cause: failure }));
    return scheduledDelayMs(DEFAULT_BACKOFF, attempt);
  }
  if (typeof wait === 'number' && Number.isFinite(wait) && wait >= 0) return wait;
  report(new SchedulerError('invalid_option', `the backoff function returned ${describe(wait)} for attempt ${attempt}: a number of milliseconds >= 0`));
  return scheduledDelayMs(DEFAULT_BACKOFF, attempt);
}

/**
 * Whether a failed run earns another attempt by what failed: not when its
 * handler threw a NonRetryableError (`retryable` false), nor when the
 * type's `retryIf` says no. A `retryIf` that throws is reported through
 * `report`, and the job is retried.
 */
export function worthRetrying(error: RunFailure & { retryable?: boolean }, policy: TypeRetryPolicy, report: (error: unknown) => void): boolean {
  if (error.retryable === false) return false;
  if (policy.retryIf === undefined) return true;
  try {
    return policy.retryIf({ name: error.name, message: error.message }) !== false;
  } catch (failure) {
    report(new SchedulerError('invalid_option', `retryIf threw: ${String(failure)}`, { cause: failure }));
    return true;
  }
}

function checkMs(name: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new SchedulerError('invalid_option', `${name} is a finite number of milliseconds >= 0, got ${describe(value)}`);
  }
}

function describe(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? 'an array' : 'an object';
  return String(value);
}
