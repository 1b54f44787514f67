// What a transaction may offer beyond the storage contract, for the jobs
// layer's hot paths: reads answered at once rather than through a promise,
// and writes that keep the caller's buffers rather than copying them.
// Internal to the package (not exported from its index).
//
// The embedded engine's transactions implement it: they read their lmdb
// snapshot synchronously underneath `get` and `getRange`, so the promise
// around each answer (a `Promise.all` over an accept batch's record reads,
// a microtask per await) and the copy `set` makes of buffers a caller may
// reuse are pure cost there. The FoundationDB adapter does not implement
// it: its reads are round trips to the cluster, and its binding copies
// every key and value into the native client anyway. Neither does a
// wrapper around a transaction (a tracer, a fault injector).
//
// Callers never use the interface directly: the functions below take any
// `Transaction` and fall back to its public methods when it does not offer
// the fast path, so code written against them runs on every backend.

import type { KeyValue, RangeOptions, Transaction } from './interfaces.js';

/**
 * The fast paths of a transaction. A transaction implements all of them or
 * none. Each is the operation of the public method it stands for, with the
 * same argument checks, the same errors (thrown at once, never a rejected
 * promise), the same read-your-writes view of the transaction's own writes
 * and the same read conflicts; only how the answer comes back, or whether
 * the buffers are copied, differs.
 */
export interface TransactionFastPaths {
  /**
   * `get(key)` (`conflict` true: with a read conflict) or `snapshot().get(key)`
   * (false: without), answered at once. The value is the caller's own copy.
   */
  readNow(key: Buffer, conflict: boolean): Buffer | undefined;
  /**
   * `readNow` of each of `keys`, in order. The transaction's 5-second life is
   * checked once for the whole call, not once per key (an accept reads
   * hundreds of records in one call).
   */
  readManyNow(keys: readonly Buffer[], conflict: boolean): (Buffer | undefined)[];
  /**
   * The keys `getRange(start, end, options)` (or `snapshot().getRange`, with
   * `conflict` false) would return, answered at once. May read keys only,
   * with no value copied, where none of the transaction's own writes touch
   * the range.
   */
  readRangeKeysNow(start: Buffer, end: Buffer, options: RangeOptions | undefined, conflict: boolean): Buffer[];

  // Writes whose buffers the caller hands over: after the call, neither it
  // nor any code it shares them with changes their bytes. Reading them
  // later is fine (the store never changes a handed-over key or set value);
  // a handed-over stamped-value template is stamped in place at commit.

  /** `set(key, value)`, keeping both buffers. */
  setHandedOver(key: Buffer, value: Buffer): void;
  /** `clear(key)`, keeping the key buffer. */
  clearHandedOver(key: Buffer): void;
  /**
   * `setVersionstampedKey(template, offset, value)`, keeping the value
   * buffer. The key template is still copied: it is stamped in place, and
   * callers reuse one template per type.
   */
  setVersionstampedKeyHandedOver(template: Buffer, offset: number, value: Buffer): void;
  /** `setVersionstampedValue(key, template, offset)`, keeping both buffers (the commit stamps the template in place). */
  setVersionstampedValueHandedOver(key: Buffer, template: Buffer, offset: number): void;
}

type MaybeFastPaths = Transaction & Partial<TransactionFastPaths>;

/**
 * The transaction's fast reads, when it has them and `method` (the public
 * read they stand for) is its class's own. A wrapper that forwards every
 * member but intercepts that read (a Proxy tracing reads, a test injecting
 * read failures) must see every read, so it gets none and the caller reads
 * through the public method.
 */
export function readsAtOnce(tx: Transaction, method: 'get' | 'snapshot'): TransactionFastPaths | undefined {
  const fast = tx as MaybeFastPaths;
  if (fast.readNow === undefined) return undefined;
  const own = (Object.getPrototypeOf(tx) as Partial<Transaction> | null)?.[method];
  return own !== undefined && own === tx[method] ? (fast as TransactionFastPaths) : undefined;
}

/**
 * The values of `keys`, read with read conflicts: an array when the
 * transaction answers at once, else the promise of one. Each value is the
 * caller's own copy, as `get` gives it.
 */
export function getMany(tx: Transaction, keys: readonly Buffer[]): (Buffer | undefined)[] | Promise<(Buffer | undefined)[]> {
  const fast = readsAtOnce(tx, 'get');
  if (fast === undefined) return Promise.all(keys.map((key) => tx.get(key)));
  return fast.readManyNow(keys, true);
}

/**
 * The keys of `tx.snapshot().getRange(start, end, options)`: an array when
 * the transaction answers at once, else the promise of one. For ranges whose
 * values the caller never looks at, such as the pending queue's, whose
 * entries are all empty.
 */
export function getRangeKeysSnapshot(
  tx: Transaction,
  start: Buffer,
  end: Buffer,
  options?: RangeOptions,
): Buffer[] | Promise<Buffer[]> {
  const fast = readsAtOnce(tx, 'snapshot');
  if (fast === undefined) return tx.snapshot().getRange(start, end, options).then(keysOf);
  return fast.readRangeKeysNow(start, end, options, false);
}

function keysOf(pairs: KeyValue[]): Buffer[] {
  const keys = new Array<Buffer>(pairs.length);
  for (let i = 0; i < pairs.length; i++) keys[i] = (pairs[i] as KeyValue).key;
  return keys;
}

/**
 * `tx.set(key, value)` for buffers the caller will never change again (nor
 * share with code that might): the transaction may keep them.
 */
export function setHandedOver(tx: Transaction, key: Buffer, value: Buffer): void {
  const fast = tx as MaybeFastPaths;
  if (fast.setHandedOver !== undefined) fast.setHandedOver(key, value);
  else tx.set(key, value);
}

/** `tx.clear(key)` for a key buffer the caller will never change again. */
export function clearHandedOver(tx: Transaction, key: Buffer): void {
  const fast = tx as MaybeFastPaths;
  if (fast.clearHandedOver !== undefined) fast.clearHandedOver(key);
  else tx.clear(key);
}

/** `tx.setVersionstampedValue(key, template, offset)` for buffers the caller will never use again. */
export function setVersionstampedValueHandedOver(tx: Transaction, key: Buffer, template: Buffer, offset: number): void {
  const fast = tx as MaybeFastPaths;
  if (fast.setVersionstampedValueHandedOver !== undefined) fast.setVersionstampedValueHandedOver(key, template, offset);
  else tx.setVersionstampedValue(key, template, offset);
}

/** `tx.setVersionstampedKey(template, offset, value)` for a value buffer the caller will never change again. */
export function setVersionstampedKeyHandedOver(tx: Transaction, template: Buffer, offset: number, value: Buffer): void {
  const fast = tx as MaybeFastPaths;
  if (fast.setVersionstampedKeyHandedOver !== undefined) fast.setVersionstampedKeyHandedOver(template, offset, value);
  else tx.setVersionstampedKey(template, offset, value);
}
