// The finish log: (finished_log, type, outcome, time, seq) -> the ids of
// jobs of the type that finished as that outcome at that time (epoch
// seconds), and a count of the type's jobs finished so. Retention
// (prune-finished.ts) reads it oldest first to find what to remove without
// reading every finished job. A write batch's attempt stamps all its
// finishes with one time and writes one row per type and outcome for them
// (a row per job cost the hot path more than the finish itself); a single
// finish writes a row of its own. `seq` keeps rows of the same time apart:
// this process's random tag and a counter, so writers never conflict.
//
// A row is never updated when one of its jobs stops being finished so
// (removed, added again, retried): the job's record says whether an entry
// still holds (the same outcome, the same finish time: job-record.ts), and
// a prune skips and drops the entries that no longer do. The count is of
// the jobs themselves: a finish adds one, whatever ends the finished state
// takes one.
//
// Jobs finished before the log existed have no entry (their record's time
// is 0). A type is logged once in the background, page by page, from the
// first prune on: each such job is logged as if it finished at the time of
// that scan. `(finished_scan, type)` holds how far the scan got: absent
// (not begun), the last data key it read, or DONE. A type whose timeout is
// first set while it has no jobs at all has nothing to scan: it is marked
// DONE then.

import { randomBytes } from 'node:crypto';
import { pack } from 'fdb-tuple';
import { JobsError } from '../errors.js';
import type { Transaction } from '../storage/interfaces.js';
import { setHandedOver } from '../storage/fast-paths.js';
import { copyPrefix, TUPLE_DOUBLE_BYTES, writeTupleDouble } from '../keys/tuple-append.js';
import type { TypeKeys } from './job-keys.js';
import type { JobOutcome } from './job-record.js';
import type { OncePerAttempt } from './pending-queue.js';

/** The value of `(finished_scan, type)` once every job of the type finished before the log has its entry. */
export const SCAN_DONE = Buffer.of(0);
/** The most id bytes one log row holds: a batch with more writes more rows (a value's limit is 100,000 bytes). */
const MAX_ROW_BYTES = 60_000;

/** This process's tag in the `seq` of its log rows, and how many it wrote. */
const PROCESS_TAG = randomBytes(8);
let rowsWritten = 0;

/** The time a finish is stamped with: epoch seconds, to the millisecond. */
export function finishTime(): number {
  return Date.now() / 1000;
}

/** The first log row of `outcome` after every row of jobs that finished before `time`. */
export function finishTimeBound(keys: TypeKeys, outcome: JobOutcome, time: number): Buffer {
  const prefix = keys.finishLog[outcome].prefix;
  const bound = Buffer.allocUnsafe(prefix.length + TUPLE_DOUBLE_BYTES);
  copyPrefix(bound, prefix);
  writeTupleDouble(bound, prefix.length, time);
  return bound;
}

/** A fresh log row key of `outcome` at `time`. */
function logRowKey(keys: TypeKeys, outcome: JobOutcome, time: number): Buffer {
  const seq = Buffer.allocUnsafe(PROCESS_TAG.length + 6);
  PROCESS_TAG.copy(seq, 0);
  rowsWritten = (rowsWritten + 1) % 2 ** 48;
  seq.writeUIntBE(rowsWritten, PROCESS_TAG.length, 6);
  return Buffer.concat([finishTimeBound(keys, outcome, time), pack([seq])]);
}

/** Ids packed one after another, each as its UTF-8 length (7 bits a byte, low first) and its bytes. */
export function packIds(ids: readonly string[]): Buffer {
  let size = 0;
  for (const id of ids) {
    const length = Buffer.byteLength(id, 'utf8');
    size += length + lengthBytes(length);
  }
  const packed = Buffer.allocUnsafe(size);
  let at = 0;
  for (const id of ids) {
    let length = Buffer.byteLength(id, 'utf8');
    const bytes = length;
    while (length >= 0x80) {
      packed[at++] = (length & 0x7f) | 0x80;
      length >>>= 7;
    }
    packed[at++] = length;
    at += packed.write(id, at, bytes, 'utf8');
  }
  return packed;
}

/** The ids of a log row's value (see packIds). */
export function unpackIds(value: Buffer): string[] {
  const ids: string[] = [];
  let at = 0;
  while (at < value.length) {
    let length = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = value[at++] ?? 0;
      length += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80 && at < value.length);
    if (at + length > value.length) throw new JobsError('corrupt_record', `a finish log row's ids are cut short: ${value.toString('hex')}`);
    ids.push(value.toString('utf8', at, at + length));
    at += length;
  }
  return ids;
}

function lengthBytes(length: number): number {
  let bytes = 1;
  while (length >= 0x80) {
    length >>>= 7;
    bytes += 1;
  }
  return bytes;
}

/** Writes log rows of `outcome` at `time` holding `ids` (more than one row past MAX_ROW_BYTES). */
export function writeLogRows(tx: Transaction, keys: TypeKeys, outcome: JobOutcome, time: number, ids: readonly string[]): void {
  let from = 0;
  let bytes = 0;
  for (let index = 0; index < ids.length; index++) {
    const size = (ids[index] as string).length * 3 + 3;
    if (bytes + size > MAX_ROW_BYTES && index > from) {
      setHandedOver(tx, logRowKey(keys, outcome, time), packIds(ids.slice(from, index)));
      from = index;
      bytes = 0;
    }
    bytes += size;
  }
  if (from < ids.length) setHandedOver(tx, logRowKey(keys, outcome, time), packIds(from === 0 ? ids : ids.slice(from)));
}

/**
 * Logs and counts the finish of job `id` as `outcome`, and returns the time
 * to stamp its record with. With `once` (a write batch's attempt), the
 * attempt's time and its one row for the type and outcome, written at its
 * end; else a row of its own, now.
 */
export function logFinish(tx: Transaction, keys: TypeKeys, outcome: JobOutcome, id: string, once?: OncePerAttempt): number {
  const key = keys.finishedCount[outcome];
  const batched = once?.logFinish?.(keys, outcome, id);
  if (batched !== undefined) {
    countFinished(tx, key, 1, once);
    return batched;
  }
  const finishedAt = finishTime();
  writeLogRows(tx, keys, outcome, finishedAt, [id]);
  countFinished(tx, key, 1, once);
  return finishedAt;
}

/** Uncounts a job that was finished as `outcome` (its log entry goes stale: see the top of this file). */
export function uncountFinished(tx: Transaction, keys: TypeKeys, outcome: JobOutcome, once?: OncePerAttempt): void {
  countFinished(tx, keys.finishedCount[outcome], -1, once);
}

export function countFinished(tx: Transaction, key: Buffer, delta: number, once: OncePerAttempt | undefined): void {
  if (once?.add !== undefined) once.add(key, delta);
  else tx.atomicAdd(key, delta);
}

/** How many of the type's jobs are finished as `outcome` and logged (read as a snapshot: no conflict with finishes). */
export async function finishedCount(tx: Transaction, keys: TypeKeys, outcome: JobOutcome): Promise<number> {
  const value = await tx.snapshot().get(keys.finishedCount[outcome]);
  if (value === undefined || value.length < 8) return 0;
  // A count is never negative: a transient wrap (an uncount added before its count) reads as 0.
  const count = value.readBigInt64LE(0);
  return count < 0n ? 0 : Number(count);
}
