// One transaction on the embedded engine: reads at one read version (the durable snapshot
// current at its first read), overlaid with its own buffered writes (range reads:
// range-reads.ts); conflict ranges recorded for the resolver; the rest is commit-pipeline.ts.

import { FdbError, FdbErrorCode } from '../../errors.js';
import { addOperand, applyAdd } from '../atomic-add.js';
import type { Bytes, KeyValue, RangeOptions, ReadTransaction, Transaction, Watch } from '../interfaces.js';
import {
  MAX_TRANSACTION_BYTES,
  copyBytes,
  TRANSACTION_LIFE_MS,
  checkKey,
  checkRange,
  checkRangeEnd,
  checkRangeLimit,
  checkRangeOptions,
  checkValue,
  checkVersionstampOffset,
} from '../limits.js';
import type { TransactionFastPaths } from '../fast-paths.js';
import type { Attempt, RetryHint } from '../retry-loop.js';
import { versionstamp } from '../versionstamp.js';
import type { CommitPipeline } from './commit-pipeline.js';
import type { CommitRequest, CommitTicket } from './commit-request.js';
import { PendingVersionstamp } from './pending-versionstamp.js';
import { PendingWrites } from './pending-writes.js';
import { keyOf, mergeRange, readConflictRange } from './range-reads.js';
import { SnapshotReads } from './snapshot-reads.js';
import type { StoreSnapshot } from './store-snapshot.js';
import { KeyWatch, sameValue } from './watch-registry.js';

type State = 'open' | 'committing' | 'committed' | 'failed';

const NO_KEYS: readonly Buffer[] = [];
const NO_WATCHES: readonly KeyWatch[] = [];
const NO_CALLBACKS: readonly (() => void)[] = [];

export class EmbeddedTransaction implements Transaction, TransactionFastPaths, Attempt, RetryHint {
  readonly #pipeline: CommitPipeline;
  #state: State = 'open';
  #snapshot: StoreSnapshot | undefined;
  #readVersionAt = 0;
  // Created on first use: most transactions only read, or never use some of these.
  #writes: PendingWrites | undefined;
  readonly #readKeys: string[] = [];
  readonly #readRanges: Array<[Buffer, Buffer]> = [];
  #writeConflictKeys: Buffer[] | undefined;
  #conflictBytes = 0;
  #watches: KeyWatch[] | undefined;
  /** Told once the commit is readable (see `onVisible`). */
  #visible: (() => void)[] | undefined;
  #stamp: PendingVersionstamp | undefined;
  #snapshotView: SnapshotReads | undefined;
  /** When the commit conflicted: the newest version then (a retry should read at least this). */
  #conflictedBefore: number | undefined;

  constructor(pipeline: CommitPipeline) {
    this.#pipeline = pipeline;
  }

  // --- reads -------------------------------------------------------------

  get(key: Bytes): Promise<Buffer | undefined> {
    return this.readKey(key, true);
  }

  getRange(start: Bytes, end: Bytes, options?: RangeOptions): Promise<KeyValue[]> {
    return this.readRange(start, end, options, true);
  }

  snapshot(): ReadTransaction {
    this.#snapshotView ??= new SnapshotReads(this);
    return this.#snapshotView;
  }

