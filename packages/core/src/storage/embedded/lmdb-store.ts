// The embedded engine's writes to lmdb: one lmdb transaction per commit
// batch, filled while the event turn lasts (see `write`) or written in place
// (`writeNow`), in the layout of store-layout.ts; and its read snapshots
// (store-snapshot.ts).

import { open } from 'lmdb';
import type { DatabaseOptions, Database as LmdbDatabase, RootDatabase } from 'lmdb';
import { FdbError, FdbErrorCode } from '../../errors.js';
import type { KeyValue } from '../interfaces.js';
import { versionOfStamp, writeCommitVersion } from '../versionstamp.js';
import { CommitVisibility } from './commit-visibility.js';
import { forgetClosedStores } from './lmdb-registry.js';
import { LONG_KEY_PREFIX, META_EMPTY_KEY, bucketKeyOf, decodeBucket, encodeBucket } from './store-layout.js';
import { StoreSnapshot, copyOut } from './store-snapshot.js';

/** lmdb reader slots (lmdb's default is 126); each costs 64 bytes in the lock file. */
const MAX_READERS = 4096;
const META_VERSION = Buffer.from('last-commit-version');
/**
 * How far ahead of the versions it hands out the store records its version
 * (1 s of microsecond versions): a reopened store starts above the recorded
 * one, so only about one batch a second writes it. Every other batch leaves
 * the meta table alone, one page fewer to write and sync per commit.
 */
const VERSION_LEASE = 1_000_000;
/**
 * A meta key that is never stored: removing it opens lmdb's transaction for
 * the event turn (as a write must) without changing a page.
 */
const TURN_OPENER = Buffer.from('turn-opener');

/**
 * lmdb-js starts its writer thread on a turn's transaction once the writes
 * made in the turn count more than `batchStartThreshold` (1,000 by default,
 * each write counting 1 plus 1 per 4 KiB of value; 0 reads as the default),
 * else at the end of the turn. Below 1, it starts at the turn's first write,
 * which `write` makes as it opens the transaction: the writer thread wakes
 * and opens lmdb's transaction, then applies each put as it is made, while
 * this thread finishes the turn. An idle commit then no longer pays the
 * thread's wake-up after the turn has ended; a batch of many writes already
 * started this way after its first thousand. The writer thread then holds
 * lmdb's write lock until the turn ends: a synchronous transaction on this
 * thread meanwhile would make lmdb-js commit the waiting batch part way,
 * which is why `writeNow` runs only while no write is under way.
 */
const WRITER_STARTS_AT_FIRST_WRITE = { batchStartThreshold: 0.5 } as const;

function ignore(): void {}

/**
 * The data table's value encoding: bytes in, and out as a copy in a Buffer
 * from Node's pool. lmdb-js's own 'binary' decoding copies each value of a
 * range read with `Uint8Array#slice` of its reusable buffer, which takes a
 * slow path there (the buffer's `length` is an own property) and gives every
 * value an ArrayBuffer of its own, once per pair of every range page; a
 * copy into a pooled Buffer does neither. Given an object with `encode` and
 * `decode`, lmdb-js calls `decode(bytes)` on its reusable buffer, whose `length` is
 * then the value's, and leaves the copy to the decoder (`decoderCopies`).
 */
const COPYING_BINARY = {
  encode(value: Buffer): Buffer {
    return value;
  },
  decode(bytes: Uint8Array): Buffer {
    return copyOut(bytes, bytes.length);
  },
};

/** The last change of each key in the first `count` of `parts`, by latin1 string. */
export function lastChanges(parts: readonly (readonly KeyChange[])[], count = parts.length): Map<string, KeyChange> {
  const changes = new Map<string, KeyChange>();
  for (let i = 0; i < count; i++) for (const change of parts[i] as readonly KeyChange[]) changes.set(change.key.toString('latin1'), change);
  return changes;
}

/** The final value of one key after a batch: a Buffer, or `undefined` for deleted. */
export interface KeyChange {
  key: Buffer;
  value: Buffer | undefined;
}

/** What a write's `fill` supplies: the batch's final key values, and the store as it was before it. */
export interface WriteContents {
  changes: Iterable<KeyChange>;
  /** Shows the store exactly as it was before this batch (it supplies the current contents of long-key buckets). */
  base: StoreSnapshot;
}

/**
 * A pending lmdb write: `committed` once visible to new lmdb readers,
 * `flushed` once on disk. `error` is set when filling it failed part way
 * (some of the batch may be in the transaction): its outcome is unknown.
 * `visible`, on a store that tracks it (the embedded database's always does), resolves as
 * soon as lmdb's transaction is visible, ahead of its flush; it never
 * rejects and may never resolve (see commit-visibility.ts): race it with
 * `committed`.
 */
