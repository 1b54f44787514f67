// The state changes of one job, as couch_jobs_fdb makes them,
// each written inside a caller's transaction: pending -> running (accept),
// running -> pending (finish of a resubmitted job, re-enqueue of an inactive
// one), running -> finished, and add/resubmit of a job that exists. Every
// change of state re-stamps `watches_activity`, every enqueue bumps
// `watches_pending`, and a running job has exactly one activity row.
//
// These functions only compute from what they read in the transaction they
// are given, so the storage retry loop may run them again safely.

import { FdbError } from '../errors.js';
import type { ReadTransaction, Transaction } from '../storage/interfaces.js';
import {
  getMany,
  setHandedOver,
  setVersionstampedKeyHandedOver,
  setVersionstampedValueHandedOver,
} from '../storage/fast-paths.js';
import { isShortAscii, writeAscii } from '../keys/tuple-append.js';
import { TUPLE_VERSIONSTAMP_LENGTH } from '../keys/versionstamp.js';
import type { AcceptBatch } from './accept-batcher.js';
import { decodeJobDataAt, NULL_JOB_DATA } from './job-data.js';
import type { TypeKeys } from './job-keys.js';
import {
  decodeJobRecord,
  encodeJobRecord,
  RECORD_SEQ_OFFSET,
  recordAttempts,
  recordContinuous,
  recordDataOffset,
  recordPriority,
  recordRetryPolicy,
  recordScheduledTime,
  recordTraceContext,
  makeRunningUnderNewLock,
  recordGroup,
  recordState,
} from './job-record.js';
import type { JobRecord, JobState } from './job-record.js';
import { dequeuePending, enqueuePending, removePending, takePending } from './pending-queue.js';
import type { DequeuedJob, OncePerAttempt, PendingClaims } from './pending-queue.js';
import type { Job } from './interfaces.js';
import { uncountFinished } from './finish-log.js';
import { attachRetryPolicies, writeRetryPolicy } from './job-retry-policy.js';
import { attachTraceContexts, clearTraceContext, writeTraceContext } from './job-trace-context.js';
import { countEndedRun, takeUnderLimits } from './type-limits.js';
import { GroupTurns, hasGroupsIn } from './job-groups.js';
import type { GroupLimits } from './job-groups.js';
import { isPausedIn } from './type-pauses.js';
import { flowMemberRestarted } from './flow-work.js';

/** The value written to `watches_activity`: 10 bytes the commit fills + user version 0. */
const ACTIVITY_STAMP_TEMPLATE = Buffer.alloc(TUPLE_VERSIONSTAMP_LENGTH);

/** What an `add` or creator-side `resubmit` asks to change; `undefined` keeps the job's own. */
export interface Changes {
  data: Buffer | undefined;
  priority: number | undefined;
  scheduledTime: number | undefined;
  continuous: boolean | undefined;
  /** A new retry policy for the job, its row's value (see job-retry-policy.ts). */
  retry: Buffer | undefined;
  /** A new trace context for the job, its row's value (see job-trace-context.ts). */
  traceContext: Buffer | undefined;
  /** The job's group (see job-groups.ts): a new or finished job takes it, a pending one moves to it, a running one keeps its own. */
  group: string | undefined;
}

export async function readRecord(tx: ReadTransaction, keys: TypeKeys, id: string): Promise<JobRecord | undefined> {
  const value = await tx.get(keys.job(id));
  return value === undefined ? undefined : decodeJobRecord(value);
}

/**
 * The record of a job added new with `changes`, in a flow or not (a flow's
 * group is never set), its own retry policy and trace context rows written
 * beside it; the caller writes the record (pending, or waiting in a flow).
 */
