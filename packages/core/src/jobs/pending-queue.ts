// Re-creates couch_jobs_pending (seed 000): the pending queue of one job type.
//
// Keys are (pending, type, -priority, scheduledTime, id), so the best job
// (highest priority, then oldest scheduled time) is the first key of the
// range. A dequeue reads only from the front, with small limits: its cost
// does not grow with the length of the queue (only with the number of
// priority levels whose jobs are all scheduled in the future).

import type { ReadTransaction, Transaction } from '../storage/interfaces.js';
import { keyAfterPrefix } from '../keys/subspace.js';
import { parsePendingKey } from './job-keys.js';
import type { TypeKeys } from './job-keys.js';

/**
 * How many jobs of equal rank a worker picks from at random. Workers that
 * all took the first key would all conflict on it; spreading them over the
 * front keeps most accepts conflict-free (the seed reads up to 256/1024).
 */
export const FRONT_CANDIDATES = 32;

export function enqueuePending(tx: Transaction, keys: TypeKeys, id: string, priority: number, scheduledTime: number): void {
  tx.set(keys.pendingKey(priority, scheduledTime, id), EMPTY);
  // Wakes workers blocked in accept (they watch this counter).
  tx.atomicAdd(keys.watchesPending, 1);
}

export function removePending(tx: Transaction, keys: TypeKeys, id: string, priority: number, scheduledTime: number): void {
  tx.clear(keys.pendingKey(priority, scheduledTime, id));
}

export type DequeueResult =
  | { found: true; id: string; priority: number; scheduledTime: number }
  /** Nothing due; `nextScheduledTime` is the earliest future job, if any. */
  | { found: false; nextScheduledTime: number | undefined };

/**
 * Takes the best due job out of the queue: its key is cleared and added to
 * the read-conflict set, so two workers that pick the same job cannot both
 * commit. Reads are snapshot reads: jobs added meanwhile do not conflict.
 *
 * `maxScheduledTime` undefined means "ignore scheduled times" (noSchedule):
 * any job of the best priority qualifies.
 */
export async function dequeuePending(
  tx: Transaction,
  keys: TypeKeys,
  maxScheduledTime: number | undefined,
): Promise<DequeueResult> {
  const snapshot = tx.snapshot();
  const range = keys.pending.range();
  let start = range.begin;
  let nextScheduledTime: number | undefined;
  for (;;) {
    const [front] = await snapshot.getRange(start, range.end, { limit: 1 });
    if (front === undefined) return { found: false, nextScheduledTime };
    const head = parsePendingKey(keys, front.key);
    if (maxScheduledTime !== undefined && head.scheduledTime > maxScheduledTime) {
      // This priority's earliest job is not due: so is every other job of
      // this priority. Skip to the next priority.
      nextScheduledTime = Math.min(nextScheduledTime ?? head.scheduledTime, head.scheduledTime);
      start = keyAfterPrefix(keys.pendingPriorityPrefix(head.priority));
      continue;
    }
    // Jobs of equal rank: the same priority and (unless scheduled times are
    // ignored) the same scheduled time. Any of them is a correct pick.
    const rank =
      maxScheduledTime === undefined
        ? keys.pendingPriorityPrefix(head.priority)
        : keys.pendingRankPrefix(head.priority, head.scheduledTime);
    const picked = await pickRandom(snapshot, front.key, keyAfterPrefix(rank));
    const job = parsePendingKey(keys, picked);
    tx.addReadConflictKey(picked);
    tx.clear(picked);
    return { found: true, ...job };
  }
}

async function pickRandom(snapshot: ReadTransaction, begin: Buffer, end: Buffer): Promise<Buffer> {
  const candidates = await snapshot.getRange(begin, end, { limit: FRONT_CANDIDATES });
  const pick = candidates[Math.floor(Math.random() * candidates.length)];
  return pick?.key ?? begin;
}

/**
 * Counts pending keys of one page, from `start`, up to `limit` keys read;
 * with `maxScheduledTime` only due jobs count. Returns where to continue.
 */
export async function countPendingPage(
  tx: ReadTransaction,
  keys: TypeKeys,
  start: Buffer,
  limit: number,
  maxScheduledTime: number | undefined,
): Promise<{ count: number; next: Buffer | undefined }> {
  const rows = await tx.getRange(start, keys.pending.range().end, { limit });
  let count = 0;
  for (const row of rows) {
    if (maxScheduledTime === undefined || parsePendingKey(keys, row.key).scheduledTime <= maxScheduledTime) count += 1;
  }
  const last = rows.at(-1);
  return { count, next: rows.length < limit || last === undefined ? undefined : Buffer.concat([last.key, ZERO]) };
}

const EMPTY = Buffer.alloc(0);
const ZERO = Buffer.of(0);