export interface StoreWrite {
  committed: Promise<unknown>;
  flushed: Promise<unknown>;
  visible: Promise<void> | undefined;
  error: unknown;
}

interface PendingFill {
  fill: () => WriteContents;
  write: StoreWrite;
  /** The buckets of long keys this write has changed so far: their entries now, by bucket key. */
  buckets: Map<string, Map<string, KeyValue>> | undefined;
  /** The changes this write has handed to lmdb so far, one array per call (long keys' among them). */
  written: (readonly KeyChange[])[];
}

/** What a write has put so far (see `PendingFill`). */
type WriteState = Pick<PendingFill, 'buckets' | 'written'>;

export class LmdbStore {
  readonly #root: RootDatabase<Buffer, Buffer>;
  readonly #data: LmdbDatabase<Buffer, Buffer>;
  readonly #meta: LmdbDatabase<Buffer, Buffer>;
  /** Snapshots whose lmdb read transaction is still open; lmdb must not close under them. */
  readonly #live = new Set<StoreSnapshot>();
  readonly #forget = (snapshot: StoreSnapshot) => this.#live.delete(snapshot);
  /** The write whose contents are still to come, at the end of lmdb's event turn. */
  #pending: PendingFill | undefined;
  /** Every version up to this one is covered by the recorded version of a committed write. */
  #versionCeiling = 0;
  /** Tells when a write is visible ahead of its flush (see `trackVisible`). */
  readonly #visibility: CommitVisibility | undefined;

