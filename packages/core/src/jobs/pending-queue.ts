// Re-creates couch_jobs_pending: the pending queue of one job type.
//
// Keys are (pending, type, -priority, scheduledTime, id), so the best job
// (highest priority, then oldest scheduled time) is the first key of the
// range. A dequeue reads only from the front, with small limits: its cost
// does not grow with the length of the queue (only with the number of
// priority levels whose jobs are all scheduled in the future).

import type { ReadTransaction, Transaction } from '../storage/interfaces.js';
import { clearHandedOver, getRangeKeysSnapshot, setHandedOver } from '../storage/fast-paths.js';
import { keyAfterPrefix } from '../keys/subspace.js';
import { hasPrefix } from '../keys/has-prefix.js';
import { TUPLE_DOUBLE_BYTES, TUPLE_STRING_CODE } from '../keys/tuple-append.js';
import { parsePendingKey, readTupleDoubleElement } from './job-keys.js';
import type { TypeKeys } from './job-keys.js';
import type { JobOutcome } from './job-record.js';

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
   * Adds `delta` to the counter at `key` (a little-endian int64) at the end
   * of the attempt: the calls' changes to one counter summed into one
   * atomic add, not an add per job (see finish-log.ts).
   */
  add?(key: Buffer, delta: number): void;
  /**
   * Logs the finish of job `id` of the type as `outcome` in the attempt's
   * one log row for them, written at its end, and returns the attempt's
   * finish time, which every finish of the attempt is stamped with (see
   * finish-log.ts).
   */
  logFinish?(keys: TypeKeys, outcome: JobOutcome, id: string): number;
  /**
   * Told of every job the attempt enqueues: a write batch serves the
   * accepts parked on its types before it commits (see parked-accepts.ts).
   */
  enqueued?(keys: TypeKeys, scheduledTime: number): void;
  /**
   * Told of every run of a grouped job the attempt ends: a slot of its
   * group came free, which an accept parked on group limits may take in the
   * same transaction (see parked-accepts.ts).
   */
  freedGroupSlot?(keys: TypeKeys): void;
  /**
   * A run of a job of `group` ended in this attempt: the type's count of
   * ended runs (group-keys.ts) is bumped at the attempt's end unless the
   * attempt also started as many of the group's jobs (see
   * `startedGroupRuns`), which leaves the group as full as it was.
   */
  endedGroupRun?(keys: TypeKeys, group: string): void;
  /** `count` jobs of `group` started in this attempt (a parked accept it served took them). */
  startedGroupRuns?(keys: TypeKeys, group: string, count: number): void;
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
  group?: string,
): void {
  // A grouped job waits in its group's queue and its group for a turn (job-groups.ts).
  if (group === undefined) setHandedOver(tx, keys.pendingKey(priority, scheduledTime, id), EMPTY);
  else enqueueGrouped(tx, keys, group, id, priority, scheduledTime);
  // Wakes workers blocked in accept (they watch this counter).
  if (once === undefined || once.first(keys.watchesPending)) tx.atomicAdd(keys.watchesPending, 1);
  once?.enqueued?.(keys, scheduledTime);
}

export function removePending(tx: Transaction, keys: TypeKeys, id: string, priority: number, scheduledTime: number, group?: string): void {
  tx.clear(group === undefined ? keys.pendingKey(priority, scheduledTime, id) : keys.groups.pendingKey(group, priority, scheduledTime, id));
}

/** Enqueues a grouped job: its entry in its group's queue, its group's arrival, and the mark that the type has groups. Reads nothing. */
function enqueueGrouped(tx: Transaction, keys: TypeKeys, group: string, id: string, priority: number, scheduledTime: number): void {
  const groups = keys.groups;
  tx.set(groups.pendingKey(group, priority, scheduledTime, id), EMPTY);
  tx.set(groups.arrival(group), EMPTY);
  tx.set(groups.marker, EMPTY);
}

