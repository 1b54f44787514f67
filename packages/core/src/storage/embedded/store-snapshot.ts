// A read view of the embedded engine's store at one commit version: an lmdb
// read transaction, shared by reference count between the transactions that
// read at that version and the pipeline, over the layout of store-layout.ts
// (long keys in their buckets, the empty key in the meta table).

import type { Database as LmdbDatabase, RangeOptions, Transaction as LmdbReadTxn } from 'lmdb';
import type { KeyValue } from '../interfaces.js';
import { BUCKET_KEY_BYTES, LONG_KEY_PREFIX, META_EMPTY_KEY, bucketKeyOf, decodeBucket } from './store-layout.js';

const EMPTY = Buffer.alloc(0);

/**
 * Empty ranges a snapshot remembers at most; past this the oldest is
 * forgotten. A few cover what an idle worker reads again and again (its
 * type's pending queue, its groups), and each range read looks through
 * them all before it opens a cursor.
 */
const EMPTY_RANGES_KEPT = 8;

/**
 * A copy of the first `length` bytes of lmdb's reusable buffer, in a Buffer
 * from Node's pool. Through an exact view: the reusable buffer's
 * `byteLength` is its whole area, which `Buffer#copy` would go by. An empty
 * value is a fresh view of an empty buffer: `Buffer.allocUnsafe(0)` takes a
 * slow path, dearer than a pooled small copy, and every pending job's entry
 * is empty.
 */
export function copyOut(bytes: Uint8Array, length: number): Buffer {
  if (length === 0) return EMPTY.subarray(0, 0);
  const value = Buffer.allocUnsafe(length);
  value.set(new Uint8Array(bytes.buffer, bytes.byteOffset, length));
  return value;
}

/**
 * lmdb-js's `getBinaryFast` takes the same options as `get` (the read
 * transaction); its typings leave them out.
 */
interface FastBinaryReads {
  getBinaryFast(key: Buffer, options: { transaction: LmdbReadTxn }): Buffer | undefined;
}

/** The keys one commit batch wrote, as far as a snapshot's empty ranges go (the conflict log's record of the batch). */
export interface BatchKeys {
  /** Whether the batch wrote (set, added to, stamped, or cleared by itself) a key in `[start, end)`. */
  writesInside(start: Buffer, end: Buffer): boolean;
}

/** A consistent read view of the store at one commit version. */
export class StoreSnapshot {
  readonly version: number;
  readonly #data: LmdbDatabase<Buffer, Buffer>;
  readonly #fastData: FastBinaryReads;
  readonly #meta: LmdbDatabase<Buffer, Buffer>;
  readonly #txn: LmdbReadTxn;
  readonly #readOptions: { transaction: LmdbReadTxn };
  /** References held (readers, and the pipeline's "head" and "published" roles); freed at zero. */
  #users = 0;
  #released = false;
  /**
   * Ranges `[start, end)` a complete read of this snapshot found no key in,
   * newest last (see `#knownEmpty`). The snapshot is one lmdb read
   * transaction, whose view never changes: what it held no key in, it never
   * will, so nothing invalidates them. A write, by any handle or
   * transaction, makes a new snapshot, which starts with none.
   */
  #emptyRanges: Array<[Buffer, Buffer]> | undefined;
  /**
   * The empty ranges of the snapshot before this one and the keys of the
   * batch between, not looked through yet (see `keepEmptyRangesOf`).
   */
  #inheritedRanges: Array<[Buffer, Buffer]> | undefined;
  #inheritedWritten: BatchKeys | undefined;
  readonly #onRelease: (snapshot: StoreSnapshot) => void;

  constructor(
    version: number,
    data: LmdbDatabase<Buffer, Buffer>,
    meta: LmdbDatabase<Buffer, Buffer>,
    txn: LmdbReadTxn,
    onRelease: (snapshot: StoreSnapshot) => void,
  ) {
    this.version = version;
    this.#data = data;
    this.#fastData = data as unknown as FastBinaryReads;
    this.#meta = meta;
    this.#txn = txn;
    this.#readOptions = { transaction: txn };
    this.#onRelease = onRelease;
  }

  /** Takes one more reference; pair with `release()`. */
  retain(): this {
    this.#users++;
    return this;
  }

