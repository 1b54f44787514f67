// Checks on every argument that reaches storage, so bad input gets a typed
// JobsError before any transaction starts and nothing is half-written.

import { types } from 'node:util';
import { JobsError } from '../errors.js';
import { OptionNames } from '../option-names.js';

/** Longest job type, in UTF-8 bytes. */
export const MAX_TYPE_BYTES = 256;
/** Longest job id, in UTF-8 bytes. Type + id stay far below the 10 kB key limit. */
export const MAX_ID_BYTES = 1024;

/**
 * A UTF-16 surrogate without its pair. UTF-8 cannot encode one: the tuple
 * layer writes U+FFFD instead, so two different strings would share a key
 * and an id read back from storage would not be the id that was written.
 */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Types and ids share one rule: a non-empty, valid-Unicode string within a UTF-8 byte limit. */
function checkName(value: unknown, what: 'type' | 'id', code: 'invalid_job_type' | 'invalid_job_id', max: number): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new JobsError(code, `a job ${what} is a non-empty string, got ${describe(value)}`);
  }
  // Every finish and update checks its job's id: an ASCII name within the
  // limit (most are) is valid as it is, found by one loop without the regex
  // and the byte count.
  if (value.length <= max && isAscii(value)) return value;
  if (LONE_SURROGATE.test(value)) {
    throw new JobsError(code, `a job ${what} must be valid Unicode, got ${describe(value)} (a lone surrogate)`);
  }
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > max) throw new JobsError(code, `a job ${what} has at most ${max} UTF-8 bytes, got ${bytes}`);
  return value;
}

/** Whether every UTF-16 unit of `value` is ASCII: then it is valid Unicode and its UTF-8 bytes are its length. */
function isAscii(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) return false;
  return true;
}

export function checkType(type: unknown): string {
  return checkName(type, 'type', 'invalid_job_type', MAX_TYPE_BYTES);
}

export function checkId(id: unknown): string {
  return checkName(id, 'id', 'invalid_job_id', MAX_ID_BYTES);
}

export function checkPriority(priority: unknown): number | undefined {
  if (priority === undefined) return undefined;
  if (typeof priority !== 'number' || !Number.isSafeInteger(priority) || priority < 0) {
    throw new JobsError('invalid_priority', `a priority is an integer >= 0, got ${describe(priority)}`);
  }
  return priority;
}

/** Scheduled times are epoch seconds: finite and >= 0 (fractions allowed). */
export function checkScheduledTime(time: unknown, name = 'scheduled time'): number | undefined {
  if (time === undefined) return undefined;
  if (typeof time !== 'number' || !Number.isFinite(time) || time < 0) {
    throw new JobsError('invalid_scheduled_time', `a ${name} is a finite number of epoch seconds >= 0, got ${describe(time)}`);
  }
  return time + 0; // -0 would sort apart from 0 in the tuple encoding
}

/**
 * The latest scheduled time a job may have, in epoch seconds: the year 5138.
 * A later one can only be milliseconds (`Date.now()` is about 1.7e12), which
 * taken as seconds would put the job some 55,000 years away.
 */
export const MAX_SCHEDULED_TIME = 1e11;

/**
 * A job's scheduled time: epoch seconds, or a `Date` (converted to epoch
 * seconds). Milliseconds are refused rather than taken as seconds.
 */
export function checkJobScheduledTime(time: unknown): number | undefined {
  if (types.isDate(time)) {
    const ms = (time as Date).getTime();
    if (!Number.isFinite(ms) || ms < 0) throw new JobsError('invalid_scheduled_time', `a scheduled time is a valid Date from 1970 on, got ${String(time)}`);
    return ms / 1000;
  }
  const seconds = checkScheduledTime(time);
  if (seconds !== undefined && seconds > MAX_SCHEDULED_TIME) {
    throw new JobsError(
      'invalid_scheduled_time',
      `a scheduled time is in epoch seconds (or a Date), and ${seconds} is after the year 5138: milliseconds? Use Date.now() / 1000 + delay, or a Date`,
    );
  }
  return seconds;
}