  /**
   * `get`, adding a read conflict or not (`snapshot().get`).
   * @internal
   */
  readKey(key: Bytes, conflict: boolean): Promise<Buffer | undefined> {
    try {
      return Promise.resolve(this.#get(checkKey(key), conflict));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * `getRange`, adding a read conflict range or not (`snapshot().getRange`).
   * @internal
   */
  readRange(start: Bytes, end: Bytes, options: RangeOptions | undefined, conflict: boolean): Promise<KeyValue[]> {
    try {
      return Promise.resolve(this.#getRange(start, end, options, conflict));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * `readKey` answered at once (see fast-paths.ts): errors are thrown.
   * @internal
   */
  readNow(key: Buffer, conflict: boolean): Buffer | undefined {
    return this.#get(checkKey(key), conflict);
  }

  /**
   * `readKey` of each of `keys`, answered at once, all of them one read as
   * far as the transaction's age goes: the clock is read once for the call
   * (an accept reads hundreds of records in one synchronous call), not once
   * per key.
   * @internal
   */
  readManyNow(keys: readonly Buffer[], conflict: boolean): (Buffer | undefined)[] {
    const values: (Buffer | undefined)[] = new Array(keys.length);
    if (keys.length === 0) return values;
    for (const key of keys) checkKey(key);
    this.#checkOpen();
    this.#readSnapshot();
    for (let i = 0; i < keys.length; i++) values[i] = this.#get(keys[i] as Buffer, conflict, false);
    return values;
  }

  /**
   * The keys `readRange` would read, answered at once (see fast-paths.ts).
   * @internal
   */
  readRangeKeysNow(start: Buffer, end: Buffer, options: RangeOptions | undefined, conflict: boolean): Buffer[] {
    return this.#getRangeKeys(start, end, options, conflict);
  }

  /** `checkAge` false: the caller has just checked the transaction's age for this read (see readManyNow). */
  #get(key: Buffer, conflict: boolean, checkAge = true): Buffer | undefined {
    this.#checkOpen();
    const snapshot = this.#readSnapshot(checkAge);
    const writes = this.#writes;
    if (writes === undefined) {
      if (conflict) this.#addReadKey(key.toString('latin1'), key.length);
      return snapshot.get(key);
    }
    if (writes.stampedKeys.length > 0 && writes.isStampedKey(key)) {
      throw new FdbError(FdbErrorCode.accessed_unreadable, 'this transaction set a versionstamped key that may be this one');
    }
    const buffered = writes.read(key);
    // A copy, so that changing what a read returned cannot change the pending write.
    if (buffered.found && !('addOver' in buffered)) return buffered.value && Buffer.from(buffered.value);
    if (conflict) this.#addReadKey(key.toString('latin1'), key.length);
    const stored = snapshot.get(key);
    return buffered.found ? applyAdd(stored, buffered.addOver) : stored;
  }

  #getRange(startBytes: Bytes, endBytes: Bytes, options: RangeOptions | undefined, conflict: boolean): KeyValue[] {
    const start = checkKey(startBytes, 'range start');
    const end = checkRangeEnd(endBytes);
    checkRange(start, end);
    const checked = checkRangeOptions(options);
    const limit = checkRangeLimit(checked?.limit);
    const reverse = checked?.reverse === true;
    this.#checkOpen();
    const snapshot = this.#readSnapshot();
    const writes = this.#writes;
    if (writes !== undefined && writes.stampedKeys.length > 0 && writes.rangeHasStampedKey(start, end)) {
      throw new FdbError(FdbErrorCode.accessed_unreadable, 'the range may contain a key this transaction versionstamped');
    }
    const results: KeyValue[] = [];
    if (Buffer.compare(start, end) < 0) {
      if (writes?.touchesRange(start, end)) mergeRange(writes, snapshot, start, end, reverse, limit, results);
      else snapshot.collect(start, end, reverse, limit, results);
    }
    if (conflict) this.#addReadRange(readConflictRange(start, end, reverse, limit, results.length, results[results.length - 1]?.key));
    return results;
  }

  /**
   * The keys of `#getRange`'s pairs, forward: with no buffered write in the
   * range, read keys only from lmdb (see fast-paths.ts).
   */
  #getRangeKeys(startBytes: Bytes, endBytes: Bytes, options: RangeOptions | undefined, conflict: boolean): Buffer[] {
    const start = checkKey(startBytes, 'range start');
    const end = checkRangeEnd(endBytes);
    checkRange(start, end);
    const checked = checkRangeOptions(options);
    const limit = checkRangeLimit(checked?.limit);
    const writes = this.#writes;
    if (checked?.reverse === true || (writes !== undefined && (writes.stampedKeys.length > 0 || writes.touchesRange(start, end)))) {
      return this.#getRange(start, end, options, conflict).map(keyOf);
    }
    this.#checkOpen();
    const snapshot = this.#readSnapshot();
    const results: Buffer[] = [];
    if (Buffer.compare(start, end) < 0) snapshot.collectKeys(start, end, limit, results);
    if (conflict) this.#addReadRange(readConflictRange(start, end, false, limit, results.length, results[results.length - 1]));
    return results;
  }

  /** The snapshot reads go to, taken by the first read; later reads check the transaction's age first unless `checkAge` is false. */
  #readSnapshot(checkAge = true): StoreSnapshot {
    let snapshot = this.#snapshot;
    if (snapshot === undefined) {
      snapshot = this.#pipeline.acquireSnapshot();
      this.#snapshot = snapshot;
      this.#readVersionAt = this.#pipeline.now();
    } else if (checkAge) {
      this.#checkAge();
    }
    return snapshot;
  }

  /** Fails with transaction_too_old (1007) once the read version is more than 5 s old, on the clock read now. */
  #checkAge(): void {
    if (this.#snapshot !== undefined && this.#pipeline.now() - this.#readVersionAt > TRANSACTION_LIFE_MS) this.#tooOld();
  }

  #tooOld(): never {
    throw new FdbError(
      FdbErrorCode.transaction_too_old,
      `the read version was taken more than ${TRANSACTION_LIFE_MS} ms ago; transactions live 5 seconds`,
    );
  }

  #addReadKey(keyString: string, length: number): void {
    this.#readKeys.push(keyString);
    this.#conflictBytes += length;
  }

