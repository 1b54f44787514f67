// Re-creates couch_jobs_pending: the pending queue of one job type.
//
// Keys are (pending, type, -priority, scheduledTime, id), so the best job
// (highest priority, then oldest scheduled time) is the first key of the
// range. A dequeue reads only from the front, with small limits: its cost
// does not grow with the length of the queue (only with the number of
// priority levels whose jobs are all scheduled in the future).

import type { KeyValue, ReadTransaction, Transaction } from '../storage/interfaces.js';
import { clearHandedOver, setHandedOver } from '../storage/embedded/handed-over-writes.js';
import { keyAfterPrefix } from '../keys/subspace.js';
import { hasPrefix } from '../keys/has-prefix.js';
import { parsePendingKey } from './job-keys.js';
import type { TypeKeys } from './job-keys.js';

/**
 * Writes that the calls sharing one transaction attempt need only once
 * (the write batcher gives one per attempt): bumping `watches_pending` or
 * re-stamping `watches_activity` once wakes the same watchers as doing it
 * for every job of the batch.
 */
export interface OncePerAttempt {
  /** True the first time `key` is asked about in this attempt. */
  first(key: Buffer): boolean;
  /**
   * Told of every job the attempt enqueues: a write batch serves the
   * accepts parked on its types before it commits (see parked-accepts.ts).
   */
  enqueued?(keys: TypeKeys, scheduledTime: number): void;
}

/**
 * How many jobs of equal rank a worker picks from at random. Workers that
 * all took the first key would all conflict on it; spreading them over the
 * front keeps most accepts conflict-free (couch_jobs_pending reads up to 256/1024).
 */
export const FRONT_CANDIDATES = 32;

export function enqueuePending(
  tx: Transaction,
  keys: TypeKeys,
  id: string,
  priority: number,
  scheduledTime: number,
  once?: OncePerAttempt,
): void {
  setHandedOver(tx, keys.pendingKey(priority, scheduledTime, id), EMPTY);
  // Wakes workers blocked in accept (they watch this counter).
  if (once === undefined || once.first(keys.watchesPending)) tx.atomicAdd(keys.watchesPending, 1);
  once?.enqueued?.(keys, scheduledTime);
}

export function removePending(tx: Transaction, keys: TypeKeys, id: string, priority: number, scheduledTime: number): void {
  tx.clear(keys.pendingKey(priority, scheduledTime, id));
}

export interface DequeuedJob {
  /** The queue entry's key. */
  key: Buffer;
  id: string;
  priority: number;
  scheduledTime: number;
}

export interface DequeueResult {
  /** At most `count` jobs, best first by rank. */
  jobs: DequeuedJob[];
  /** When fewer jobs than asked for were due: the earliest future scheduled time, if any. */
  nextScheduledTime: number | undefined;
  /** Whether entries claimed by another batch were passed over (see {@link PendingClaims}). */
  skippedClaims: boolean;
}

/**
 * Queue entries taken by accept transactions of this process that have not
 * committed yet. A batch that reads while another commits reads a snapshot
 * in which those entries are still pending; picking one would only make it
 * conflict and retry, so it passes over them. Best effort: the read
 * conflict on every taken key is what keeps a job from being taken twice.
 */
export interface PendingClaims {
  /** Claimed pending keys, by {@link claimKey}. */
  readonly claimed: ReadonlySet<number>;
  /** Records a key this attempt took. */
  claim(key: Buffer): void;
}

/**
 * A pending key as a claim: a 30-bit FNV-1a hash of its bytes, a small
 * integer that a Set holds without allocating. Every entry a pipelined
 * accept reads is looked up, and a latin1 string per entry (and per claim)
 * was a few percent of a local queue's drain. Two keys that share a hash
 * only make a batch pass over an entry it could have taken: the job waits
 * for the claiming batch to commit, as claims are best effort anyway.
 */
export function claimKey(key: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ (key[i] as number), 0x01000193);
  return hash >>> 2;
}

/**
 * Picks up to `count` of the best due jobs, without taking them yet: the
 * caller takes each picked entry it keeps with {@link takePending} (and may
 * stop early, leaving the rest in the queue). Reads are snapshot reads:
 * jobs added meanwhile cause no conflict.
 *
 * `maxScheduledTime` undefined means "ignore scheduled times" (noSchedule):
 * any job of the best priority qualifies.
 *
 * One range read from the front usually serves it all: it holds the best
 * job, the jobs of equal rank to pick from, and, when the queue is short,
 * everything up to its end (a lone job costs one read, not three).
 */
