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
import { decodeJobData } from './job-data.js';
import { describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import { encodeJobRecord } from './job-record.js';
import type { JobRecord, JobState } from './job-record.js';
import {
  pendingRecord,
  readRecord,
  resubmitRecord,
  touchActivity,
  writePending,
  writeRunning,
} from './job-transitions.js';
import type { Changes } from './job-transitions.js';
import { removePending } from './pending-queue.js';
import type { Job, JobInfo } from './interfaces.js';

/** What `addJob` reads the type's timeout through: the transaction, or reads shared by a batch. */
export interface TimeoutReader {
  get(key: Buffer): Promise<Buffer | undefined>;
}

export async function addJob(
  tx: Transaction,
  keys: TypeKeys,
  id: string,
  changes: Changes,
  now: number,
  timeouts: TimeoutReader = tx,
): Promise<JobState> {
  const [timeout, current] = await Promise.all([timeouts.get(keys.typeTimeout), readRecord(tx, keys, id)]);
  if (timeout === undefined) {
    throw new JobsError('no_type_timeout', `set a timeout for job type ${describe(keys.type)} before adding jobs to it`);
  }
  if (current === undefined) {
    const record = pendingRecord(
      changes.priority ?? 0,
      changes.scheduledTime ?? Math.floor(now),
      changes.data,
      changes.continuous ?? false,
    );
    writePending(tx, keys, id, record);
    touchActivity(tx, keys);
    return 'pending';
  }
  return resubmitRecord(tx, keys, id, current, changes, now);
}

export async function removeJob(tx: Transaction, keys: TypeKeys, id: string): Promise<boolean> {
  const record = await readRecord(tx, keys, id);
  if (record === undefined) return false;
  if (record.state === 'pending') removePending(tx, keys, id, record.priority, record.scheduledTime);
  if (record.state === 'running' && record.seq) tx.clear(keys.activityKey(record.seq));
  tx.clear(keys.job(id));
  touchActivity(tx, keys);
  return true;
}

/** A job creator's resubmit: the job must exist. */
export async function resubmitJob(
  tx: Transaction,
  keys: TypeKeys,
  id: string,
  changes: Changes,
  now: number,
): Promise<JobState> {
  const current = await readRecord(tx, keys, id);
  if (current === undefined) throw new JobsError('not_found', `no job ${describe(id)} of type ${describe(keys.type)}`);
  return resubmitRecord(tx, keys, id, current, changes, now);
}

/** The job's record if `job.lock` still owns it, else `halt`. Reads with a conflict: lock checks are exact. */
export async function ownRecord(tx: Transaction, keys: TypeKeys, job: Job): Promise<JobRecord> {
  const record = await readRecord(tx, keys, job.id);
  if (record === undefined || record.state !== 'running' || record.lock !== job.lock) {
    const why =
      record === undefined
        ? 'it was removed'
        : record.state === 'running'
          ? 'another worker holds it now'
          : `it is ${record.state} now`;
    throw new JobsError('halt', `job ${describe(job.id)} of type ${describe(job.type)} is no longer yours: ${why}`);
  }
  return record;
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
  const record = await ownRecord(tx, keys, job);
  writeRunning(tx, keys, job.id, data === undefined ? record : { ...record, data }, userVersion);
  touchActivity(tx, keys);
  return {
    type: job.type,
    id: job.id,
    lock: job.lock,
    data: data === undefined ? job.data : decodeJobData(data),
    priority: record.priority,
    scheduledTime: record.scheduledTime,
    resubmit: record.resubmit,
    continuous: record.continuous,
  };
}

/** A worker's finish: a job flagged for resubmission is enqueued again instead. */
export async function finishJob(
  tx: Transaction,
  keys: TypeKeys,
  job: Job,
  data: Buffer | undefined,
): Promise<'pending' | 'finished'> {
  const record = await ownRecord(tx, keys, job);
  if (record.seq) tx.clear(keys.activityKey(record.seq));
  const next = pendingRecord(record.priority, record.scheduledTime, data ?? record.data, record.continuous);
  if (record.resubmit) {
    writePending(tx, keys, job.id, next);
  } else {
    tx.set(keys.job(job.id), encodeJobRecord({ ...next, state: 'finished' }));
  }
  touchActivity(tx, keys);
  return record.resubmit ? 'pending' : 'finished';
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
  return record === undefined ? undefined : jobInfo(keys.type, id, record);
}

export function jobInfo(type: string, id: string, record: JobRecord): JobInfo {
  return {
    type,
    id,
    state: record.state,
    data: decodeJobData(record.data),
    priority: record.priority,
    scheduledTime: record.scheduledTime,
    resubmit: record.resubmit,
    continuous: record.continuous,
  };
}
