// The values of the outcomes subspace, (outcomes, outcome, type, id): what
// a finished job's run left apart from the job's data, so that the data
// stays the input that was added (and is what a retry runs with). A
// succeeded job's row holds the result `complete` gave (none when it gave
// none), a failed job's the error `fail` gave, a cancelled job's `null`.
// Every failed and cancelled job has one, which is what lets a filter on
// those outcomes read their rows instead of every job. All are JSON.

import { JobsError } from '../errors.js';
import type { JobError, JobErrorInput, JobInfo } from './interfaces.js';
import { decodeJobData, encodeJobData, NULL_JOB_DATA } from './job-data.js';
import type { JsonValue } from './job-data.js';
import { describe } from './job-input.js';
import type { JobOutcome } from './job-record.js';

/** The value of a cancelled job's row. */
export const CANCELLED_ROW: Buffer = NULL_JOB_DATA;

/**
 * The stored form of a job's error: `{ message, name, history? }` as JSON,
 * and nothing else of what it is given. An `Error` gives its message and
 * name; not its stack, nor an error-like object's other fields: a row must
 * stay small, and a stack names paths of the machine that ran it.
 */
export function encodeJobError(error: JobErrorInput): Buffer {
  if (error instanceof Error) return encodeJobData({ message: String(error.message), name: String(error.name) });
  if (typeof error !== 'object' || error === null || typeof error.message !== 'string') {
    throw new JobsError('invalid_option', `a job error is an Error or { message, name?, history? } with a string message, got ${describe(error)}`);
  }
  const { message, name, history } = error;
  if (name !== undefined && typeof name !== 'string') {
    throw new JobsError('invalid_option', `a job error's name is a string, got ${describe(name)}`);
  }
  if (history !== undefined && !Array.isArray(history)) {
    throw new JobsError('invalid_option', `a job error's history is an array, got ${describe(history)}`);
  }
  const stored: { message: string; name: string; history?: readonly unknown[] } = { message, name: name ?? 'Error' };
  if (history !== undefined) stored.history = history;
  return encodeJobData(stored);
}

/** A stored job error, as `JobInfo.error` gives it. */
export function decodeJobError(value: Buffer): JobError {
  const stored = decodeJobData(value) as { message?: JsonValue; name?: JsonValue; history?: JsonValue };
  const error: JobError = { message: String(stored.message ?? ''), name: typeof stored.name === 'string' ? stored.name : 'Error' };
  if (Array.isArray(stored.history)) error.history = stored.history;
  return error;
}

/** Adds what an outcome row holds to a finished job's info: its result, or its error. */
export function addOutcomeValue(info: JobInfo, outcome: JobOutcome | undefined, value: Buffer): void {
  if (outcome === 'succeeded') info.result = decodeJobData(value);
  else if (outcome === 'failed') info.error = decodeJobError(value);
}