  /**
   * `trackVisible`: report each write's `visible` moment, ahead of its
   * flush: deferred durability acknowledges batches then, and either
   * durability hands jobs to waiting accepts then (see commit-pipeline.ts
   * and parked-accepts.ts). The store's integrity does not depend on it
   * (lmdb's overlapping sync, on in both modes, keeps it).
   */
  constructor(path: string, trackVisible = false) {
    // separateFlushed: a write's promise resolves at commit and carries a
    // second `flushed` promise; the engine needs both moments (see commit-pipeline.ts).
    // maxReaders: every commit batch gets its own lmdb read snapshot, held
    // while any transaction reads at that version (up to the 5 s life).
    // noSubdir false: lmdb-js would otherwise take a path with an extension
    // (`jobs.db`, `tmp.Xy12`) for a single-file database, though the engine
    // always gives it a directory.
    this.#root = open<Buffer, Buffer>({
      path,
      noSubdir: false,
      keyEncoding: 'binary',
      encoding: 'binary',
      separateFlushed: true,
      maxReaders: MAX_READERS,
      ...WRITER_STARTS_AT_FIRST_WRITE,
    });
    const dataOptions: DatabaseOptions & { name: string; encoder: typeof COPYING_BINARY } = {
      name: 'data',
      keyEncoding: 'binary',
      encoding: 'binary',
      encoder: COPYING_BINARY,
    };
    this.#data = this.#root.openDB<Buffer, Buffer>(dataOptions);
    this.#meta = this.#root.openDB<Buffer, Buffer>({ name: 'meta', keyEncoding: 'binary', encoding: 'binary' });
    // lmdb-js gathers every write made in one event turn into one transaction
    // and, at the end of the turn, lets 'beforecommit' listeners add writes
    // to it: that is where a batch is built and written (see `write`).
    this.#root.on('beforecommit', () => this.#fillPending());
    this.#visibility = trackVisible ? CommitVisibility.install(this.#root) : undefined;
  }

  /** Whether writes report their `visible` moment (see the constructor). */
  get tracksVisible(): boolean {
    return this.#visibility !== undefined;
  }

  /**
   * A version at least as new as the last commit written (the recorded one,
   * which runs ahead of the versions used), or 0 for a new store.
   */
  lastVersion(): number {
    this.#root.resetReadTxn();
    const bytes = this.#meta.get(META_VERSION);
    this.#versionCeiling = bytes === undefined ? 0 : versionOfStamp(bytes);
    return this.#versionCeiling;
  }

  /**
   * A read view of everything committed so far, labelled `version`. The
   * caller must make sure no write is in flight, or the label would lie.
   */
  snapshot(version: number): StoreSnapshot {
    this.#root.resetReadTxn();
    const snapshot = new StoreSnapshot(version, this.#data, this.#meta, this.#data.useReadTransaction(), this.#forget);
    this.#live.add(snapshot);
    return snapshot;
  }

  /**
   * Writes one batch as a single lmdb transaction, together with a recorded
   * version of at least `version` when the last one recorded is lower. That
   * write (or, inside the lease, a no-op removal) is made now, which opens
   * lmdb's transaction for this event turn; the batch's changes go in with
   * `writeEarly` while the turn lasts, and the rest is taken from `fill` at
   * the end of the turn, so that transactions committing until then still
   * join it. (Building the batch in a turn of our own and then
   * handing it to lmdb, which waits for the end of *that* turn, cost a second
   * event-loop turn per commit.) Only one write may wait for its contents at
   * a time, and the caller starts the next write only once this one has
   * committed or failed, so a recorded version counts only once it is in.
   */
  write(version: number, fill: () => WriteContents): StoreWrite {
    if (this.#pending !== undefined) throw new FdbError(FdbErrorCode.internal_error, 'a store write is already waiting for its contents');
    let committed!: Promise<boolean> & { flushed?: Promise<unknown> };
    let ceiling: number | undefined;
    const start = (): void => {
      if (version > this.#versionCeiling) {
        ceiling = version + VERSION_LEASE;
        const versionBytes = Buffer.allocUnsafe(8);
        writeCommitVersion(versionBytes, 0, ceiling);
        committed = this.#meta.put(META_VERSION, versionBytes) as typeof committed;
      } else {
        committed = this.#meta.remove(TURN_OPENER) as typeof committed;
      }
    };
    const visible = this.#visibility?.track(start);
    if (visible === undefined) start();
    if (ceiling !== undefined) {
      const recorded = ceiling;
      // Registered before the caller's own callbacks, so the next write sees
      // it: with deferred durability the next write may start once this one
      // is visible, before its promise resolves.
      committed.then((written) => this.#recorded(written, recorded), ignore);
      visible?.then(() => this.#recorded(true, recorded));
    }
    const write: StoreWrite = {
      committed,
      flushed: committed.flushed ?? committed.then(() => this.#root.flushed),
      visible,
      error: undefined,
    };
    this.#pending = { fill, write, buckets: undefined, written: [] };
    return write;
  }

  /**
   * Writes changes of the batch whose write is waiting for its contents
   * into lmdb's transaction now, ahead of the rest (`produce` computes them:
   * one or more whole transactions of the batch, long keys included, so
   * that a failure later in the batch never leaves one of them half
   * written). If producing or writing fails, now or before, the write's
   * `error` is set: the batch's outcome is unknown, as when filling fails,
   * and nothing more of it is written (`produce` is not called again).
   */
  writeEarly(produce: () => WriteContents): void {
    const pending = this.#pending;
    if (pending === undefined) throw new FdbError(FdbErrorCode.internal_error, 'no store write is waiting for its contents');
    if (pending.write.error !== undefined) return;
    try {
      this.#writeChanges(produce(), pending);
    } catch (error) {
      pending.write.error = error;
    }
  }

  /** A write that recorded `ceiling` committed. */
  #recorded(written: boolean, ceiling: number): void {
    if (written && ceiling > this.#versionCeiling) this.#versionCeiling = ceiling;
  }

  /**
   * Writes one batch in a synchronous lmdb transaction on this thread,
   * committed and synced to disk when this returns (lmdb syncs the data and
   * then the meta page before it releases a synchronous transaction, with or
   * without overlapping sync). It throws if the write failed, and then
   * nothing of the batch is in the store (lmdb aborts the transaction).
   * No other write may be under way (see commit-pipeline.ts for when this
   * is used instead of `write`).
   */
  writeNow(version: number, fill: () => WriteContents): void {
    if (this.#pending !== undefined) throw new FdbError(FdbErrorCode.internal_error, 'a store write is already waiting for its contents');
    let ceiling: number | undefined;
    this.#root.transactionSync(() => {
      if (version > this.#versionCeiling) {
        ceiling = version + VERSION_LEASE;
        const versionBytes = Buffer.allocUnsafe(8);
        writeCommitVersion(versionBytes, 0, ceiling);
        this.#meta.put(META_VERSION, versionBytes);
      }
      // A failure aborts this lmdb transaction whole: nothing to put back.
      const { changes, base } = fill();
      this.#writeChanges({ changes, base }, { buckets: undefined, written: [] });
    });
    if (ceiling !== undefined) this.#recorded(true, ceiling);
  }

  /** lmdb's 'beforecommit': writes the rest of the waiting batch into the transaction about to commit. */
  #fillPending(): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    try {
      // Called even after a failed early write: it closes the batch.
      const contents = pending.fill();
      if (pending.write.error !== undefined) return;
      this.#writeChanges(contents, pending);
    } catch (error) {
      // lmdb commits the transaction anyway: what of the batch is in it is unknown.
      pending.write.error ??= error;
    }
  }

  /**
   * Puts key changes into lmdb's current write transaction, in order. The
   * long keys among them are applied to their buckets (as `base`, the store
   * before this write, holds them, with this write's earlier changes), and
   * each bucket they touched is written once at the end of the call. If lmdb
   * refuses a put part way, what the call had put is put back as it was
   * before the call (each key's last value in this write's earlier calls,
   * else in `base`; the buckets' earlier entries), so that the transactions
   * these changes belong to are not left half written, and the error is
   * thrown on.
   */
  #writeChanges(contents: WriteContents, state: WriteState): void {
    const { base } = contents;
    const changes = Array.isArray(contents.changes) ? (contents.changes as readonly KeyChange[]) : [...contents.changes];
    let touched: Map<string, Map<string, KeyValue>> | undefined;
    // Changes before this index are applied (short keys put, long ones in
    // their buckets): what a failure puts back. A count rather than a list
    // of what was put, which cost an array slot per key written.
    let applied = 0;
    try {
      for (; applied < changes.length; applied++) {
        const { key, value } = changes[applied] as KeyChange;
        if (key.length > LONG_KEY_PREFIX) {
          const bucketKey = bucketKeyOf(key).toString('latin1');
          const entries = this.#bucketEntries(state, bucketKey, base);
          touched ??= new Map();
          if (!touched.has(bucketKey)) touched.set(bucketKey, new Map(entries));
          if (value === undefined) entries.delete(key.toString('latin1'));
          else entries.set(key.toString('latin1'), { key, value });
          continue;
        }
        this.#put(key, value);
      }
      if (touched !== undefined) for (const bucketKey of touched.keys()) this.#putBucket(bucketKey, this.#bucketEntries(state, bucketKey, base));
    } catch (error) {
      let before: Map<string, KeyChange> | undefined;
      for (let i = applied - 1; i >= 0; i--) {
        const { key } = changes[i] as KeyChange;
        if (key.length > LONG_KEY_PREFIX) continue; // its bucket is put back below
        before ??= lastChanges(state.written);
        const earlier = before.get(key.toString('latin1'));
        this.#put(key, earlier === undefined ? base.get(key) : earlier.value);
      }
      if (touched !== undefined) {
        for (const [bucketKey, entries] of touched) {
          (state.buckets as Map<string, Map<string, KeyValue>>).set(bucketKey, entries);
          this.#putBucket(bucketKey, entries);
        }
      }
      throw error;
    }
    // Long keys too: `lastChanges` is only asked about short ones, which no long key equals.
    state.written.push(changes);
  }

  /** Puts or removes one key of at most LONG_KEY_PREFIX bytes (the empty key in the meta table). */
  #put(key: Buffer, value: Buffer | undefined): void {
    if (key.length === 0) {
      if (value === undefined) this.#meta.remove(META_EMPTY_KEY);
      else this.#meta.put(META_EMPTY_KEY, value);
    } else if (value === undefined) {
      this.#data.remove(key);
    } else {
      this.#data.put(key, value);
    }
  }

  /** Writes a bucket with `entries` (removes it when there are none). */
  #putBucket(bucketKey: string, entries: Map<string, KeyValue>): void {
    const key = Buffer.from(bucketKey, 'latin1');
    if (entries.size === 0) this.#data.remove(key);
    else this.#data.put(key, encodeBucket([...entries.values()].sort((a, b) => Buffer.compare(a.key, b.key))));
  }

  /** The entries of a bucket as this write has left them so far (read from `base` the first time). */
  #bucketEntries(state: WriteState, bucketKey: string, base: StoreSnapshot): Map<string, KeyValue> {
    state.buckets ??= new Map();
    let entries = state.buckets.get(bucketKey);
    if (entries === undefined) {
      entries = new Map();
      const existing = base.rawBucket(Buffer.from(bucketKey, 'latin1'));
      if (existing !== undefined) for (const entry of decodeBucket(existing)) entries.set(entry.key.toString('latin1'), entry);
      state.buckets.set(bucketKey, entries);
    }
    return entries;
  }

  async close(): Promise<void> {
    for (const snapshot of [...this.#live]) snapshot.end();
    await this.#root.close();
    forgetClosedStores([this.#root, this.#data, this.#meta]);
  }
}