export async function dequeuePending(
  tx: Transaction,
  keys: TypeKeys,
  maxScheduledTime: number | undefined,
  count = 1,
  claims?: PendingClaims,
): Promise<DequeueResult> {
  const snapshot = tx.snapshot();
  const end = keys.pending.range().end;
  const jobs: DequeuedJob[] = [];
  const claimed = claims?.claimed;
  const skipping = claimed !== undefined && claimed.size > 0;
  let skipped = false;
  let start = keys.pending.range().begin;
  let nextScheduledTime: number | undefined;
  read: while (jobs.length < count) {
    // Always some candidates more than wanted, so that batches taking many
    // jobs at once still pick at random and rarely pick the same ones; and
    // room to pass over the entries other batches claimed.
    const limit = count - jobs.length + FRONT_CANDIDATES - 1 + (skipping ? claimed.size : 0);
    const page = await snapshot.getRange(start, end, { limit });
    // A page shorter than its limit reached the end of the queue.
    const full = page.length === limit;
    const last = page.at(-1);
    if (last === undefined) break;
    let index = 0;
    /** Rows before `index` belong to other ranks (passed over, or picked from). */
    let passedRanks = false;
    while (index < page.length && jobs.length < count) {
      const front = page[index] as KeyValue;
      if (skipping && claimed.has(claimKey(front.key))) {
        // Taken by a batch still committing.
        skipped = true;
        index += 1;
        continue;
      }
      const head = parsePendingKey(keys, front.key);
      if (maxScheduledTime !== undefined && head.scheduledTime > maxScheduledTime) {
        // This priority's earliest job is not due: so is every other job of
        // this priority. Skip to the next priority.
        nextScheduledTime = Math.min(nextScheduledTime ?? head.scheduledTime, head.scheduledTime);
        const priorityEnd = keyAfterPrefix(keys.pendingPriorityPrefix(head.priority));
        while (index < page.length && Buffer.compare((page[index] as KeyValue).key, priorityEnd) < 0) index += 1;
        if (index === page.length && full) {
          start = priorityEnd;
          continue read;
        }
        passedRanks = true;
        continue;
      }
      // Jobs of equal rank: the same priority and (unless scheduled times are
      // ignored) the same scheduled time. Any of them is a correct pick.
      const rank =
        maxScheduledTime === undefined
          ? keys.pendingPriorityPrefix(head.priority)
          : keys.pendingRankPrefix(head.priority, head.scheduledTime);
      let rankEnd = index;
      while (rankEnd < page.length && hasPrefix((page[rankEnd] as KeyValue).key, rank)) rankEnd += 1;
      if (rankEnd === page.length && full && passedRanks) {
        // The rank goes on past this page, which began with other ranks:
        // read it from its start, for a whole page of candidates.
        start = front.key;
        continue read;
      }
      let candidates = page.slice(index, rankEnd);
      if (skipping) {
        const unclaimed = candidates.filter((row) => !claimed.has(claimKey(row.key)));
        if (unclaimed.length < candidates.length) skipped = true;
        candidates = unclaimed;
      }
      // A partial Fisher-Yates shuffle: distinct random candidates.
      const picks = Math.min(count - jobs.length, candidates.length);
      for (let i = 0; i < picks; i++) {
        const j = i + Math.floor(Math.random() * (candidates.length - i));
        const picked = candidates[j] as KeyValue;
        candidates[j] = candidates[i] as KeyValue;
        const parts = parsePendingKey(keys, picked.key);
        jobs.push({ key: picked.key, id: parts.id, priority: parts.priority, scheduledTime: parts.scheduledTime });
      }
      index = rankEnd;
      passedRanks = true;
    }
    if (jobs.length === count || !full) break;
    // Every unclaimed candidate read was picked: go on after the page.
    // Nothing is cleared yet, so the next read must not start at the front.
    start = Buffer.concat([last.key, ZERO]);
  }
  return { jobs, nextScheduledTime: jobs.length < count ? nextScheduledTime : undefined, skippedClaims: skipped };
}

/**
 * Takes a picked entry out of the queue. Its key joins the read-conflict
 * set, so two transactions that pick the same job cannot both commit. The
 * transaction keeps `key` without a copy: it must not change after.
 */
export function takePending(tx: Transaction, key: Buffer, claims?: PendingClaims): void {
  tx.addReadConflictKey(key);
  clearHandedOver(tx, key);
  claims?.claim(key);
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