export interface DequeuedJob {
  /** The queue entry's key. */
  key: Buffer;
  id: string;
  priority: number;
  scheduledTime: number;
  /** The job's data key, `keys.job(id)`, built from the entry's own bytes: a fresh buffer the caller may hand over. */
  recordKey: Buffer;
  /**
   * The UTF-8 bytes of the id (an activity row's value), a fresh buffer the
   * caller may hand over; `undefined` when the id needs its escaped NULs
   * decoded.
   */
  idBytes: Buffer | undefined;
  /**
   * The entry's {@link claimKey} when the pick computed it (it passed over
   * other batches' claims), for `takePending` to claim it without hashing
   * the key again; else `undefined`.
   */
  claim: number | undefined;
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
  /** Records a key this attempt took; `hash`, when known, is its {@link claimKey}. */
  claim(key: Buffer, hash?: number): void;
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
  // The length read once: re-reading a typed array's length on every byte is a visible share of the hash.
  const length = key.length;
  for (let i = 0; i < length; i++) hash = Math.imul(hash ^ (key[i] as number), 0x01000193);
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
 *
 * The result comes at once when the transaction answers reads at once (the
 * embedded engine: no promise per accept batch), else as a promise. Entries'
 * values are always empty: only keys are read.
 */
export function dequeuePending(
  tx: Transaction,
  keys: TypeKeys,
  maxScheduledTime: number | undefined,
  count = 1,
  claims?: PendingClaims,
): DequeueResult | Promise<DequeueResult> {
  const pick = new FrontPick(keys, maxScheduledTime, count, claims);
  while (pick.wantsPage()) {
    const page = getRangeKeysSnapshot(tx, pick.start, pick.end, { limit: pick.pageLimit() });
    if (!Array.isArray(page)) return dequeueRest(tx, pick, page);
    pick.add(page);
  }
  return pick.result();
}

/** {@link dequeuePending} on a transaction that answers reads with promises. */
async function dequeueRest(tx: Transaction, pick: FrontPick, first: Promise<Buffer[]>): Promise<DequeueResult> {
  pick.add(await first);
  while (pick.wantsPage()) pick.add(await getRangeKeysSnapshot(tx, pick.start, pick.end, { limit: pick.pageLimit() }));
  return pick.result();
}

/** The picks of one dequeue, page by page (see {@link dequeuePending}). */
class FrontPick {
  readonly #keys: TypeKeys;
  readonly #maxScheduledTime: number | undefined;
  readonly #count: number;
  readonly #claimed: ReadonlySet<number> | undefined;
  readonly #skipping: boolean;
  readonly jobs: DequeuedJob[] = [];
  readonly end: Buffer;
  /** Where the next page starts. */
  start: Buffer;
  /**
   * The limit the page being read was asked with. Other batches' claims may
   * change while a read is in flight (on a transaction whose reads are
   * promises): whether a page reached the end of the queue is judged by the
   * limit it was read with, not by one computed again.
   */
  #limit = 0;
  #skipped = false;
  #done = false;
  #nextScheduledTime: number | undefined;

  constructor(keys: TypeKeys, maxScheduledTime: number | undefined, count: number, claims: PendingClaims | undefined) {
    this.#keys = keys;
    this.#maxScheduledTime = maxScheduledTime;
    this.#count = count;
    this.#claimed = claims?.claimed;
    this.#skipping = this.#claimed !== undefined && this.#claimed.size > 0;
    const range = keys.pending.range();
    this.start = range.begin;
    this.end = range.end;
  }

  /** Whether another page is to be read, from `start` up to `pageLimit()` entries. */
  wantsPage(): boolean {
    return !this.#done && this.jobs.length < this.#count;
  }

  /**
   * The limit to read the next page with (kept for `add`): always some
   * candidates more than wanted, so that batches taking many jobs at once
   * still pick at random and rarely pick the same ones; and room to pass
   * over the entries other batches claimed.
   */
  pageLimit(): number {
    this.#limit = this.#count - this.jobs.length + FRONT_CANDIDATES - 1 + (this.#skipping ? (this.#claimed?.size ?? 0) : 0);
    return this.#limit;
  }