export function newJobRecord(tx: Transaction, keys: TypeKeys, id: string, changes: Changes, now: number, inFlow: boolean): JobRecord {
  if (changes.retry !== undefined) writeRetryPolicy(tx, keys, id, changes.retry);
  if (changes.traceContext !== undefined) writeTraceContext(tx, keys, id, changes.traceContext);
  return pendingRecord(
    changes.priority ?? 0,
    changes.scheduledTime ?? Math.floor(now),
    changes.data,
    changes.continuous ?? false,
    0,
    changes.retry !== undefined,
    changes.traceContext !== undefined,
    inFlow,
    changes.group,
  );
}

/**
 * `attempts`: the failed attempts it has (0 for a new job, or one added
 * again after it finished); `retryPolicy` and `traceContext`: whether it
 * has a row of its own retry policy, of its trace context.
 */
export function pendingRecord(
  priority: number,
  scheduledTime: number,
  data: Buffer | undefined,
  continuous: boolean,
  attempts = 0,
  retryPolicy = false,
  traceContext = false,
  inFlow = false,
  group: string | undefined = undefined,
): JobRecord {
  return {
    state: 'pending',
    seq: undefined,
    lock: undefined,
    resubmit: false,
    continuous,
    priority,
    scheduledTime,
    attempts,
    outcome: undefined,
    outcomeRow: false,
    finishedAt: undefined,
    retryPolicy,
    traceContext,
    inFlow,
    group,
    data: data ?? NULL_JOB_DATA,
  };
}

/** `key`: the job's data key when the caller has it already (`keys.job(id)`); the transaction keeps it (no copy), so it must not change after. */
export function writePending(
  tx: Transaction,
  keys: TypeKeys,
  id: string,
  record: JobRecord,
  once?: OncePerAttempt,
  key: Buffer = keys.job(id),
): void {
  setHandedOver(tx, key, encodeJobRecord(record));
  enqueuePending(tx, keys, id, record.priority, record.scheduledTime, once, record.group);
}

/**
 * Writes an encoded running record under a fresh sequence (this commit's
 * versionstamp, which the commit fills in: see `makeRunningUnderNewLock`) at
 * `key`, and the job's activity row at that sequence; a previous activity
 * row is the caller's to clear. `key` and `value` are handed over (kept without a copy): never change them after.
 * `id`: the job's id, or its UTF-8 bytes, handed over likewise.
 */
export function writeRunningValue(
  tx: Transaction,
  keys: TypeKeys,
  key: Buffer,
  id: string | Buffer,
  value: Buffer,
  userVersion: number,
): void {
  setVersionstampedValueHandedOver(tx, key, value, RECORD_SEQ_OFFSET);
  const template = keys.activityTemplateFor(userVersion);
  setVersionstampedKeyHandedOver(tx, template.key, template.offset, typeof id === 'string' ? idBytes(id) : id);
}

/** The UTF-8 bytes of a job id (an activity row's value), short ASCII ids without a call into C++. */
function idBytes(id: string): Buffer {
  if (!isShortAscii(id)) return Buffer.from(id, 'utf8');
  const bytes = Buffer.allocUnsafe(id.length);
  writeAscii(bytes, 0, id);
  return bytes;
}

/**
 * Clears what a finished job's record has apart from it: its outcome row, if
 * it has one (see job-outcomes.ts); and uncounts it when it is logged (its
 * log entry goes stale: see finish-log.ts). Nothing for a job that is not finished.
 */
export function clearFinishedRows(tx: Transaction, keys: TypeKeys, id: string, record: JobRecord, once?: OncePerAttempt): void {
  if (record.outcome === undefined) return;
  if (record.outcomeRow) tx.clear(keys.outcomeKey(record.outcome, id));
  if (record.finishedAt !== undefined) uncountFinished(tx, keys, record.outcome, once);
}

/** Re-stamps `watches_activity`: notifiers and type monitors watch it. */
export function touchActivity(tx: Transaction, keys: TypeKeys, once?: OncePerAttempt): void {
  if (once !== undefined && !once.first(keys.watchesActivity)) return;
  tx.setVersionstampedValue(keys.watchesActivity, ACTIVITY_STAMP_TEMPLATE, 0);
}

