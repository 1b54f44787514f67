// Retention's removal: the finished jobs of one type and outcome beyond a
// policy (older than its age, or past its count, oldest first), found
// through the finish log (finish-log.ts) and removed a bounded batch per
// transaction, so that a prune never holds a large transaction against the
// writers of the hot path. A batch reads the log from its oldest row and
// the records its entries name; an entry whose job is no longer finished so
// at that time (removed, added again, retried since) is stale: dropped from
// its row, the job left alone. A row partly pruned is rewritten with the
// entries it has left.
//
// Before a type's first removal, its jobs finished before the log existed
// are logged (a scan of its records, a page per transaction): until then
// its count is short of them, and a removal by count would keep old jobs
// and remove newer ones.

import { JobsError } from '../errors.js';
import type { Transaction } from '../storage/interfaces.js';
import { getMany } from '../storage/fast-paths.js';
import { countFinished, finishedCount, finishTimeBound, packIds, SCAN_DONE, unpackIds, writeLogRows } from './finish-log.js';
import { describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import { recordFinishedAt, recordHasOutcomeRow, recordInFlow, recordOutcome, recordRetryPolicy, recordTraceContext, setRecordFinishedAt } from './job-record.js';
import { clearPrunedRows } from './flow-rows.js';
import { clearRetryPolicy } from './job-retry-policy.js';
import { clearTraceContext } from './job-trace-context.js';
import type { JobOutcome } from './job-record.js';

/** The most log entries a prune reads (or jobs it logs) in one transaction, and its default. */
export const MAX_PRUNE_BATCH = 500;
/** Log rows a prune reads at a time. */
const ROWS_PER_READ = 16;
/** Record bytes the scan of jobs finished before the log rewrites in one transaction (far below the 10 MB limit). */
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
  /** The most log entries this call's transaction reads (and so jobs it removes): 1 to 500 (the default). */
  batchSize?: number;
}

/** What one prune call did. */
export interface PruneResult {
  /** Finished jobs removed. */
  removed: number;
  /** Jobs finished before the finish log existed that this call logged (removed by later calls). */
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
 * One prune transaction: removes finished jobs of the type that ended as
 * `outcome` and are beyond `limits` at `now`, oldest first, reading at most
 * `batchSize` log entries; or, while the type's jobs finished before the
 * log are not all logged, logs a page of them instead.
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
    const indexed = await logUnloggedPage(tx, keys, scan, now, batchSize);
    return { removed: 0, indexed, more: true };
  }
  const maxCount = limits.maxCount ?? Number.POSITIVE_INFINITY;
  const maxAge = limits.maxAgeSeconds ?? Number.POSITIVE_INFINITY;
  const excess = Number.isFinite(maxCount) ? Math.max(0, (await finishedCount(tx, keys, outcome)) - maxCount) : 0;
  if (excess === 0 && !Number.isFinite(maxAge)) return { removed: 0, indexed: 0, more: false };
  const cutoff = now - maxAge;
  const log = keys.finishLog[outcome];
  // Only rows beyond the age are read, unless some go by count.
  const end = excess === 0 ? finishTimeBound(keys, outcome, cutoff) : log.range().end;
  let begin = log.range().begin;
  let read = 0;
  let removed = 0;
  let within = false;
  let exhausted = false;
  while (!within && !exhausted && read < batchSize) {
    const rows = await tx.getRange(begin, end, { limit: ROWS_PER_READ });
    for (const row of rows) {
      const [finishedAt] = log.unpack(row.key);
      if (typeof finishedAt !== 'number') {
        throw new JobsError('corrupt_record', `a finish log key does not decode to (time, seq): ${row.key.toString('hex')}`);
      }
      // Oldest first: the first live entry within both limits ends the prune.
      if (removed >= excess && !(finishedAt < cutoff)) {
        within = true;
        break;
      }
      const ids = unpackIds(row.value);
      const taken = ids.length <= batchSize - read ? ids : ids.slice(0, batchSize - read);
      const reading = getMany(
        tx,
        taken.map((id) => keys.job(id)),
      );
      const records = Array.isArray(reading) ? reading : await reading;
      let done = 0;
      for (; done < taken.length; done++) {
        const id = taken[done] as string;
        const record = records[done];
        // Stale (the job is no longer finished so, at that time): dropped, the job left alone.
        if (record === undefined || recordOutcome(record) !== outcome || recordFinishedAt(record) !== finishedAt) continue;
        if (removed >= excess && !(finishedAt < cutoff)) {
          within = true;
          break;
        }
        if (recordHasOutcomeRow(record)) tx.clear(keys.outcomeKey(outcome, id));
        clearRetryPolicy(tx, keys, id, recordRetryPolicy(record));
        clearTraceContext(tx, keys, id, recordTraceContext(record));
        if (recordInFlow(record)) clearPrunedRows(tx, keys.type, id);
        tx.clear(keys.job(id));
        removed += 1;
      }
      read += done;
      if (done === ids.length) tx.clear(row.key);
      else if (done > 0) tx.set(row.key, packIds(ids.slice(done)));
      if (within || read >= batchSize) break;
    }
    if (rows.length < ROWS_PER_READ) exhausted = true;
    else begin = Buffer.concat([(rows[rows.length - 1] as { key: Buffer }).key, Buffer.of(0)]);
  }
  // Every job removed is uncounted: one add for the batch.
  if (removed > 0) tx.atomicAdd(keys.finishedCount[outcome], -removed);
  // Stopped by the budget: what is left may still be beyond the limits.
  return { removed, indexed: 0, more: !within && read >= batchSize };
}

/**
 * Logs a page of the type's jobs finished before the log existed, as if
 * they finished at `now` (a row per outcome), from where the last page ended
 * (`scan`: the last data key read, or undefined at the start); marks the
 * type done after its last page. Resolves with how many it logged. Reads
 * the records as a snapshot (no conflict with the writers of the other jobs
 * of the page) and with a conflict the ones it rewrites.
 */
async function logUnloggedPage(tx: Transaction, keys: TypeKeys, scan: Buffer | undefined, now: number, size: number): Promise<number> {
  const range = keys.data.range();
  const begin = scan === undefined ? range.begin : Buffer.concat([scan, Buffer.of(0)]);
  const rows = await tx.snapshot().getRange(begin, range.end, { limit: size });
  const logged: Record<JobOutcome, string[]> = { succeeded: [], failed: [], cancelled: [] };
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
    logged[outcome].push(id);
    bytes += row.value.length;
  }
  let indexed = 0;
  for (const outcome of ['succeeded', 'failed', 'cancelled'] as const) {
    const ids = logged[outcome];
    if (ids.length === 0) continue;
    writeLogRows(tx, keys, outcome, now, ids);
    countFinished(tx, keys.finishedCount[outcome], ids.length, undefined);
    indexed += ids.length;
  }
  const done = rows.length < size && last === rows[rows.length - 1]?.key;
  tx.set(keys.finishedScan, done ? SCAN_DONE : (last ?? begin));
  return indexed;
}