  result(): DequeueResult {
    const short = this.jobs.length < this.#count;
    return { jobs: this.jobs, nextScheduledTime: short ? this.#nextScheduledTime : undefined, skippedClaims: this.#skipped };
  }

  /** Picks from one page of keys read at `start` with `pageLimit()`; sets where the next page starts, or that none is needed. */
  add(page: Buffer[]): void {
    const keys = this.#keys;
    const maxScheduledTime = this.#maxScheduledTime;
    const claimed = this.#claimed;
    const skipping = this.#skipping;
    const jobs = this.jobs;
    const count = this.#count;
    // A page shorter than its limit reached the end of the queue.
    const full = page.length === this.#limit;
    const last = page.at(-1);
    if (last === undefined) {
      this.#done = true;
      return;
    }
    let index = 0;
    /** Rows before `index` belong to other ranks (passed over, or picked from). */
    let passedRanks = false;
    while (index < page.length && jobs.length < count) {
      const front = page[index] as Buffer;
      if (skipping && (claimed as ReadonlySet<number>).has(claimKey(front))) {
        // Taken by a batch still committing.
        this.#skipped = true;
        index += 1;
        continue;
      }
      const head = parsePendingKey(keys, front);
      if (maxScheduledTime !== undefined && head.scheduledTime > maxScheduledTime) {
        // This priority's earliest job is not due: so is every other job of
        // this priority. Skip to the next priority.
        this.#nextScheduledTime = Math.min(this.#nextScheduledTime ?? head.scheduledTime, head.scheduledTime);
        const priorityEnd = keyAfterPrefix(keys.pendingPriorityPrefix(head.priority));
        while (index < page.length && Buffer.compare(page[index] as Buffer, priorityEnd) < 0) index += 1;
        if (index === page.length && full) {
          this.start = priorityEnd;
          return;
        }
        passedRanks = true;
        continue;
      }
      // Jobs of equal rank: the same priority and (unless scheduled times are
      // ignored) the same scheduled time. Any of them is a correct pick.
      const priorityPrefix = keys.pendingPriorityPrefix(head.priority);
      const rank = maxScheduledTime === undefined ? priorityPrefix : keys.pendingRankPrefix(head.priority, head.scheduledTime);
      const rankEnd = rankEndIn(page, index, rank);
      if (rankEnd === page.length && full && passedRanks) {
        // The rank goes on past this page, which began with other ranks:
        // read it from its start, for a whole page of candidates.
        this.start = front;
        return;
      }
      // The candidates are page[index, rankEnd), shuffled in place (the page
      // is this read's own array); claimed ones are moved out first.
      let candidatesEnd = rankEnd;
      // With claims to pass over, each kept candidate's hash is kept beside
      // it (hashes[i] for page[i]): a picked entry is claimed without a second hash.
      const hashes = skipping ? pageHashes(page.length) : undefined;
      if (hashes !== undefined) {
        let kept = index;
        for (let i = index; i < rankEnd; i++) {
          const row = page[i] as Buffer;
          const hash = claimKey(row);
          if ((claimed as ReadonlySet<number>).has(hash)) continue;
          page[i] = page[kept] as Buffer;
          page[kept] = row;
          hashes[kept] = hash;
          kept += 1;
        }
        if (kept < rankEnd) this.#skipped = true;
        candidatesEnd = kept;
      }
      // The id element follows the priority and the scheduled time (a
      // 9-byte double) in every key of the rank.
      const idAt = priorityPrefix.length + TUPLE_DOUBLE_BYTES;
      // With scheduled times ignored, a rank holds many times: each is read from its own key.
      const sameTime = maxScheduledTime === undefined ? undefined : head.scheduledTime;
      // A partial Fisher-Yates shuffle: distinct random candidates.
      const candidates = candidatesEnd - index;
      const picks = Math.min(count - jobs.length, candidates);
      for (let i = 0; i < picks; i++) {
        const j = index + i + Math.floor(Math.random() * (candidates - i));
        const picked = page[j] as Buffer;
        page[j] = page[index + i] as Buffer;
        page[index + i] = picked;
        let hash: number | undefined;
        if (hashes !== undefined) {
          hash = hashes[j] as number;
          hashes[j] = hashes[index + i] as number;
        }
        jobs.push(dequeued(keys, picked, head.priority, sameTime, idAt, hash));
      }
      index = rankEnd;
      passedRanks = true;
    }
    if (jobs.length === count || !full) {
      this.#done = true;
      return;
    }
    // Every unclaimed candidate read was picked: go on after the page.
    // Nothing is cleared yet, so the next read must not start at the front.
    this.start = Buffer.concat([last, ZERO]);
  }
}

/**
 * The end of the rank that starts at `page[from]`: the first row from there
 * on whose key does not start with `rank`. Rows are in key order, so the
 * rank's rows are one run: a binary search tests a few of them rather than
 * every row a page of one big rank holds.
 */
function rankEndIn(page: readonly Buffer[], from: number, rank: Buffer): number {
  let low = from + 1;
  let high = page.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (hasPrefix(page[middle] as Buffer, rank)) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * A picked entry of a rank whose keys hold their id element at `idAt`: the
 * id read straight from the key, and the job's data key made of the data
 * prefix and that same element (a string element is encoded alike in any
 * tuple), with no decode of the rest and no encode of the id again.
 * `scheduledTime` is the rank's when it has one (else read from the key).
 */
function dequeued(
  keys: TypeKeys,
  key: Buffer,
  priority: number,
  scheduledTime: number | undefined,
  idAt: number,
  claim: number | undefined,
): DequeuedJob {
  const last = key.length - 1;
  // An id without NUL bytes runs to the key's last byte, a 00 (a 00 earlier is an escaped NUL, 00 ff).
  const idBytes = key[idAt] === TUPLE_STRING_CODE && key[last] === 0 ? bytesWithoutNul(key, idAt + 1, last) : undefined;
  if (idBytes !== undefined) {
    return {
      key,
      id: key.toString('utf8', idAt + 1, last),
      priority,
      // The scheduled time is the double element just before the id: no decode of the whole key (nor a string of its id).
      scheduledTime: scheduledTime ?? readTupleDoubleElement(key, idAt - TUPLE_DOUBLE_BYTES) ?? parsePendingKey(keys, key).scheduledTime,
      recordKey: keys.jobFromElement(key, idAt),
      idBytes,
      claim,
    };
  }
  const parts = parsePendingKey(keys, key);
  return {
    key,
    id: parts.id,
    priority: parts.priority,
    scheduledTime: parts.scheduledTime,
    recordKey: keys.job(parts.id),
    idBytes: undefined,
    claim,
  };
}

/**
 * Reusable room for the claim hashes of one page's candidates (see
 * FrontPick.add): filled and read within one synchronous `add`, so dequeues
 * in flight at once (on a transaction whose reads are promises) never share it.
 */
let hashScratch = new Uint32Array(1_024);

function pageHashes(length: number): Uint32Array {
  if (hashScratch.length < length) hashScratch = new Uint32Array(Math.max(length, 2 * hashScratch.length));
  return hashScratch;
}

/**
 * A copy of `bytes[start, end)`, or `undefined` when they hold a NUL byte:
 * one loop into a buffer from Node's pool both checks and copies (a view,
 * `subarray`, of a key lmdb returned costs far more, and
 * `indexOf` is a call into C++).
 */
function bytesWithoutNul(bytes: Buffer, start: number, end: number): Buffer | undefined {
  const out = Buffer.allocUnsafe(end - start);
  for (let i = start; i < end; i++) {
    const byte = bytes[i] as number;
    if (byte === 0) return undefined;
    out[i - start] = byte;
  }
  return out;
}

/**
 * Takes a picked entry out of the queue. Its key joins the read-conflict
 * set, so two transactions that pick the same job cannot both commit. The
 * transaction keeps `key` without a copy: it must not change after.
 * `hash`: the entry's claim hash when the pick computed it (`DequeuedJob.claim`).
 */
export function takePending(tx: Transaction, key: Buffer, claims?: PendingClaims, hash?: number): void {
  tx.addReadConflictKey(key);
  clearHandedOver(tx, key);
  claims?.claim(key, hash);
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
