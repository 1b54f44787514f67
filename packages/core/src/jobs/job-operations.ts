// The body of each single-job call of the jobs API, run inside a transaction
// the caller provides: a call's own transaction, a batch that serves many
// calls at once, or the application's transaction (`jobs.in(tx)`).
//
// Each body reads first, then checks, then writes, with no await between
// its checks and its writes. So a body that fails with a JobsError (halt,
// not_found, no_type_timeout) has written nothing, and the other calls
// sharing its transaction can still commit. Bodies only compute from what
// they read, so a retried transaction may run them again.

import { JobsError } from '../errors.js';
import type { ReadTransaction, Transaction } from '../storage/interfaces.js';
import { clearHandedOver, setHandedOver } from '../storage/fast-paths.js';
import { decodeJobData } from './job-data.js';
import { describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import {
  decodeJobRecord,
  encodeJobRecord,
  finishedRecordBytes,
  finishRecordInPlace,
  recordAttempts,
  recordContinuous,
  recordInFlow,
  recordGroup,
  recordPriority,
  recordResubmit,
  recordRunningUnder,
  recordScheduledTime,
  updatedRecordBytes,
} from './job-record.js';
import type { JobRecord, JobState } from './job-record.js';
import {
  clearFinishedRows,
  countCancellation,
  newJobRecord,
  pendingRecord,
  readRecord,
  resubmitRecord,
  touchActivity,
  writePending,
  writeRunningValue,
} from './job-transitions.js';
import type { Changes } from './job-transitions.js';
import { removePending } from './pending-queue.js';
import type { OncePerAttempt } from './pending-queue.js';
import type { Job, JobInfo } from './interfaces.js';
import { addOutcomeValue } from './outcome-rows.js';
import { logFinish } from './finish-log.js';
import { clearRetryPolicy, decodeRetryPolicy } from './job-retry-policy.js';
import { clearTraceContext, decodeTraceContext } from './job-trace-context.js';
import { countEndedRun } from './type-limits.js';
import { flowMemberEnded, flowMemberRemoved } from './flow-work.js';

/**
 * An `add` in a transaction of its own (an application's, `jobs.in(tx)`);
 * a write batch reads for itself and runs {@link addJobRead}.
 */
export async function addJob(tx: Transaction, keys: TypeKeys, id: string, changes: Changes, now: number): Promise<JobState> {
  const key = keys.job(id);
  // One read after the other, not Promise.all: two reads in flight with one
  // awaited at a time could leave a rejection unhandled.
  const timeout = await tx.get(keys.typeTimeout);
  return addJobRead(tx, keys, id, changes, now, key, timeout, await tx.get(key));
}

/**
 * {@link addJob} once its reads are done: `key` is the job's data key,
 * `timeout` and `value` what the type's timeout and that key read. A write
 * batch that reads for itself runs this (see write-calls.ts).
 */
export function addJobRead(
  tx: Transaction,
  keys: TypeKeys,
  id: string,
  changes: Changes,
  now: number,
  key: Buffer,
  timeout: Buffer | undefined,
  value: Buffer | undefined,
  once?: OncePerAttempt,
): JobState {
  if (timeout === undefined) {
    throw new JobsError('no_type_timeout', `set a timeout for job type ${describe(keys.type)} before adding jobs to it`);
  }
  if (value === undefined) {
    writePending(tx, keys, id, newJobRecord(tx, keys, id, changes, now, false), once, key);
    touchActivity(tx, keys, once);
    return 'pending';
  }
  return resubmitRecord(tx, keys, id, decodeJobRecord(value), changes, now, once);
}

export async function removeJob(tx: Transaction, keys: TypeKeys, id: string, once?: OncePerAttempt): Promise<boolean> {
  const record = await readRecord(tx, keys, id);
  if (record === undefined) return false;
  if (record.state === 'pending') removePending(tx, keys, id, record.priority, record.scheduledTime, record.group);
  if (record.state === 'running') {
    if (record.seq) tx.clear(keys.activityKey(record.seq));
    countCancellation(tx, keys);
    countEndedRun(tx, keys, once, record.group);
  }
  clearFinishedRows(tx, keys, id, record, once);
  clearRetryPolicy(tx, keys, id, record.retryPolicy);
  clearTraceContext(tx, keys, id, record.traceContext);
  tx.clear(keys.job(id));
  touchActivity(tx, keys, once);
  if (record.inFlow === true) flowMemberRemoved(tx, keys, id);
  return true;
}

/** A job creator's resubmit: the job must exist. `once`: the writes a batch needs only once (see OncePerAttempt). */
export async function resubmitJob(
  tx: Transaction,
  keys: TypeKeys,
  id: string,
  changes: Changes,
  now: number,
  once?: OncePerAttempt,
): Promise<JobState> {
  const current = await readRecord(tx, keys, id);
  if (current === undefined) throw new JobsError('not_found', `no job ${describe(id)} of type ${describe(keys.type)}`);
  return resubmitRecord(tx, keys, id, current, changes, now, once);
}

/** The job's record if `job.lock` still owns it, else `halt`. Reads with a conflict: lock checks are exact. */
export async function ownRecord(tx: Transaction, keys: TypeKeys, job: Job): Promise<JobRecord> {
  return decodeJobRecord(owned(keys, job, await tx.get(keys.job(job.id))));
}

/**
 * `value`, the encoded record read at the job's data key, if `job.lock` still
 * owns it; else `halt`. Synchronous, so each finish and update awaits its
 * read directly (an async helper would be a promise and a frame more per job).
 */
export function owned(keys: TypeKeys, job: Job, value: Buffer | undefined): Buffer {
  if (value !== undefined && recordRunningUnder(value, job.lock)) return value;
  const record = value === undefined ? undefined : decodeJobRecord(value);
  const why =
    record === undefined ? 'it was removed' : record.state === 'running' ? 'another worker holds it now' : `it is ${record.state} now`;
  throw new JobsError('halt', `job ${describe(job.id)} of type ${describe(keys.type)} is no longer yours: ${why}`);
}

/**
 * A worker's update. `userVersion` tells apart the activity rows of the
 * updates that share one transaction: each must be unique in it.
 */
export async function updateJob(
  tx: Transaction,
  keys: TypeKeys,
  job: Job,
  data: Buffer | undefined,
  userVersion: number,
): Promise<Job> {
  const key = keys.job(job.id);
  return updateJobRead(tx, keys, job, data, userVersion, key, await tx.get(key));
}

/** {@link updateJob} once the job's data key `key` read `read`. */
export function updateJobRead(
  tx: Transaction,
  keys: TypeKeys,
  job: Job,
  data: Buffer | undefined,
  userVersion: number,
  key: Buffer,
  read: Buffer | undefined,
  once?: OncePerAttempt,
): Job {
  const value = owned(keys, job, read);
  // The activity row moves to the new sequence; the record keeps all but its sequence (and data).
  clearHandedOver(tx, keys.activityKeyOfRecord(value));
  writeRunningValue(tx, keys, key, job.id, updatedRecordBytes(value, data, userVersion), userVersion);
  touchActivity(tx, keys, once);
  return {
    type: job.type,
    id: job.id,
    lock: job.lock,
    data: data === undefined ? job.data : decodeJobData(data),
    priority: recordPriority(value),
    scheduledTime: recordScheduledTime(value),
    resubmit: recordResubmit(value),
    continuous: recordContinuous(value),
    attempts: recordAttempts(value),
    ...(job.retry === undefined ? {} : { retry: job.retry }),
  };
}

/** A worker's finish: a job flagged for resubmission is enqueued again instead. */
export async function finishJob(
  tx: Transaction,
  keys: TypeKeys,
  job: Job,
  data: Buffer | undefined,
): Promise<'pending' | 'finished'> {
  const key = keys.job(job.id);
  return finishJobRead(tx, keys, job, data, key, await tx.get(key));
}

/** {@link finishJob} once the job's data key `key` read `read`. */
export function finishJobRead(
  tx: Transaction,
  keys: TypeKeys,
  job: Job,
  data: Buffer | undefined,
  key: Buffer,
  read: Buffer | undefined,
  once?: OncePerAttempt,
): 'pending' | 'finished' {
  const value = owned(keys, job, read);
  clearHandedOver(tx, keys.activityKeyOfRecord(value));
  countEndedRun(tx, keys, once, recordGroup(value));
  if (recordResubmit(value)) {
    // Given back (a rotation, a shutdown) or added again while it ran: its
    // attempts stay, as this run neither failed nor ended the job.
    const record = decodeJobRecord(value);
    const pending = pendingRecord(record.priority, record.scheduledTime, data ?? record.data, record.continuous, record.attempts, record.retryPolicy, record.traceContext, record.inFlow, record.group);
    writePending(tx, keys, job.id, pending, once, key);
    touchActivity(tx, keys, once);
    return 'pending';
  }
  // Only the header changes (and the data, when given): no decode; without
  // new data, no copy either (the value read is this call's own buffer).
  const finishedAt = logFinish(tx, keys, 'succeeded', job.id, once);
  const inFlow = recordInFlow(value);
  setHandedOver(tx, key, data === undefined ? finishRecordInPlace(value, 'succeeded', false, finishedAt) : finishedRecordBytes(value, data, finishedAt));
  touchActivity(tx, keys, once);
  if (inFlow) flowMemberEnded(tx, keys, job.id, 'succeeded');
  return 'finished';
}

/** A worker flags its own running job to run again when it finishes. */
export async function flagOwnJob(
  tx: Transaction,
  keys: TypeKeys,
  job: Job,
  priority: number | undefined,
  scheduledTime: number | undefined,
): Promise<Job> {
  const record = await ownRecord(tx, keys, job);
  const flagged: JobRecord = {
    ...record,
    resubmit: true,
    priority: priority ?? record.priority,
    scheduledTime: scheduledTime ?? record.scheduledTime,
  };
  tx.set(keys.job(job.id), encodeJobRecord(flagged));
  return {
    ...job,
    priority: flagged.priority,
    scheduledTime: flagged.scheduledTime,
    resubmit: true,
    continuous: record.continuous,
  };
}

export async function readJobInfo(tx: ReadTransaction, keys: TypeKeys, id: string): Promise<JobInfo | undefined> {
  const record = await readRecord(tx, keys, id);
  if (record === undefined) return undefined;
  const outcome = record.outcomeRow && record.outcome !== undefined ? await tx.get(keys.outcomeKey(record.outcome, id)) : undefined;
  const info = jobInfo(keys.type, id, record, outcome);
  const policy = record.retryPolicy ? await tx.get(keys.retryPolicyKey(id)) : undefined;
  if (policy !== undefined) info.retry = decodeRetryPolicy(policy);
  const traceContext = record.traceContext ? await tx.get(keys.traceContextKey(id)) : undefined;
  if (traceContext !== undefined) info.traceContext = decodeTraceContext(traceContext);
  if (record.inFlow === true) info.inFlow = true;
  return info;
}

/** A job's info from its record and, when it has one, its outcome row's value. */
export function jobInfo(type: string, id: string, record: JobRecord, outcomeValue?: Buffer): JobInfo {
  const info: JobInfo = {
    type,
    id,
    state: record.state,
    data: decodeJobData(record.data),
    priority: record.priority,
    scheduledTime: record.scheduledTime,
    resubmit: record.resubmit,
    continuous: record.continuous,
    attempts: record.attempts,
  };
  if (record.outcome !== undefined) info.outcome = record.outcome;
  if (record.group !== undefined) info.group = record.group;
  if (outcomeValue !== undefined) addOutcomeValue(info, record.outcome, outcomeValue);
  return info;
}
