// The checks a client makes before a call crosses to the owner. The wire
// carries more than JSON and changes what it cannot carry: a Map arrives as
// a plain object, a Set as an array, a function as nothing. Job data the
// owner would refuse could then arrive as data it accepts, or with another
// error. So the client runs the owner's own input checks, in the owner's
// order, on the arguments as the caller gave them, and the owner checks
// again what arrives.

import { JobsError } from '../errors.js';
import { checkAcceptOptions } from '../jobs/accept-calls.js';
import { decodeJobData, encodeJobData } from '../jobs/job-data.js';
import {
  ADD_OPTIONS,
  COMPLETE_ITEM,
  FAIL_ATTEMPT_OPTIONS,
  FAIL_ITEM,
  JOB_SPEC_OPTIONS,
  RESUBMIT_OPTIONS,
  WORKER_ITEM,
  checkArray,
  checkId,
  checkJobShape,
  checkOptions,
  checkType,
  describe,
} from '../jobs/job-input.js';
import type {
  AcceptOptions,
  AddOptions,
  CompleteItem,
  FailAttemptOptions,
  FailItem,
  Job,
  JobError,
  JobErrorInput,
  JobSpec,
  ResubmitOptions,
  WorkerItem,
} from '../jobs/interfaces.js';
import { encodeJobError } from '../jobs/outcome-rows.js';
import { checkFailAttemptValues, jobChanges } from '../jobs/write-calls.js';
import { checkPruneArguments } from '../jobs/prune-finished.js';

/** `add`'s arguments, as the owner checks them before it writes. */
export function checkAdd(type: unknown, id: unknown, data: unknown, options: AddOptions | undefined): void {
  const checked = checkOptions(options, ADD_OPTIONS);
  checkType(type);
  checkId(id);
  jobChanges(data, checked);
}

/** `addMany`'s arguments: every job is checked before anything is written. */
export function checkAddMany(type: unknown, jobs: readonly JobSpec[]): void {
  checkType(type);
  for (const spec of checkArray(jobs, "addMany's jobs")) {
    const checked = checkOptions(spec, JOB_SPEC_OPTIONS);
    checkId(checked.id);
    jobChanges(checked.data, checked);
  }
}

/** `pruneFinished`'s arguments. */
export function checkPrune(type: unknown, outcome: unknown, limits: unknown, options: unknown): void {
  checkType(type);
  checkPruneArguments(outcome, limits, options);
}

/** A job creator's `resubmit(type, id, options)`. */
export function checkResubmit(type: unknown, id: unknown, options: ResubmitOptions | undefined): void {
  checkType(type);
  checkId(id);
  const checked = checkOptions(options, RESUBMIT_OPTIONS);
  jobChanges(checked.data, checked);
}

/** A worker's `update` or `finish` of `job`, with new data or none. */
export function checkJobWrite(job: Job, data: unknown): void {
  const handle = checkJobShape(job);
  checkType(handle.type);
  checkId(handle.id);
  if (data !== undefined) encodeJobData(data);
}

/**
 * `accept`'s arguments, as the owner checks them before it takes anything;
 * answers the accept's signal, which stays in this process (an abort is
 * sent as a cancel).
 */
export function checkAccept(type: unknown, options: AcceptOptions | undefined): AbortSignal | undefined {
  checkType(type);
  return checkAcceptOptions(options).signal;
}

/** `acceptMany`'s arguments, as `checkAccept`. */
export function checkAcceptMany(type: unknown, max: unknown, options: AcceptOptions | undefined): AbortSignal | undefined {
  if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1) {
    throw new JobsError('invalid_option', `acceptMany's max is an integer >= 1, got ${describe(max)}`);
  }
  return checkAccept(type, options);
}

/** One item of `updateMany`/`finishMany`: refused on its own, as the owner refuses it. */
export function checkWorkerItem(item: WorkerItem): void {
  const checked = checkOptions(item, WORKER_ITEM);
  checkJobWrite(checked.job, checked.data);
}

/** One item of `completeMany`: refused on its own, as the owner refuses it. */
export function checkCompleteItem(item: CompleteItem): void {
  const checked = checkOptions(item, COMPLETE_ITEM);
  checkJobWrite(checked.job, checked.result);
}

/**
 * A worker's `fail` of `job`; answers the error as it is to cross: what the
 * owner stores of it (message, name, history). An Error itself would not
 * cross as one (the wire makes it an array, which the owner refuses).
 */
export function checkJobFail(job: Job, error: JobErrorInput): JobError {
  const handle = checkJobShape(job);
  checkType(handle.type);
  checkId(handle.id);
  return decodeJobData(encodeJobError(error)) as unknown as JobError;
}

/** One item of `failMany`, refused on its own as the owner refuses it; answers the item as it is to cross. */
export function checkFailItem(item: FailItem): FailItem {
  const checked = checkOptions(item, FAIL_ITEM);
  const error = checkJobFail(checked.job, checked.error);
  return { job: endingHandle(checked.job) as Job, error };
}

/** What the owner reads of a job handle to end its run (finish, complete, fail, failAttempt): the job, and the lock that proves the run is the caller's. */
export type EndingHandle = Pick<Job, 'type' | 'id' | 'lock'>;

/**
 * `job`, checked already, as the end of its run crosses: the owner's checks and its writes
 * read the type, the id and the lock alone, and the rest of the handle
 * (its data, above all) would be packed here and unpacked there for each
 * job for nothing.
 */
export function endingHandle(job: Job): EndingHandle {
  return { type: job.type, id: job.id, lock: job.lock };
}

/** One item of `finishMany`, checked, as it crosses: its job as an ending handle, its data only when given. */
export function crossingWorkerItem(item: WorkerItem): WorkerItem {
  checkWorkerItem(item);
  const job = endingHandle(item.job) as Job;
  return item.data === undefined ? { job } : { job, data: item.data };
}

/** One item of `completeMany`, checked, as it crosses: its job as an ending handle, its result only when given. */
export function crossingCompleteItem(item: CompleteItem): CompleteItem {
  checkCompleteItem(item);
  const job = endingHandle(item.job) as Job;
  return item.result === undefined ? { job } : { job, result: item.result };
}

/** A worker's `failAttempt` of `job`. */
export function checkFailAttempt(job: Job, options: FailAttemptOptions): void {
  const handle = checkJobShape(job);
  checkType(handle.type);
  checkId(handle.id);
  checkFailAttemptValues(checkOptions(options, FAIL_ATTEMPT_OPTIONS));
}