/**
 * Counts a running job ended by someone other than its worker (removed or
 * cancelled): schedulers watch the count to abort that job's handler at
 * once rather than at their next heartbeat. Each end counts (adds in one
 * transaction fold into one operand).
 */
export function countCancellation(tx: Transaction, keys: TypeKeys): void {
  tx.atomicAdd(keys.watchesCancellations, 1);
}

/** `add`/`resubmit` of an existing job, by state. */
export function resubmitRecord(
  tx: Transaction,
  keys: TypeKeys,
  id: string,
  current: JobRecord,
  changes: Changes,
  now: number,
  once?: OncePerAttempt,
): JobState {
  const priority = changes.priority ?? current.priority;
  const continuous = changes.continuous ?? current.continuous;
  // A new policy replaces the job's; without one it keeps what it has.
  if (changes.retry !== undefined) writeRetryPolicy(tx, keys, id, changes.retry);
  const retryPolicy = changes.retry !== undefined || current.retryPolicy;
  if (changes.traceContext !== undefined) writeTraceContext(tx, keys, id, changes.traceContext);
  const traceContext = changes.traceContext !== undefined || current.traceContext;
  switch (current.state) {
    case 'finished': {
      // Enqueued again, a new run with a fresh count of attempts; without
      // new data it keeps its data (couch_jobs crashed here). What its last
      // run left apart goes: a pending job has no outcome, and its last
      // trace context is of the add it has just had only when that add
      // gave one (else its next run would join a finished trace).
      const scheduledTime = changes.scheduledTime ?? Math.floor(now);
      clearFinishedRows(tx, keys, id, current, once);
      if (changes.traceContext === undefined) clearTraceContext(tx, keys, id, current.traceContext);
      const group = changes.group ?? current.group;
      const record = pendingRecord(priority, scheduledTime, changes.data ?? current.data, continuous, 0, retryPolicy, changes.traceContext !== undefined, current.inFlow, group);
      writePending(tx, keys, id, record, once);
      touchActivity(tx, keys, once);
      if (current.inFlow === true) flowMemberRestarted(tx, keys, id);
      return 'pending';
    }
    case 'waiting': {
      // A flow's parent stays waiting for its children: its fields change, it is not enqueued.
      const scheduledTime = changes.scheduledTime ?? current.scheduledTime;
      const data = changes.data ?? current.data;
      const group = changes.group ?? current.group;
      tx.set(keys.job(id), encodeJobRecord({ ...current, priority, scheduledTime, data, continuous, retryPolicy, traceContext, group }));
      return 'waiting';
    }
    case 'pending': {
      const scheduledTime = changes.scheduledTime ?? current.scheduledTime;
      const data = changes.data ?? current.data;
      const group = changes.group ?? current.group;
      const moved = priority !== current.priority || scheduledTime !== current.scheduledTime || group !== current.group;
      if (
        !moved &&
        continuous === current.continuous &&
        retryPolicy === current.retryPolicy &&
        traceContext === current.traceContext &&
        data.equals(current.data)
      ) {
        return 'pending'; // nothing changed in the record
      }
      if (moved) {
        removePending(tx, keys, id, current.priority, current.scheduledTime, current.group);
        enqueuePending(tx, keys, id, priority, scheduledTime, once, group);
      }
      tx.set(keys.job(id), encodeJobRecord({ ...current, priority, scheduledTime, data, continuous, retryPolicy, traceContext, group }));
      return 'pending';
    }
    case 'running': {
      const scheduledTime = changes.scheduledTime ?? current.scheduledTime;
      if (
        current.resubmit &&
        priority === current.priority &&
        scheduledTime === current.scheduledTime &&
        continuous === current.continuous &&
        retryPolicy === current.retryPolicy &&
        traceContext === current.traceContext
      ) {
        return 'running';
      }
      // The worker owns the data of a running job: only the flags and the
      // schedule of the next run change.
      tx.set(keys.job(id), encodeJobRecord({ ...current, resubmit: true, priority, scheduledTime, continuous, retryPolicy, traceContext }));
      return 'running';
    }
  }
}

