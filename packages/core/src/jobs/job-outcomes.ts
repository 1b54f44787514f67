// The ends of a job that record how it ended, beside couch_jobs' `finish`
// (job-operations.ts), which replaces the job's data and counts as
// succeeded: a worker's `complete` and `fail` keep the job's data as it
// stands (the input that was added, or the last progress its worker stored)
// and put the run's result or error in the job's outcome row
// (outcome-rows.ts); a worker's `failAttempt` counts a failed attempt in the
// record and enqueues the job again for later; `cancel` ends a pending or
// running job as cancelled; `retry` runs a failed or cancelled job again.
//
// Bodies as in job-operations.ts: each reads, then checks, then writes,
// with no await between its checks and its writes, so one that fails with a
// JobsError has written nothing.

import { JobsError } from '../errors.js';
import type { Transaction } from '../storage/interfaces.js';
import { clearHandedOver, setHandedOver } from '../storage/fast-paths.js';
import type { Job } from './interfaces.js';
import { describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import { owned } from './job-operations.js';
import { decodeJobRecord, encodeJobRecord, finishRecordInPlace, MAX_ATTEMPTS, recordAttempts, recordGroup, recordInFlow, recordResubmit, withAttempts } from './job-record.js';
import { clearFinishedRows, countCancellation, pendingRecord, readRecord, touchActivity, writePending } from './job-transitions.js';
import { removePending } from './pending-queue.js';
import type { OncePerAttempt } from './pending-queue.js';
import { CANCELLED_ROW } from './outcome-rows.js';
import { countEndedRun } from './type-limits.js';
import { logFinish } from './finish-log.js';
import { flowMemberEnded, flowMemberRestarted } from './flow-work.js';

/** How a worker ends its run: `complete` or `fail`. */
export type RunOutcome = 'succeeded' | 'failed';

/**
 * A worker's `complete` (outcome `succeeded`, `row` its result if it gave
 * one) or `fail` (outcome `failed`, `row` its error), once the job's data key
 * `key` read `read`. The job's data stays. A failure counts as one more
 * failed attempt. A job flagged for resubmission (added again while it ran)
 * is enqueued again instead, with its data: a success starts its count of
 * attempts again.
 */
export function endJobRead(
  tx: Transaction,
  keys: TypeKeys,
  job: Job,
  outcome: RunOutcome,
  row: Buffer | undefined,
  key: Buffer,
  read: Buffer | undefined,
  once?: OncePerAttempt,
): 'pending' | 'finished' {
  const value = owned(keys, job, read);
  clearHandedOver(tx, keys.activityKeyOfRecord(value));
  countEndedRun(tx, keys, once, recordGroup(value));
  if (recordResubmit(value)) {
    const record = decodeJobRecord(value);
    const attempts = outcome === 'succeeded' ? 0 : Math.min(record.attempts + 1, MAX_ATTEMPTS);
    writePending(tx, keys, job.id, pendingRecord(record.priority, record.scheduledTime, record.data, record.continuous, attempts, record.retryPolicy, record.traceContext, record.inFlow, record.group), once, key);
    touchActivity(tx, keys, once);
    return 'pending';
  }
  // Only the header changes: no decode, no copy (the value read is this call's own buffer).
  const counted = outcome === 'failed' ? withAttempts(value, Math.min(recordAttempts(value) + 1, MAX_ATTEMPTS)) : value;
  if (row !== undefined) setHandedOver(tx, keys.outcomeKey(outcome, job.id), row);
  const finishedAt = logFinish(tx, keys, outcome, job.id, once);
  const inFlow = recordInFlow(counted);
  setHandedOver(tx, key, finishRecordInPlace(counted, outcome, row !== undefined, finishedAt));
  touchActivity(tx, keys, once);
  if (inFlow) flowMemberEnded(tx, keys, job.id, outcome);
  return 'finished';
}

/**
 * A worker's `failAttempt`: its run failed and the job runs again from
 * `scheduledTime` (epoch seconds), pending with its data, its count of
 * failed attempts `attempts` (one more than it had when undefined).
 */
export function failAttemptRead(
  tx: Transaction,
  keys: TypeKeys,
  job: Job,
  scheduledTime: number,
  attempts: number | undefined,
  key: Buffer,
  read: Buffer | undefined,
  once?: OncePerAttempt,
): 'pending' {
  const value = owned(keys, job, read);
  clearHandedOver(tx, keys.activityKeyOfRecord(value));
  const record = decodeJobRecord(value);
  countEndedRun(tx, keys, once, record.group);
  const count = attempts ?? Math.min(record.attempts + 1, MAX_ATTEMPTS);
  writePending(tx, keys, job.id, pendingRecord(record.priority, scheduledTime, record.data, record.continuous, count, record.retryPolicy, record.traceContext, record.inFlow, record.group), once, key);
  touchActivity(tx, keys, once);
  return 'pending';
}

/**
 * Ends a pending or running job as cancelled, its data kept; a running
 * job's worker gets `halt` at its next update or finish (its lock is gone,
 * as after `remove`). Resolves with whether this call ended it: false for a
 * job that had finished already. `not_found` when there is no such job.
 */
export async function cancelJob(tx: Transaction, keys: TypeKeys, id: string, once?: OncePerAttempt): Promise<boolean> {
  const record = await readRecord(tx, keys, id);
  if (record === undefined) throw new JobsError('not_found', `no job ${describe(id)} of type ${describe(keys.type)}`);
  if (record.state === 'finished') return false;
  if (record.state === 'pending') removePending(tx, keys, id, record.priority, record.scheduledTime, record.group);
  if (record.state === 'running') {
    if (record.seq !== undefined) tx.clear(keys.activityKey(record.seq));
    countCancellation(tx, keys);
    countEndedRun(tx, keys, once, record.group);
  }
  const finishedAt = logFinish(tx, keys, 'cancelled', id, once);
  tx.set(
    keys.job(id),
    encodeJobRecord({
      ...record,
      state: 'finished',
      seq: undefined,
      lock: undefined,
      resubmit: false,
      outcome: 'cancelled',
      outcomeRow: true,
      finishedAt,
    }),
  );
  tx.set(keys.outcomeKey('cancelled', id), CANCELLED_ROW);
  touchActivity(tx, keys, once);
  if (record.inFlow === true) flowMemberEnded(tx, keys, id, 'cancelled');
  return true;
}

/**
 * Runs a failed or cancelled job again: pending, due at `now`, with its
 * data and a fresh count of attempts; what its run left apart goes.
 * `not_found` when there is no such job, `not_retryable` when it did not
 * end failed or cancelled.
 */
export async function retryJob(tx: Transaction, keys: TypeKeys, id: string, now: number, once?: OncePerAttempt): Promise<void> {
  const record = await readRecord(tx, keys, id);
  if (record === undefined) throw new JobsError('not_found', `no job ${describe(id)} of type ${describe(keys.type)}`);
  if (record.outcome !== 'failed' && record.outcome !== 'cancelled') {
    const what = record.outcome === undefined ? record.state : record.outcome;
    throw new JobsError(
      'not_retryable',
      `job ${describe(id)} of type ${describe(keys.type)} is ${what}: only a failed or cancelled job is retried (add it again to run it anew)`,
    );
  }
  clearFinishedRows(tx, keys, id, record, once);
  writePending(tx, keys, id, pendingRecord(record.priority, Math.floor(now), record.data, record.continuous, 0, record.retryPolicy, record.traceContext, record.inFlow, record.group), once);
  touchActivity(tx, keys, once);
  if (record.inFlow === true) flowMemberRestarted(tx, keys, id);
}
