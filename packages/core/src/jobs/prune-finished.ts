// Retention's removal: the finished jobs of one type and outcome beyond a
// policy (older than its age, or past its count, oldest first), found
// through the finish index (finish-index.ts) and removed a bounded batch per
// transaction, so that a prune never holds a large transaction against the
// writers of the hot path. A batch reads the index from its oldest row and
// the records those rows name; it writes nothing else.
//
// Before a type's first removal, its jobs finished before the index existed
// are given their rows (a scan of its records, a page per transaction):
// until then its count is short of them, and a removal by count would keep
// old jobs and remove newer ones.

import { JobsError } from '../errors.js';
import type { Transaction } from '../storage/interfaces.js';
import { getMany } from '../storage/fast-paths.js';
import { finishedCount, finishTimeBound, SCAN_DONE, writeFinishRow } from './finish-index.js';
import { describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import { recordFinishedAt, recordHasOutcomeRow, recordOutcome, recordRetryPolicy, setRecordFinishedAt } from './job-record.js';
import { clearRetryPolicy } from './job-retry-policy.js';
import type { JobOutcome } from './job-record.js';

/** The most jobs a prune removes (or indexes) in one transaction, and its default. */
export const MAX_PRUNE_BATCH = 500;
/** Record bytes the scan of jobs finished before the index rewrites in one transaction (far below the 10 MB limit). */
const SCAN_BYTES_BUDGET = 2_000_000;

/** What a prune keeps of the finished jobs of one type and outcome; a missing or infinite field keeps every job by that measure. */
export interface PruneLimits {
  /** Jobs that finished longer ago than this (seconds) go. */
  maxAgeSeconds?: number;
  /** Past this many, the oldest go. */
  maxCount?: number;
}

export interface PruneOptions {
  /** The time ages are measured at (epoch seconds); the system clock's now by default. */
  now?: number;
  /** The most jobs removed in this call's transaction: 1 to 500 (the default). */
  batchSize?: number;
}

/** What one prune call did. */
export interface PruneResult {
  /** Finished jobs removed. */
  removed: number;
  /** Jobs finished before the finish index existed that this call gave a row (removed by later calls). */
  indexed: number;
  /** Whether another call may find more to do: call again until it is false. */
  more: boolean;
}

/** Checks a prune's outcome, limits and options; `invalid_option` names what is wrong. */
export function checkPruneArguments(outcome: unknown, limits: unknown, options: unknown): void {
  if (outcome !== 'succeeded' && outcome !== 'failed' && outcome !== 'cancelled') {
    throw new JobsError('invalid_option', `a prune's outcome is 'succeeded', 'failed' or 'cancelled', got ${describe(outcome)}`);
  }
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) {
    throw new JobsError('invalid_option', `a prune's limits are { maxAgeSeconds?, maxCount? }, got ${describe(limits)}`);
  }
  for (const [name, value] of Object.entries(limits)) {
    if (name !== 'maxAgeSeconds' && name !== 'maxCount') {
      throw new JobsError('invalid_option', `unknown prune limit ${describe(name)}: the limits are maxAgeSeconds and maxCount`);
    }
    if (value === undefined || value === Number.POSITIVE_INFINITY) continue;
    const whole = name === 'maxCount';
    if (typeof value !== 'number' || !(value >= 0) || (whole && !Number.isSafeInteger(value)) || !Number.isFinite(value)) {
      const what = whole ? 'an integer' : 'a number of seconds';
      throw new JobsError('invalid_option', `a prune's ${name} is ${what} >= 0 or Infinity, got ${describe(value)}`);
    }
  }
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new JobsError('invalid_option', `a prune's options are { now?, batchSize? }, got ${describe(options)}`);
  }
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined) continue;
    if (name === 'now') {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new JobsError('invalid_option', `a prune's now is epoch seconds, got ${describe(value)}`);
    } else if (name === 'batchSize') {
      if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > MAX_PRUNE_BATCH) {
        throw new JobsError('invalid_option', `a prune's batchSize is an integer from 1 to ${MAX_PRUNE_BATCH}, got ${describe(value)}`);
      }
    } else {
      throw new JobsError('invalid_option', `unknown prune option ${describe(name)}: the options are now and batchSize`);
    }
  }
}

/**
 * One prune transaction: removes up to `batchSize` finished jobs of the
 * type that ended as `outcome` and are beyond `limits` at `now`, oldest
 * first; or, while the type's jobs finished before the index are not all
 * indexed, indexes a page of them instead.
 */