/**
 * Record bytes an accept transaction rewrites before it stops taking more
 * jobs. A record holds at most ~96 KiB of data, so the transaction stays
 * far below the 10,000,000-byte limit whatever the jobs hold.
 */
export const ACCEPT_BYTES_BUDGET = 2_000_000;

/**
 * An accept that runs in a write batch's transaction (a parked accept served
 * by the write that enqueued its job, see parked-accepts.ts).
 */
export interface SharedAccept {
  /** The first user version its jobs take: the batch's own writes use the lower ones. */
  userVersionBase: number;
  /** The batch's once-per-attempt writes (one activity re-stamp for all). */
  once: OncePerAttempt;
  /** Record bytes it may rewrite: what the other accepts of the batch left. */
  bytesBudget: number;
}

/**
 * The records of picked entries, read with read conflicts (an array at once
 * on the embedded engine). A record this transaction already made running
 * (its job taken from its own entry by an earlier pick of this accept, or
 * by another accept sharing the transaction) holds a versionstamped value
 * the store cannot read before the commit (`accessed_unreadable`): the
 * entry that led to it is stale, and reads as no record, which clears it.
 */
function readPickedRecords(tx: Transaction, keys: Buffer[]): (Buffer | undefined)[] | Promise<(Buffer | undefined)[]> {
  try {
    const read = getMany(tx, keys);
    return Array.isArray(read) ? read : read.catch((error: unknown) => readEachRecord(tx, keys, error));
  } catch (error) {
    return readEachRecord(tx, keys, error);
  }
}

/** The rare path of readPickedRecords: one read per key, the unreadable ones as absent; any other error is thrown on. */
async function readEachRecord(tx: Transaction, keys: Buffer[], error: unknown): Promise<(Buffer | undefined)[]> {
  if (!FdbError.is(error, 'accessed_unreadable')) throw error;
  const values: (Buffer | undefined)[] = [];
  for (const key of keys) {
    try {
      values.push(await tx.get(key));
    } catch (each) {
      if (!FdbError.is(each, 'accessed_unreadable')) throw each;
      values.push(undefined);
    }
  }
  return values;
}

/**
 * Takes up to `count` due jobs and makes each running under a fresh lock.
 * Each gets its own user version, so their activity rows differ although
 * they share this commit's versionstamp. A transaction that reaches its
 * byte budget stops early and says so (`truncated`); the jobs it picked but
 * did not take stay in the queue. With fewer than `watchUnder` jobs found it
 * also returns a watch on the pending counter (0: never). `now`: the
 * handle's clock (ms), which rate limits count on. `shared`: for an accept
 * that runs in a write batch's transaction (see SharedAccept).
 */
export function acceptJobs(
  tx: Transaction,
  keys: TypeKeys,
  maxScheduledTime: number | undefined,
  count: number,
  watchUnder: number,
  now: number,
  claims?: PendingClaims,
  shared?: SharedAccept,
): Promise<AcceptBatch> {
  return takeUnderLimits(tx, keys, count, watchUnder, now, (allowed, groupLimits) =>
    takeJobs(tx, keys, maxScheduledTime, allowed, Math.min(watchUnder, allowed), groupLimits, now, claims, shared),
  );
}