/** A type timeout: seconds, finite and > 0. */
export function checkTypeTimeout(seconds: unknown): number {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) {
    throw new JobsError('invalid_timeout', `a type timeout is a finite number of seconds > 0, got ${describe(seconds)}`);
  }
  return seconds;
}

/** An accept timeout: milliseconds >= 0, `Infinity` to wait for ever. */
export function checkAcceptTimeout(ms: unknown): number {
  if (ms === undefined) return 0;
  if (typeof ms !== 'number' || Number.isNaN(ms) || ms < 0) {
    throw new JobsError('invalid_timeout', `an accept timeout is a number of milliseconds >= 0, got ${describe(ms)}`);
  }
  return ms;
}

/**
 * An options argument: an object whose keys are all among `names`, or
 * omitted (`{}`); anything else is `invalid_option`.
 */
export function checkOptions<T extends object>(options: T | undefined, names: OptionNames): T {
  if (options === undefined) return {} as T;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new JobsError('invalid_option', `the options of ${names.what} are an object, got ${describe(options)}`);
  }
  names.check(options);
  return options;
}

/** Where the options people give `add` and `resubmit` by mistake belong. */
function scheduleAdvice(call: 'add' | 'resubmit'): Record<string, string> {
  const when = 'a job waits until its scheduledTime (epoch seconds, or a Date)';
  const attempts = "a job's own attempts go in its retry policy: { retry: { attempts } } (its type's: app.process(type, handler, { attempts }))";
  const tx = `to ${call} inside your transaction, use app.in(tx).${call}(...) (jobs.in(tx).${call}(...) without the app)`;
  return {
    delay: when,
    at: when,
    runAt: when,
    startAt: when,
    when,
    attempts,
    maxAttempts: attempts,
    retries: attempts,
    tx,
    transaction: tx,
    timeout: "a job's activity timeout is its type's: setTypeTimeout(type, seconds)",
  };
}

/** The options of `add`, which each job of `addMany` and of `addFlow` takes too. */
export const JOB_OPTION_NAMES = ['scheduledTime', 'priority', 'continuous', 'retry', 'traceContext', 'group'];
export const ADD_OPTIONS = new OptionNames('add', JOB_OPTION_NAMES, scheduleAdvice('add'));
export const JOB_SPEC_OPTIONS = new OptionNames('a job of addMany', ['id', 'data', ...JOB_OPTION_NAMES], scheduleAdvice('add'));
export const RESUBMIT_OPTIONS = new OptionNames('resubmit', ['data', ...JOB_OPTION_NAMES], scheduleAdvice('resubmit'));
export const WORKER_RESUBMIT_OPTIONS = new OptionNames("a worker's resubmit", ['scheduledTime', 'priority'], scheduleAdvice('resubmit'));
export const ACCEPT_OPTIONS = new OptionNames('accept', ['timeout', 'maxSchedTime', 'noSchedule', 'signal'], { wait: 'timeout', waitMs: 'timeout' });
export const PENDING_COUNT_OPTIONS = new OptionNames('pendingCount', ['maxSchedTime', 'limit']);
export const RE_ENQUEUE_OPTIONS = new OptionNames('reEnqueueInactive', ['batchSize']);
export const WORKER_ITEM = new OptionNames('an item', ['job', 'data'], { result: 'data' });
export const COMPLETE_ITEM = new OptionNames('an item of completeMany', ['job', 'result'], { data: 'result' });
export const FAIL_ITEM = new OptionNames('an item of failMany', ['job', 'error'], { reason: 'error' });
export const FAIL_ATTEMPT_OPTIONS = new OptionNames('failAttempt', ['scheduledTime', 'attempts'], {
  retryAt: 'scheduledTime',
  runAt: 'scheduledTime',
  delay: 'the job runs again at its scheduledTime (epoch seconds, or a Date)',
});
export const JOBS_FILTER = new OptionNames('a jobs filter', ['outcome'], { status: 'outcome', state: 'outcome' });
export const NEW_JOBS_OPTIONS = new OptionNames('new Jobs', ['ownsDatabase', 'clock']);
const OPEN_JOBS_OPTIONS = new OptionNames('openJobs', ['path', 'clusterFile', 'directory', 'database', 'role', 'ownerWaitMs', 'durability', 'clock']);

