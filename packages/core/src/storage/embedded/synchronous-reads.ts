// Reads that answer at once rather than through a promise, for the jobs
// layer's hot paths. The embedded engine reads its lmdb snapshot
// synchronously underneath `get` and `getRange`; the promise around each
// answer (and the `Promise.all` over an accept batch's record reads, and a
// microtask per await) was a share of every accepted job's time. Internal
// to the package (not exported from its index). On any other transaction
// (FoundationDB, a wrapper, a Proxy that intercepts the public read) these
// fall back to the public async methods, whose promises they return.
//
// A synchronous read is the same read as the public one: the same checks,
// the same read-your-writes view of the transaction's own writes, the same
// read conflict (or none, for a snapshot read), the same errors (thrown
// rather than rejected).

import type { KeyValue, RangeOptions, Transaction } from '../interfaces.js';

/** `get(key)` (with a read conflict) or `snapshot().get(key)` (without), answered at once. */
export const READ_KEY_NOW: unique symbol = Symbol('jobtree.readKeyNow');
/** `get` of each of several keys (with read conflicts, or none), answered at once, on one check of the transaction's age. */
export const READ_KEYS_NOW: unique symbol = Symbol('jobtree.readKeysNow');
/** The keys `getRange(start, end, options)` (or `snapshot().getRange`) would read, answered at once. */
export const READ_RANGE_KEYS_NOW: unique symbol = Symbol('jobtree.readRangeKeysNow');

/** What a transaction that can answer reads at once implements. */
export interface SynchronousReads {
  [READ_KEY_NOW](key: Buffer, conflict: boolean): Buffer | undefined;
  [READ_KEYS_NOW](keys: readonly Buffer[], conflict: boolean): (Buffer | undefined)[];
  [READ_RANGE_KEYS_NOW](start: Buffer, end: Buffer, options: RangeOptions | undefined, conflict: boolean): Buffer[];
}

/**
 * The transaction's synchronous reads, when it has them and `method` (the
 * public read they stand for) is its class's own: a wrapper that forwards
 * everything but intercepts that read (a tracer, a test injecting read
 * failures; a Proxy, say) must see every read, so it gets the public one.
 */
function synchronous(tx: Transaction, method: 'get' | 'snapshot'): SynchronousReads | undefined {
  const reads = tx as Transaction & Partial<SynchronousReads>;
  if (reads[READ_KEY_NOW] === undefined || reads[READ_KEYS_NOW] === undefined || reads[READ_RANGE_KEYS_NOW] === undefined) {
    return undefined;
  }
  const own = (Object.getPrototypeOf(tx) as Partial<Transaction> | null)?.[method];
  return own !== undefined && own === tx[method] ? (reads as Transaction & SynchronousReads) : undefined;
}

/**
 * The values of `keys`, read with read conflicts: an array when the
 * transaction answers at once, else the promise of one. Each value is the
 * caller's own copy, as `get` gives it. On the embedded engine the
 * transaction's age is checked once for the whole call, not per key.
 */
export function getMany(tx: Transaction, keys: readonly Buffer[]): (Buffer | undefined)[] | Promise<(Buffer | undefined)[]> {
  const target = synchronous(tx, 'get');
  if (target === undefined) return Promise.all(keys.map((key) => tx.get(key)));
  return target[READ_KEYS_NOW](keys, true);
}

/**
 * The keys of `tx.snapshot().getRange(start, end, options)`: an array when
 * the transaction answers at once, else the promise of one. On the embedded
 * engine a range that none of the transaction's own writes touch is read
 * keys only (no value copied, no pair made per entry): for ranges whose
 * values the caller never looks at, such as the pending queue's, whose
 * entries are all empty.
 */
export function getRangeKeysSnapshot(
  tx: Transaction,
  start: Buffer,
  end: Buffer,
  options?: RangeOptions,
): Buffer[] | Promise<Buffer[]> {
  const target = synchronous(tx, 'snapshot');
  if (target === undefined) return tx.snapshot().getRange(start, end, options).then(keysOf);
  return target[READ_RANGE_KEYS_NOW](start, end, options, false);
}

function keysOf(pairs: KeyValue[]): Buffer[] {
  const keys = new Array<Buffer>(pairs.length);
  for (let i = 0; i < pairs.length; i++) keys[i] = (pairs[i] as KeyValue).key;
  return keys;
}