/** {@link acceptJobs} once the type's limits allow `count` jobs. */
async function takeJobs(
  tx: Transaction,
  keys: TypeKeys,
  maxScheduledTime: number | undefined,
  count: number,
  watchUnder: number,
  groupLimits: GroupLimits | undefined,
  now: number,
  claims?: PendingClaims,
  shared?: SharedAccept,
): Promise<AcceptBatch> {
  const jobs: Job[] = [];
  /** Indexes in `jobs` of those with their own retry policy, whose rows are read before the accept returns. */
  const withPolicy: number[] = [];
  /** Indexes in `jobs` of those that carry a trace context, read likewise. */
  const withTrace: number[] = [];
  let skippedClaims = false;
  let bytes = 0;
  const budget = shared?.bytesBudget ?? ACCEPT_BYTES_BUDGET;
  const userVersionBase = shared?.userVersionBase ?? 0;
  const once = shared?.once;
  // A paused type starts nothing: one read per take, answered at once on the embedded engine.
  const paused = isPausedIn(tx, keys);
  if (paused === true || (paused !== false && (await paused))) return pausedBatch(tx, keys, watchUnder);
  // A type that has had grouped jobs takes by turns (job-groups.ts); one snapshot read for any other.
  const grouped = hasGroupsIn(tx, keys);
  const turns = grouped === true || (grouped !== false && (await grouped)) ? new GroupTurns(tx, keys, groupLimits, now, claims, once) : undefined;
  for (;;) {
    // Reads answer at once on the embedded engine: no promise per batch, nor one per job.
    const dequeue = turns === undefined ? dequeuePending(tx, keys, maxScheduledTime, count - jobs.length, claims) : turns.pick(maxScheduledTime, count - jobs.length);
    const picked = dequeue instanceof Promise ? await dequeue : dequeue;
    skippedClaims ||= picked.skippedClaims;
    // Every record is read before anything is written (a read after a
    // write of the transaction goes through its buffered writes). Each
    // job's key is made once: read here, written below.
    const recordKeys = new Array<Buffer>(picked.jobs.length);
    for (let index = 0; index < recordKeys.length; index++) recordKeys[index] = (picked.jobs[index] as DequeuedJob).recordKey;
    const read = readPickedRecords(tx, recordKeys);
    const values = Array.isArray(read) ? read : await read;
    let truncated = false;
    let stale = 0;
    for (let index = 0; index < picked.jobs.length; index++) {
      if (bytes >= budget) {
        truncated = true;
        break;
      }
      const next = picked.jobs[index] as DequeuedJob;
      const value = values[index];
      takePending(tx, next.key, claims, next.claim);
      // Only the entry at the record's own (priority, scheduled time) is the
      // job's: any other is stale (now cleared). Were two entries of one job
      // taken by one batch, it would otherwise be handed out twice. The
      // record is read and rewritten as bytes: only its header changes.
      const own =
        value !== undefined &&
        recordState(value) === 'pending' &&
        recordPriority(value) === next.priority &&
        recordScheduledTime(value) === next.scheduledTime;
      turns?.taken(index, own);
      if (!own) {
        stale += 1;
        continue;
      }
      const userVersion = userVersionBase + jobs.length;
      const dataOffset = recordDataOffset(value);
      bytes += value.length - dataOffset;
      const data = decodeJobDataAt(value, dataOffset);
      const continuous = recordContinuous(value);
      const attempts = recordAttempts(value);
      if (recordRetryPolicy(value)) withPolicy.push(jobs.length);
      if (recordTraceContext(value)) withTrace.push(jobs.length);
      // What a read returned is the caller's own copy: made running in place.
      const lock = makeRunningUnderNewLock(value, userVersion);
      writeRunningValue(tx, keys, next.recordKey, next.idBytes ?? next.id, value, userVersion);
      const job: { -readonly [K in keyof Job]: Job[K] } = {
        type: keys.type,
        id: next.id,
        lock,
        data,
        priority: next.priority,
        scheduledTime: next.scheduledTime,
        resubmit: false,
        continuous,
        attempts,
      };
      if (turns !== undefined) {
        const group = recordGroup(value);
        if (group !== undefined) job.group = group;
      }
      jobs.push(job);
    }
    if (jobs.length === count || truncated) {
      turns?.settle();
      touchActivity(tx, keys, once);
      if (withPolicy.length > 0) await attachRetryPolicies(tx, keys, jobs, withPolicy);
      if (withTrace.length > 0) await attachTraceContexts(tx, keys, jobs, withTrace);
      return { jobs, watch: undefined, nextScheduledTime: undefined, skippedClaims, truncated, bytes };
    }
    // Stale entries took the place of jobs: pick again; the queue is shorter by them now.
    if (stale > 0) continue;
    turns?.settle();
    if (jobs.length > 0) touchActivity(tx, keys, once);
    if (withPolicy.length > 0) await attachRetryPolicies(tx, keys, jobs, withPolicy);
    if (withTrace.length > 0) await attachTraceContexts(tx, keys, jobs, withTrace);
    // Short because other batches hold the rest: their commits decide, not a watch.
    // Enough jobs for every request that would wait (see AcceptBatchBody): no watch.
    if (jobs.length >= watchUnder || skippedClaims) {
      return { jobs, watch: undefined, nextScheduledTime: picked.nextScheduledTime, skippedClaims, truncated: false, bytes };
    }
    if (turns !== undefined) {
      await tx.snapshot().get(keys.watchesPending);
      if (turns.heldByConcurrency) await tx.snapshot().get(keys.groups.endedRuns);
      const batch: AcceptBatch = { jobs, watch: turns.watch(tx), nextScheduledTime: picked.nextScheduledTime, skippedClaims, truncated: false, bytes };
      if (turns.limitedUntil !== undefined) batch.limitedUntil = turns.limitedUntil;
      return batch;
    }
    // The watch is created in the transaction that saw no due job: an
    // enqueue committed after our read version changes the counter and
    // fires it, so no job can slip in between the read and the wait.
    await tx.snapshot().get(keys.watchesPending);
    return {
      jobs,
      watch: tx.watch(keys.watchesPending),
      nextScheduledTime: picked.nextScheduledTime,
      skippedClaims,
      truncated: false,
      bytes,
    };
  }
}

