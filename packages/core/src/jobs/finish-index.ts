// The finish index: (finished, outcome, type, time, id) -> '' for every
// finished job, by the time it finished, and a count of its rows per type
// and outcome. Retention (prune-finished.ts) reads it to find the oldest
// finished jobs and how many there are without reading the jobs
// themselves. The row is written in the transaction that finishes the job
// (the record keeps the time: job-record.ts) and cleared in the one that
// ends its finished state (removed, added again, retried, pruned).
//
// Jobs finished before the index existed have no row (their record's time
// is 0). A type is indexed once in the background, page by page, from the
// first prune on: each such job gets a row as if it finished at the time of
// that scan. `(finished_scan, type)` holds how far the scan got: absent
// (not begun), the last data key it read, or DONE. A type whose timeout is
// first set while it has no jobs at all has nothing to scan: it is marked
// DONE then.

import type { Transaction } from '../storage/interfaces.js';
import { setHandedOver } from '../storage/fast-paths.js';
import { appendTupleString, copyPrefix, isShortAscii, TUPLE_DOUBLE_BYTES, TUPLE_STRING_CODE, writeAscii, writeTupleDouble } from '../keys/tuple-append.js';
import type { TypeKeys } from './job-keys.js';
import type { JobOutcome } from './job-record.js';
import type { OncePerAttempt } from './pending-queue.js';

const EMPTY = Buffer.alloc(0);
/** The value of `(finished_scan, type)` once every job of the type finished before the index has its row. */
export const SCAN_DONE = Buffer.of(0);

/** The time a finish is stamped with: epoch seconds, to the millisecond. */
export function finishTime(): number {
  return Date.now() / 1000;
}

/** The index row of the job `id`, which finished as `outcome` at `finishedAt`. */
export function finishKey(keys: TypeKeys, outcome: JobOutcome, finishedAt: number, id: string): Buffer {
  const prefix = keys.finished[outcome].prefix;
  const ascii = isShortAscii(id);
  // A NUL in the id needs escaping: rare, so left to the general path.
  if (!ascii && id.includes('\u0000')) return appendTupleString(finishTimeBound(keys, outcome, finishedAt), id);
  // One allocation for the whole key: every finish builds one.
  const length = ascii ? id.length : Buffer.byteLength(id, 'utf8');
  const at = prefix.length + TUPLE_DOUBLE_BYTES;
  const key = Buffer.allocUnsafe(at + length + 2);
  copyPrefix(key, prefix);
  writeTupleDouble(key, prefix.length, finishedAt);
  key[at] = TUPLE_STRING_CODE;
  if (ascii) writeAscii(key, at + 1, id);
  else key.write(id, at + 1, length, 'utf8');
  key[key.length - 1] = 0x00;
  return key;
}

/** The first index row of `outcome` after every job that finished before `time`. */
export function finishTimeBound(keys: TypeKeys, outcome: JobOutcome, time: number): Buffer {
  const prefix = keys.finished[outcome].prefix;
  const bound = Buffer.allocUnsafe(prefix.length + TUPLE_DOUBLE_BYTES);
  copyPrefix(bound, prefix);
  writeTupleDouble(bound, prefix.length, time);
  return bound;
}

/**
 * Writes the index row of a job that finished as `outcome` at `finishedAt`,
 * and counts it: with `once` (a write batch's attempt), in the one add the
 * attempt makes to the count.
 */
export function writeFinishRow(tx: Transaction, keys: TypeKeys, outcome: JobOutcome, id: string, finishedAt: number, once?: OncePerAttempt): void {
  setHandedOver(tx, finishKey(keys, outcome, finishedAt, id), EMPTY);
  countFinished(tx, keys.finishedCount[outcome], 1, once);
}

/** Clears the index row of a job that finished as `outcome` at `finishedAt` (its record's time), and uncounts it. */
export function clearFinishRow(tx: Transaction, keys: TypeKeys, outcome: JobOutcome, id: string, finishedAt: number, once?: OncePerAttempt): void {
  tx.clear(finishKey(keys, outcome, finishedAt, id));
  countFinished(tx, keys.finishedCount[outcome], -1, once);
}

function countFinished(tx: Transaction, key: Buffer, delta: number, once: OncePerAttempt | undefined): void {
  if (once?.add !== undefined) once.add(key, delta);
  else tx.atomicAdd(key, delta);
}

/** How many rows the index of `outcome` holds for the type (read as a snapshot: no conflict with finishes). */
export async function finishedCount(tx: Transaction, keys: TypeKeys, outcome: JobOutcome): Promise<number> {
  const value = await tx.snapshot().get(keys.finishedCount[outcome]);
  if (value === undefined || value.length < 8) return 0;
  // A count is never negative: a transient wrap (a clear counted before its write) reads as 0.
  const count = value.readBigInt64LE(0);
  return count < 0n ? 0 : Number(count);
}
