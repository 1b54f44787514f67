// A job's own retry policy (`add(type, id, data, { retry })`): checked,
// kept as JSON in its own row, (retry_policies, type, id), apart from the
// job's data (which is the user's), and flagged in the job's record so that
// an accept reads the row only for the jobs that have one. Whichever
// process accepts the job gets the policy on its handle (`Job.retry`).

import { JobsError } from '../errors.js';
import { OptionNames } from '../option-names.js';
import type { Transaction } from '../storage/interfaces.js';
import { getMany } from '../storage/fast-paths.js';
import type { BackoffSchedule, Job, JobRetryPolicy } from './interfaces.js';
import { decodeJobData, encodeJobData } from './job-data.js';
import { describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';

const POLICY_NAMES = new OptionNames('retry', ['attempts', 'backoff', 'maxRunMs'], {
  retries: 'attempts',
  maxAttempts: 'attempts',
  timeout: 'maxRunMs',
  delay: 'backoff',
});
const BACKOFF_NAMES = new OptionNames('retry.backoff', ['type', 'delayMs', 'maxDelayMs', 'jitter'], { delay: 'delayMs', maxDelay: 'maxDelayMs' });
/** The most attempts a policy may give (what a job record counts). */
const MAX_POLICY_ATTEMPTS = 0xffff_ffff;
/** The longest a timer waits. */
const MAX_RUN_MS = 2_147_483_647;

/**
 * `add`'s `retry` option, checked: an object with `attempts` (an integer
 * >= 1), `backoff` (a schedule: functions cannot be stored) and `maxRunMs`,
 * each optional. Anything else is `invalid_option`.
 */
export function checkRetryPolicy(retry: unknown): JobRetryPolicy | undefined {
  if (retry === undefined) return undefined;
  if (typeof retry !== 'object' || retry === null || Array.isArray(retry)) {
    throw new JobsError('invalid_option', `retry is an object { attempts?, backoff?, maxRunMs? }, got ${describe(retry)}`);
  }
  POLICY_NAMES.check(retry);
  const { attempts, backoff, maxRunMs } = retry as Record<string, unknown>;
  const policy: { attempts?: number; backoff?: BackoffSchedule; maxRunMs?: number } = {};
  if (attempts !== undefined) {
    if (typeof attempts !== 'number' || !Number.isSafeInteger(attempts) || attempts < 1 || attempts > MAX_POLICY_ATTEMPTS) {
      throw new JobsError('invalid_option', `retry.attempts is an integer from 1 to ${MAX_POLICY_ATTEMPTS}, got ${describe(attempts)}`);
    }
    policy.attempts = attempts;
  }
  if (backoff !== undefined) policy.backoff = checkSchedule(backoff);
  if (maxRunMs !== undefined) {
    if (typeof maxRunMs !== 'number' || !Number.isFinite(maxRunMs) || maxRunMs <= 0 || maxRunMs > MAX_RUN_MS) {
      throw new JobsError('invalid_option', `retry.maxRunMs is a number of milliseconds from 1 to ${MAX_RUN_MS}, got ${describe(maxRunMs)}`);
    }
    policy.maxRunMs = maxRunMs;
  }
  return policy;
}

function checkSchedule(backoff: unknown): BackoffSchedule {
  if (typeof backoff === 'function') {
    throw new JobsError('invalid_option', "retry.backoff is stored with the job, so it is a schedule { type, delayMs, maxDelayMs?, jitter? }: a backoff function belongs to app.process(type, handler, { backoff })");
  }
  if (typeof backoff !== 'object' || backoff === null || Array.isArray(backoff)) {
    throw new JobsError('invalid_option', `retry.backoff is { type: 'exponential' | 'fixed', delayMs, maxDelayMs?, jitter? }, got ${describe(backoff)}`);
  }
  BACKOFF_NAMES.check(backoff);
  const { type, delayMs, maxDelayMs, jitter } = backoff as Record<string, unknown>;
  if (type !== 'exponential' && type !== 'fixed') {
    throw new JobsError('invalid_option', `retry.backoff.type is 'exponential' or 'fixed', got ${describe(type)}`);
  }
  checkMs('retry.backoff.delayMs', delayMs);
  const schedule: { type: 'exponential' | 'fixed'; delayMs: number; maxDelayMs?: number; jitter?: number } = { type, delayMs: delayMs as number };
  if (maxDelayMs !== undefined) {
    checkMs('retry.backoff.maxDelayMs', maxDelayMs);
    if ((maxDelayMs as number) < (delayMs as number)) {
      throw new JobsError('invalid_option', `retry.backoff.maxDelayMs (${maxDelayMs}) is less than its delayMs (${delayMs})`);
    }
    schedule.maxDelayMs = maxDelayMs as number;
  }
  if (jitter !== undefined) {
    if (!(typeof jitter === 'number' && jitter >= 0 && jitter <= 1)) {
      throw new JobsError('invalid_option', `retry.backoff.jitter is a fraction from 0 to 1, got ${describe(jitter)}`);
    }
    schedule.jitter = jitter;
  }
  return schedule;
}

function checkMs(name: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new JobsError('invalid_option', `${name} is a finite number of milliseconds >= 0, got ${describe(value)}`);
  }
}

/** A checked policy as its row stores it. */
export function encodeRetryPolicy(retry: unknown): Buffer | undefined {
  const policy = checkRetryPolicy(retry);
  return policy === undefined ? undefined : encodeJobData(policy);
}

/** Writes (or replaces) the policy row of job `id`. */
export function writeRetryPolicy(tx: Transaction, keys: TypeKeys, id: string, row: Buffer): void {
  tx.set(keys.retryPolicyKey(id), row);
}

/** Clears the policy row of job `id`, when its record says it has one. */
export function clearRetryPolicy(tx: Transaction, keys: TypeKeys, id: string, hasPolicy: boolean): void {
  if (hasPolicy) tx.clear(keys.retryPolicyKey(id));
}

/** A stored policy row as `Job.retry` gives it. */
export function decodeRetryPolicy(row: Buffer): JobRetryPolicy {
  return decodeJobData(row) as JobRetryPolicy;
}

/**
 * Puts their policies on the handles of `jobs` at `indexes` (jobs whose
 * records say they have one), read in one batch: an array at once on the
 * embedded engine. A row gone missing leaves its job without a policy.
 */
export function attachRetryPolicies(tx: Transaction, keys: TypeKeys, jobs: Job[], indexes: readonly number[]): void | Promise<void> {
  if (indexes.length === 0) return;
  const read = getMany(
    tx,
    indexes.map((index) => keys.retryPolicyKey((jobs[index] as Job).id)),
  );
  const attach = (rows: (Buffer | undefined)[]): void => {
    for (let i = 0; i < indexes.length; i++) {
      const row = rows[i];
      if (row !== undefined) (jobs[indexes[i] as number] as { retry?: JobRetryPolicy }).retry = decodeRetryPolicy(row);
    }
  };
  if (Array.isArray(read)) attach(read);
  else return read.then(attach);
}