/**
 * What a take of a paused type gets: no job, and (when a request would wait)
 * a watch on the pending counter, which a resume bumps.
 */
async function pausedBatch(tx: Transaction, keys: TypeKeys, watchUnder: number): Promise<AcceptBatch> {
  if (watchUnder <= 0) return { jobs: [], watch: undefined, nextScheduledTime: undefined, skippedClaims: false, truncated: false, bytes: 0 };
  await tx.snapshot().get(keys.watchesPending);
  return { jobs: [], watch: tx.watch(keys.watchesPending), nextScheduledTime: undefined, skippedClaims: false, truncated: false, bytes: 0 };
}

export async function reEnqueuePage(
  tx: Transaction,
  keys: TypeKeys,
  end: Buffer,
  size: number,
): Promise<{ ids: string[]; done: boolean }> {
  // Rows are cleared as they are handled, so each page starts at the front.
  const rows = await tx.getRange(keys.activity.range().begin, end, { limit: size });
  const records = await Promise.all(rows.map((row) => readRecord(tx, keys, row.value.toString('utf8'))));
  const ids: string[] = [];
  rows.forEach((row, index) => {
    tx.clear(row.key);
    const id = row.value.toString('utf8');
    const record = records[index];
    // A row whose job moved on (removed, or updated in between) is stale.
    if (record?.state !== 'running' || !record.seq || !keys.activityKey(record.seq).equals(row.key)) return;
    writePending(tx, keys, id, pendingRecord(record.priority, record.scheduledTime, record.data, record.continuous, record.attempts, record.retryPolicy, record.traceContext, record.inFlow, record.group));
    countEndedRun(tx, keys, undefined, record.group);
    ids.push(id);
  });
  if (rows.length > 0) touchActivity(tx, keys);
  return { ids, done: rows.length < size };
}