  /** Drops a reference; the lmdb read transaction ends with the last one. */
  release(): void {
    this.#users--;
    if (this.#users <= 0) this.end();
  }

  /** Whether the lmdb read transaction has ended (nobody reads at this version any more). */
  get ended(): boolean {
    return this.#released;
  }

  /** Ends the lmdb read transaction now, whoever still holds the snapshot (the store is closing). */
  end(): void {
    if (this.#released) return;
    this.#released = true;
    this.#onRelease(this);
    this.#txn.done();
  }

  get(key: Buffer): Buffer | undefined {
    if (key.length === 0) return this.#meta.get(META_EMPTY_KEY, this.#readOptions);
    if (key.length <= LONG_KEY_PREFIX) {
      // lmdb's own copy (`get`) is a Uint8Array slice: a fresh ArrayBuffer
      // per read. Copying out of its reusable buffer into a Buffer from
      // Node's pool costs a fraction of that for small values.
      const shared = this.#fastData.getBinaryFast(key, this.#readOptions);
      // Its `length` is the value's.
      return shared === undefined ? undefined : copyOut(shared, shared.length);
    }
    const bucket = this.#data.get(bucketKeyOf(key), this.#readOptions);
    if (bucket === undefined) return undefined;
    for (const entry of decodeBucket(bucket)) if (entry.key.equals(key)) return Buffer.from(entry.value);
    return undefined;
  }

  /** The encoded bucket stored under `bucketKey`, if any. */
  rawBucket(bucketKey: Buffer): Buffer | undefined {
    return this.#data.get(bucketKey, this.#readOptions);
  }

  /**
   * `range`, the first `limit` pairs pushed onto `out`: without a generator
   * step and an object of its own per pair (every accept reads a page of
   * the pending queue this way).
   */
  collect(start: Buffer, end: Buffer, reverse: boolean, limit: number, out: KeyValue[]): void {
    if (start.length === 0 || Buffer.compare(start, end) >= 0) {
      // The empty key lives in the meta table: the general path.
      for (const entry of this.range(start, end, reverse)) {
        out.push(entry);
        if (out.length >= limit) return;
      }
      return;
    }
    if (out.length >= limit || this.#knownEmpty(start, end)) return;
    const before = out.length;
    for (const entry of this.#data.getRange(this.#rangeOptions(start, end, reverse))) {
      if (entry.key.length !== BUCKET_KEY_BYTES) {
        // lmdb's own pair: a fresh object holding fresh copies of the key and value.
        out.push(entry);
        if (out.length >= limit) return;
        continue;
      }
      const entries = decodeBucket(entry.value);
      if (reverse) entries.reverse();
      for (const inner of entries) {
        if (Buffer.compare(inner.key, start) >= 0 && Buffer.compare(inner.key, end) < 0) {
          out.push({ key: Buffer.from(inner.key), value: Buffer.from(inner.value) });
          if (out.length >= limit) return;
        }
      }
    }
    if (out.length === before) this.#foundEmpty(start, end);
  }

  /**
   * The keys `collect` would read, forward, through lmdb-js's keys-only
   * range (`getKeys`): no value is copied out of lmdb and no pair object is
   * made per entry.
   * Every entry of the pending queue is empty, and an accept reads a page
   * of them. A bucket of long keys is read whole, as its keys are inside.
   */
  collectKeys(start: Buffer, end: Buffer, limit: number, out: Buffer[]): void {
    if (start.length === 0 || Buffer.compare(start, end) >= 0) {
      // The empty key lives in the meta table: the general path.
      for (const entry of this.range(start, end, false)) {
        out.push(entry.key);
        if (out.length >= limit) return;
      }
      return;
    }
    if (out.length >= limit || this.#knownEmpty(start, end)) return;
    const before = out.length;
    for (const key of this.#data.getKeys(this.#rangeOptions(start, end, false))) {
      if (key.length !== BUCKET_KEY_BYTES) {
        // lmdb's own copy of the key.
        out.push(key);
        if (out.length >= limit) return;
        continue;
      }
      const bucket = this.#data.get(key, this.#readOptions);
      if (bucket === undefined) continue;
      for (const inner of decodeBucket(bucket)) {
        if (Buffer.compare(inner.key, start) >= 0 && Buffer.compare(inner.key, end) < 0) {
          out.push(Buffer.from(inner.key));
          if (out.length >= limit) return;
        }
      }
    }
    if (out.length === before) this.#foundEmpty(start, end);
  }

  /** lmdb's range options for `[start, end)` (long bounds turned into their buckets; an empty start: from the first key). */
  #rangeOptions(start: Buffer, end: Buffer, reverse: boolean): RangeOptions {
    const low = start.length === 0 ? undefined : start.length > LONG_KEY_PREFIX ? bucketKeyOf(start) : start;
    // A long end bound must still include its own bucket (whose entries are filtered by the caller).
    const highExclusive = end.length > LONG_KEY_PREFIX ? Buffer.concat([bucketKeyOf(end), Buffer.of(0)]) : end;
    return reverse
      ? { start: highExclusive, end: low, reverse: true, exclusiveStart: true, inclusiveEnd: true, transaction: this.#txn }
      : { start: low, end: highExclusive, transaction: this.#txn };
  }

  /** Pairs with `start <= key < end`, in key order or reversed. Stop early by breaking out of the loop. */
  *range(start: Buffer, end: Buffer, reverse: boolean): Generator<KeyValue> {
    if (Buffer.compare(start, end) >= 0 || this.#knownEmpty(start, end)) return;
    const empty = start.length === 0 ? this.#meta.get(META_EMPTY_KEY, this.#readOptions) : undefined;
    if (empty !== undefined && !reverse) yield { key: EMPTY, value: empty };
    let found = empty !== undefined;
    for (const { key, value } of this.#data.getRange(this.#rangeOptions(start, end, reverse))) {
      if (key.length !== BUCKET_KEY_BYTES) {
        found = true;
        yield { key, value };
        continue;
      }
      const entries = decodeBucket(value);
      if (reverse) entries.reverse();
      for (const entry of entries) {
        if (Buffer.compare(entry.key, start) >= 0 && Buffer.compare(entry.key, end) < 0) {
          found = true;
          yield { key: Buffer.from(entry.key), value: Buffer.from(entry.value) };
        }
      }
    }
    if (empty !== undefined && reverse) yield { key: EMPTY, value: empty };
    // Reached only when the caller read to the end.
    if (!found) this.#foundEmpty(start, end);
  }

  /**
   * Takes over the empty ranges of `previous`, the view right before the
   * one batch (`written`) this snapshot adds to it, in which that batch
   * wrote no key: they are empty here too. (A range the batch cleared holds
   * no key it did not hold before.) An idle worker's queue, found empty
   * when its accept parked, so stays known across the commits that do not
   * enqueue to it, such as the finish of its last job.
   *
   * They are looked through at this snapshot's first range read, not here:
   * the pipeline takes a commit's snapshot before it tells the commit's
   * waiters, and a job handed to an idle worker would wait for that work
   * before its handler starts. `previous` settles its own first, so what is
   * held is one batch's keys, never a chain of them.
   */
  keepEmptyRangesOf(previous: StoreSnapshot, written: BatchKeys): void {
    previous.#settleInheritedRanges();
    const ranges = previous.#emptyRanges;
    if (ranges === undefined) return;
    // Ranges `previous` finds empty later are empty in it too: shared, not copied.
    this.#inheritedRanges = ranges;
    this.#inheritedWritten = written;
  }

  /** Keeps the inherited ranges (see `keepEmptyRangesOf`) the batch wrote no key in. */
  #settleInheritedRanges(): void {
    const ranges = this.#inheritedRanges;
    const written = this.#inheritedWritten;
    if (ranges === undefined || written === undefined) return;
    this.#inheritedRanges = undefined;
    this.#inheritedWritten = undefined;
    for (const [start, end] of ranges) {
      if (written.writesInside(start, end)) continue;
      this.#emptyRanges ??= [];
      if (this.#emptyRanges.length >= EMPTY_RANGES_KEPT) return;
      // Never changed after they were recorded: shared, not copied.
      this.#emptyRanges.push([start, end]);
    }
  }

  /** Whether a range this snapshot found empty holds `[start, end)`: then no cursor is opened for it. */
  #knownEmpty(start: Buffer, end: Buffer): boolean {
    this.#settleInheritedRanges();
    const ranges = this.#emptyRanges;
    if (ranges === undefined) return false;
    for (const [emptyStart, emptyEnd] of ranges) {
      if (Buffer.compare(emptyStart, start) <= 0 && Buffer.compare(end, emptyEnd) <= 0) return true;
    }
    return false;
  }

  /** A complete read of `[start, end)` found no key: remembered, as copies (callers may reuse their bounds). */
  #foundEmpty(start: Buffer, end: Buffer): void {
    this.#settleInheritedRanges();
    this.#emptyRanges ??= [];
    if (this.#emptyRanges.length >= EMPTY_RANGES_KEPT) this.#emptyRanges.shift();
    this.#emptyRanges.push([Buffer.from(start), Buffer.from(end)]);
  }
}