/** An optional boolean option: `undefined` or a boolean; anything else is `invalid_option`. */
export function checkBooleanOption(value: unknown, name: string): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  throw new JobsError('invalid_option', `${name} is a boolean, got ${describe(value)}`);
}

/** A callback argument (e.g. `foldJobs`' fold). */
export function checkFunction<F>(value: F, name: string): F {
  if (typeof value !== 'function') throw new JobsError('invalid_option', `${name} is a function, got ${describe(value)}`);
  return value;
}

/** A list argument (ids, jobs, items): an array. */
export function checkArray<T>(value: readonly T[], name: string): readonly T[] {
  if (!Array.isArray(value)) throw new JobsError('invalid_option', `${name} is an array, got ${describe(value)}`);
  return value;
}

/** Whether `value` has the shape of a storage `Database` (what `{ database }` and `new Jobs` take). */
export function isDatabaseLike(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { doTransaction?: unknown }).doTransaction === 'function' &&
    typeof (value as { close?: unknown }).close === 'function'
  );
}

/**
 * `openJobs`' options: omitted, or an object with a database to share, or
 * with a non-empty `path` or `clusterFile` string. Checked before anything
 * is opened, so a wrong option never surfaces as a TypeError or a file
 * system error from deep inside the storage layer.
 */
export function checkOpenJobsOptions(options: unknown): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new JobsError('invalid_option', `the options of openJobs are an object, got ${describe(options)}`);
  }
  OPEN_JOBS_OPTIONS.check(options);
  if ('database' in options) {
    if (!isDatabaseLike(options.database)) {
      throw new JobsError('invalid_option', `database is an open Database (from openDatabase), got ${describe(options.database)}`);
    }
    return;
  }
  checkSharingOptions(options as Record<string, unknown>);
  for (const name of ['path', 'clusterFile'] as const) {
    if (!(name in options)) continue;
    const value = (options as Record<string, unknown>)[name];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value.length === 0) {
      throw new JobsError('invalid_option', `${name} is a non-empty string, got ${describe(value)}`);
    }
  }
}

/** `role`, `ownerWaitMs` and `durability`, shared by openJobs and startJobs. */
export function checkSharingOptions(options: Record<string, unknown>): void {
  const { role, ownerWaitMs, durability } = options;
  if (durability !== undefined && durability !== 'flush' && durability !== 'deferred') {
    throw new JobsError('invalid_option', `durability is 'flush' or 'deferred', got ${describe(durability)}`);
  }
  if (durability !== undefined && ('clusterFile' in options || 'database' in options)) {
    throw new JobsError(
      'invalid_option',
      'durability is an option of the embedded store by path: FoundationDB always acknowledges a commit once it is durable, and a database you opened keeps the durability it was opened with',
    );
  }
  if (role !== undefined && role !== 'auto' && role !== 'owner' && role !== 'client') {
    throw new JobsError('invalid_option', `role is 'auto', 'owner' or 'client', got ${describe(role)}`);
  }
  if (ownerWaitMs !== undefined && !(typeof ownerWaitMs === 'number' && ownerWaitMs >= 0 && ownerWaitMs <= 2_147_483_647)) {
    throw new JobsError('invalid_option', `ownerWaitMs is a number of ms from 0 to 2147483647, got ${describe(ownerWaitMs)}`);
  }
  if ((role !== undefined || ownerWaitMs !== undefined) && ('clusterFile' in options || 'database' in options)) {
    throw new JobsError('invalid_option', 'role and ownerWaitMs are for the embedded store by path: on FoundationDB (or a database you opened) every process runs its own transactions');
  }
}

/**
 * The shape of a job handle from `accept`: an object with a string lock.
 * Its type and id get their own checks (the type's through the key cache).
 */
export function checkJobShape(job: unknown): { type: unknown; id: unknown; lock: string } {
  if (typeof job !== 'object' || job === null || typeof (job as { lock?: unknown }).lock !== 'string') {
    throw new JobsError('invalid_option', `expected a job handle from accept(), got ${describe(job)}`);
  }
  return job as { type: unknown; id: unknown; lock: string };
}

export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return 'a symbol';
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}