export async function pruneFinished(
  tx: Transaction,
  keys: TypeKeys,
  outcome: JobOutcome,
  limits: PruneLimits,
  now: number,
  batchSize: number,
): Promise<PruneResult> {
  const scan = await tx.get(keys.finishedScan);
  if (scan === undefined || !scan.equals(SCAN_DONE)) {
    const indexed = await indexUnindexedPage(tx, keys, scan, now, batchSize);
    return { removed: 0, indexed, more: true };
  }
  const maxCount = limits.maxCount ?? Number.POSITIVE_INFINITY;
  const maxAge = limits.maxAgeSeconds ?? Number.POSITIVE_INFINITY;
  const excess = Number.isFinite(maxCount) ? Math.max(0, (await finishedCount(tx, keys, outcome)) - maxCount) : 0;
  const range = keys.finished[outcome].range();
  // Only rows that are beyond the age are read, or the oldest `excess`.
  const end = Number.isFinite(maxAge) && excess === 0 ? finishTimeBound(keys, outcome, now - maxAge) : range.end;
  const limit = Number.isFinite(maxAge) ? batchSize : Math.min(batchSize, excess);
  if (limit === 0) return { removed: 0, indexed: 0, more: false };
  const rows = await tx.getRange(range.begin, end, { limit });
  const cutoff = now - maxAge;
  const chosen: { key: Buffer; id: string; finishedAt: number }[] = [];
  for (const row of rows) {
    const [finishedAt, id] = keys.finished[outcome].unpack(row.key);
    if (typeof finishedAt !== 'number' || typeof id !== 'string') {
      throw new JobsError('corrupt_record', `a finish index key does not decode to (time, id): ${row.key.toString('hex')}`);
    }
    // Oldest first: the first row within both limits ends the batch.
    if (chosen.length >= excess && !(finishedAt < cutoff)) break;
    chosen.push({ key: row.key, id, finishedAt });
  }
  if (chosen.length === 0) return { removed: 0, indexed: 0, more: false };
  const read = getMany(
    tx,
    chosen.map((each) => keys.job(each.id)),
  );
  const records = Array.isArray(read) ? read : await read;
  let removed = 0;
  chosen.forEach((each, index) => {
    const record = records[index];
    // The record is what the row says (finished so, at that time), or the row is stale: only it goes.
    const own = record !== undefined && recordOutcome(record) === outcome && recordFinishedAt(record) === each.finishedAt;
    tx.clear(each.key);
    if (!own) return;
    if (recordHasOutcomeRow(record)) tx.clear(keys.outcomeKey(outcome, each.id));
    clearRetryPolicy(tx, keys, each.id, recordRetryPolicy(record));
    tx.clear(keys.job(each.id));
    removed += 1;
  });
  // Every row read goes, each uncounted: one add for the batch.
  tx.atomicAdd(keys.finishedCount[outcome], -chosen.length);
  // Fewer than a batch: what is left is within the limits (as far as this transaction saw).
  return { removed, indexed: 0, more: chosen.length === batchSize };
}

/**
 * Gives a page of the type's jobs finished before the index existed their
 * rows, as if they finished at `now`, from where the last page ended
 * (`scan`: the last data key read, or undefined at the start); marks the
 * type done after its last page. Resolves with how many it indexed. Reads
 * the records as a snapshot (no conflict with the writers of the other jobs
 * of the page) and with a conflict the ones it rewrites.
 */
async function indexUnindexedPage(tx: Transaction, keys: TypeKeys, scan: Buffer | undefined, now: number, size: number): Promise<number> {
  const range = keys.data.range();
  const begin = scan === undefined ? range.begin : Buffer.concat([scan, Buffer.of(0)]);
  const rows = await tx.snapshot().getRange(begin, range.end, { limit: size });
  let indexed = 0;
  let bytes = 0;
  let last: Buffer | undefined;
  for (const row of rows) {
    if (bytes >= SCAN_BYTES_BUDGET) break;
    last = row.key;
    const outcome = recordOutcome(row.value);
    if (outcome === undefined || recordFinishedAt(row.value) !== undefined) continue;
    const [id] = keys.data.unpack(row.key);
    if (typeof id !== 'string') continue;
    tx.addReadConflictKey(row.key);
    tx.set(row.key, setRecordFinishedAt(Buffer.from(row.value), now));
    writeFinishRow(tx, keys, outcome, id, now);
    bytes += row.value.length;
    indexed += 1;
  }
  const done = rows.length < size && last === rows[rows.length - 1]?.key;
  tx.set(keys.finishedScan, done ? SCAN_DONE : (last ?? begin));
  return indexed;
}