  #addReadRange(range: [Buffer, Buffer]): void {
    this.#readRanges.push(range);
    this.#conflictBytes += range[0].length + range[1].length;
  }

  // --- writes ------------------------------------------------------------

  set(key: Bytes, value: Bytes): void {
    const k = checkKey(key);
    const v = checkValue(value);
    this.#checkOpen();
    this.#pendingWrites().set(copyBytes(k), copyBytes(v));
    if (this.#watches !== undefined) this.#fireOwnWatches(k, v, true);
  }

  /**
   * `set` keeping the caller's buffers, which it hands over for good (see
   * fast-paths.ts): the same checks, no copies.
   * @internal
   */
  setHandedOver(key: Buffer, value: Buffer): void {
    const k = checkKey(key);
    const v = checkValue(value);
    this.#checkOpen();
    this.#pendingWrites().set(k, v);
    if (this.#watches !== undefined) this.#fireOwnWatches(k, v, true);
  }

  clear(key: Bytes): void {
    const k = checkKey(key);
    this.#checkOpen();
    this.#pendingWrites().clear(copyBytes(k));
    if (this.#watches !== undefined) this.#fireOwnWatches(k, undefined, true);
  }

  /**
   * `clear` keeping the caller's key buffer.
   * @internal
   */
  clearHandedOver(key: Buffer): void {
    const k = checkKey(key);
    this.#checkOpen();
    this.#pendingWrites().clear(k);
    if (this.#watches !== undefined) this.#fireOwnWatches(k, undefined, true);
  }

  clearRange(start: Bytes, end: Bytes): void {
    const s = checkKey(start, 'range start');
    const e = checkRangeEnd(end);
    checkRange(s, e);
    this.#checkOpen();
    if (Buffer.compare(s, e) >= 0) return;
    this.#pendingWrites().clearRange(copyBytes(s), copyBytes(e));
    if (this.#watches !== undefined) {
      for (const watch of this.#watches) {
        if (!watch.settled && watch.seen !== undefined && Buffer.compare(s, watch.key) <= 0 && Buffer.compare(watch.key, e) < 0) watch.settle(true);
      }
    }
  }

  atomicAdd(key: Bytes, delta: number | bigint): void {
    const k = checkKey(key);
    const operand = addOperand(delta);
    this.#checkOpen();
    this.#pendingWrites().add(copyBytes(k), operand);
    if (this.#watches !== undefined) this.#fireOwnWatches(k, undefined, false);
  }

  setVersionstampedKey(keyTemplate: Bytes, offset: number, value: Bytes): void {
    const template = checkKey(keyTemplate, 'key template');
    const at = checkVersionstampOffset(template, offset);
    const v = checkValue(value);
    this.#checkOpen();
    this.#pendingWrites().setStampedKey(copyBytes(template), at, copyBytes(v));
  }

  /**
   * `setVersionstampedKey` keeping the caller's value buffer (the template
   * is copied: it is stamped in place).
   * @internal
   */
  setVersionstampedKeyHandedOver(keyTemplate: Buffer, offset: number, value: Buffer): void {
    const template = checkKey(keyTemplate, 'key template');
    const at = checkVersionstampOffset(template, offset);
    const v = checkValue(value);
    this.#checkOpen();
    this.#pendingWrites().setStampedKey(copyBytes(template), at, v);
  }

  setVersionstampedValue(key: Bytes, valueTemplate: Bytes, offset: number): void {
    const k = checkKey(key);
    const template = checkValue(valueTemplate, 'value template');
    const at = checkVersionstampOffset(template, offset);
    this.#checkOpen();
    this.#pendingWrites().setStampedValue(copyBytes(k), copyBytes(template), at);
    if (this.#watches !== undefined) this.#fireOwnWatches(k, undefined, false);
  }

  /**
   * `setVersionstampedValue` keeping the caller's buffers (the commit
   * stamps the template in place).
   * @internal
   */
  setVersionstampedValueHandedOver(key: Buffer, valueTemplate: Buffer, offset: number): void {
    const k = checkKey(key);
    const template = checkValue(valueTemplate, 'value template');
    const at = checkVersionstampOffset(template, offset);
    this.#checkOpen();
    this.#pendingWrites().setStampedValue(k, template, at);
    if (this.#watches !== undefined) this.#fireOwnWatches(k, undefined, false);
  }

  #pendingWrites(): PendingWrites {
    this.#writes ??= new PendingWrites();
    return this.#writes;
  }

  getVersionstamp(): Promise<Buffer> {
    if (this.#stamp === undefined) {
      this.#stamp = new PendingVersionstamp();
      if (this.#state === 'committed' || this.#state === 'failed') {
        this.#stamp.reject(new FdbError(FdbErrorCode.client_invalid_operation, 'getVersionstamp() must be called before commit'));
      }
    }
    return this.#stamp.promise;
  }

  // --- conflicts -----------------------------------------------------------

  // A conflict key or range fixes the read version (it is checked against
  // the commits after it) but reads nothing: the transaction's age is checked
  // by its reads and by its commit, not here. An accept adds one per job it
  // takes, and a clock read for each would be a visible share of a drain.

  addReadConflictKey(key: Bytes): void {
    const k = checkKey(key);
    this.#checkOpen();
    this.#readSnapshot(false);
    this.#addReadKey(k.toString('latin1'), k.length);
  }

  addReadConflictRange(start: Bytes, end: Bytes): void {
    const s = checkKey(start, 'range start');
    const e = checkRangeEnd(end);
    checkRange(s, e);
    this.#checkOpen();
    this.#readSnapshot(false);
    if (Buffer.compare(s, e) < 0) this.#addReadRange([copyBytes(s), copyBytes(e)]);
  }

  addWriteConflictKey(key: Bytes): void {
    const k = checkKey(key);
    this.#checkOpen();
    this.#writeConflictKeys ??= [];
    this.#writeConflictKeys.push(copyBytes(k));
    this.#conflictBytes += k.length;
  }

  // --- watches -------------------------------------------------------------

  // As in FoundationDB's read-your-writes transaction: a watch reads its
  // key as `get` does (at the read version, through this transaction's
  // own writes, with a read conflict) and compares with that value. A
  // later write of this transaction that changes it fires the watch at
  // once; an atomic op fires it whatever it adds, as FoundationDB does not
  // compute the op's result to compare. Other transactions' changes count
  // once this one has committed (see WatchRegistry.arm).

  watch(key: Bytes): Watch {
    const k = checkKey(key);
    this.#checkOpen();
    const watch = new KeyWatch(copyBytes(k), k.toString('latin1'));
    try {
      watch.seen = this.#get(watch.key, true);
    } catch (error) {
      // The read's error is the watch's (accessed_unreadable on a key this
      // transaction versionstamped, say); the transaction goes on.
      if (!(error instanceof FdbError)) throw error;
      watch.fail(error);
      return watch;
    }
    this.#watches ??= [];
    this.#watches.push(watch);
    return watch;
  }

  /**
   * Fires the watches of `key` a write of this transaction changes:
   * `known` false for an atomic op, which fires them whatever it writes.
   */
  #fireOwnWatches(key: Buffer, value: Buffer | undefined, known: boolean): void {
    for (const watch of this.#watches as KeyWatch[]) {
      if (watch.settled || watch.key.length !== key.length || !watch.key.equals(key)) continue;
      if (!known || !sameValue(watch.seen, value)) watch.settle(true);
    }
  }

  onVisible(callback: () => void): void {
    this.#checkOpen();
    this.#visible ??= [];
    this.#visible.push(callback);
  }

  // --- commit --------------------------------------------------------------

  #checkOpen(): void {
    if (this.#pipeline.closed) throw new FdbError(FdbErrorCode.client_invalid_operation, 'the database is closed');
    if (this.#state === 'committing') {
      throw new FdbError(FdbErrorCode.used_during_commit, 'the transaction is being committed');
    }
    if (this.#state !== 'open') {
      throw new FdbError(FdbErrorCode.client_invalid_operation, `the transaction is already ${this.#state}`);
    }
  }

  /**
   * Commits: the promise resolves once durable; `undefined` when there is
   * nothing to wait for (a read-only transaction is committed on return).
   * Called by `doTransaction`; a transaction is used for one attempt only.
   * @internal
   */
  commit(): Promise<void> | undefined {
    this.#checkOpen();
    this.#state = 'committing';
    try {
      const writes = this.#writes;
      if ((writes === undefined || writes.isEmpty) && this.#writeConflictKeys === undefined) {
        this.#commitReadOnly();
        return undefined;
      }
      this.#checkAge();
      const size = (writes?.bytes ?? 0) + this.#conflictBytes;
      if (size > MAX_TRANSACTION_BYTES) {
        throw new FdbError(
          FdbErrorCode.transaction_too_large,
          `the transaction is ${size} bytes (writes and conflict ranges); the limit is ${MAX_TRANSACTION_BYTES}`,
        );
      }
      const versionAtCommit = this.#pipeline.lastVersion;
      let ticket: CommitTicket;
      try {
        ticket = this.#pipeline.commit(this.#request(writes ?? new PendingWrites()));
      } catch (error) {
        if (FdbError.is(error, 'not_committed')) this.#conflictedBefore = versionAtCommit;
        throw error;
      }
      return this.#awaitDurable(ticket);
    } catch (error) {
      this.abandon(error);
      throw error;
    }
  }

  /**
   * Like FoundationDB's client, a transaction without writes commits at once
   * and is not checked for age (there is nothing to resolve); it only arms
   * its watches.
   */
  #commitReadOnly(): void {
    if (this.#pipeline.closing) throw new FdbError(FdbErrorCode.client_invalid_operation, 'the database is closed');
    if (this.#watches !== undefined) {
      this.#checkAge();
      this.#pipeline.armReadOnly(this.#watches);
    }
    this.#state = 'committed';
    this.#releaseSnapshot();
    this.#stamp?.reject(new FdbError(FdbErrorCode.client_invalid_operation, 'a read-only transaction has no versionstamp'));
    // Nothing to write: what it did (nothing) is readable now.
    if (this.#visible !== undefined) for (const callback of this.#visible) callback();
  }

  #request(writes: PendingWrites): CommitRequest {
    return {
      readVersion: this.#snapshot?.version,
      readKeys: this.#readKeys,
      readRanges: this.#readRanges,
      writes,
      writeConflictKeys: this.#writeConflictKeys ?? NO_KEYS,
      watches: this.#watches ?? NO_WATCHES,
      visible: this.#visible ?? NO_CALLBACKS,
    };
  }

  async #awaitDurable(ticket: CommitTicket): Promise<void> {
    try {
      await ticket.durable;
    } catch (error) {
      this.abandon(error);
      throw error;
    }
    this.#state = 'committed';
    this.#releaseSnapshot();
    this.#stamp?.resolve(versionstamp(ticket.version, ticket.order));
  }

  /**
   * Ends an attempt that will not commit: frees its snapshot and rejects its
   * watches and versionstamp with `reason`.
   * @internal
   */
  abandon(reason: unknown): void {
    if (this.#state === 'committed' || this.#state === 'failed') return;
    this.#state = 'failed';
    this.#releaseSnapshot();
    const error =
      reason instanceof FdbError
        ? reason
        : new FdbError(FdbErrorCode.transaction_cancelled, 'the transaction did not commit', { cause: reason });
    if (this.#watches !== undefined) for (const watch of this.#watches) watch.fail(error);
    this.#stamp?.reject(error);
  }

  /**
   * After a conflict, a retry waits until what it conflicted with is
   * durable (and so readable); other retryable errors use the default backoff.
   * @internal
   */
  beforeRetry(error: FdbError, attempt: number): Promise<void> | undefined {
    if (error.code !== FdbErrorCode.not_committed || this.#conflictedBefore === undefined) return undefined;
    return this.#pipeline.waitForDurable(this.#conflictedBefore, attempt, this.#readKeys, this.#readRanges);
  }

  #releaseSnapshot(): void {
    const snapshot = this.#snapshot;
    if (snapshot !== undefined) {
      this.#snapshot = undefined;
      snapshot.release();
    }
  }
}
