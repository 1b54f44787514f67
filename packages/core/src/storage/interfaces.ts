// The storage contract every backend implements (docs/architecture.md): FoundationDB's
// transaction model. The embedded engine and the FoundationDB adapter both
// present exactly this surface, and one conformance suite (test/storage/)
// runs against each of them.

/** Keys and values are bytes. A Buffer is accepted wherever a Uint8Array is. */
export type Bytes = Uint8Array;

export interface KeyValue {
  key: Buffer;
  value: Buffer;
}

export interface RangeOptions {
  /** At most this many pairs. @default unlimited */
  limit?: number;
  /** Iterate from the end of the range backwards. @default false */
  reverse?: boolean;
}

export interface Watch {
  /**
   * Resolves `true` once the watched key's value differs from the value the
   * creating transaction could read when it made the watch (at its read
   * version, through its own earlier writes), or `false` when `cancel()` was
   * called first. A later write of that transaction that changes the value
   * (any atomic add, whatever it adds) fires it at once; other transactions'
   * changes, only after that transaction committed. Rejects with the
   * commit's error when it does not commit, and with the read's error
   * (`accessed_unreadable`, 1036, on a key it versionstamped) at once.
   */
  promise: Promise<boolean>;
  cancel(): void;
}

/** Reads. A snapshot view of a transaction offers only these. */
export interface ReadTransaction {
  get(key: Bytes): Promise<Buffer | undefined>;
  /** Pairs with `start <= key < end`, in key order (or reversed). */
  getRange(start: Bytes, end: Bytes, options?: RangeOptions): Promise<KeyValue[]>;
}

export interface Transaction extends ReadTransaction {
  /** The same transaction; reads through it add no read conflicts. */
  snapshot(): ReadTransaction;

  set(key: Bytes, value: Bytes): void;
  clear(key: Bytes): void;
  /** Clears `start <= key < end`. */
  clearRange(start: Bytes, end: Bytes): void;

  addReadConflictKey(key: Bytes): void;
  addReadConflictRange(start: Bytes, end: Bytes): void;
  addWriteConflictKey(key: Bytes): void;

  /** FoundationDB's atomic `add`: little-endian integer addition, no read conflict. */
  atomicAdd(key: Bytes, delta: number | bigint): void;

  /**
   * Writes `value` under `keyTemplate` with the 10 bytes at `offset` replaced
   * by this commit's versionstamp. Reading that key back in this transaction
   * fails with `accessed_unreadable` (1036).
   */
  setVersionstampedKey(keyTemplate: Bytes, offset: number, value: Bytes): void;
  /** Writes `valueTemplate` with the 10 bytes at `offset` replaced by the versionstamp. */
  setVersionstampedValue(key: Bytes, valueTemplate: Bytes, offset: number): void;
  /**
   * This transaction's 10-byte versionstamp; resolves once it has committed.
   * To hand it out of a `doTransaction` body, wrap it
   * (`return { stamp: tx.getVersionstamp() }`): a promise returned bare is
   * awaited before the commit, and so never resolves.
   */
  getVersionstamp(): Promise<Buffer>;

  /**
   * A watch on `key`, armed when (and only if) this transaction commits.
   * Making it reads `key` as `get` does, read conflict included.
   */
  watch(key: Bytes): Watch;

  /**
   * Calls `callback` once this transaction has committed and new
   * transactions read what it wrote, which may be before its commit is
   * durable (the embedded store with `durability: 'flush'`: lmdb has written
   * it and syncs it next; see docs/durability.md); never if it does not
   * commit. An engine without it makes what a transaction wrote readable
   * only once durable: its caller learns both when the commit resolves.
   */
  onVisible?(callback: () => void): void;
}

export interface TransactionOptions {
  /** Retries before the last retryable error is thrown. @default 100 */
  retryLimit?: number;
}

export type BackendKind = 'embedded' | 'foundationdb';

export interface Database {
  readonly kind: BackendKind;
  /**
   * Runs `body` in a transaction and commits it, retrying the whole body on
   * the retryable errors (1020, 1007, 1009, 1021). The body must therefore be
   * idempotent. Resolves with the body's result once the commit is durable.
   */
  doTransaction<T>(body: (tx: Transaction) => Promise<T> | T, options?: TransactionOptions): Promise<T>;
  close(): Promise<void>;
}

/**
 * When the embedded store acknowledges a commit. `'flush'`: once it is on
 * disk (synced); nothing acknowledged is ever lost. `'deferred'`: once it is
 * written and readable, a few milliseconds before its sync (which follows at
 * once, with no interval to wait for): a process crash loses nothing, an OS
 * crash or power loss can lose the commits of the last few milliseconds,
 * and the store is never corrupted (docs/durability.md).
 */
export type StoreDurability = 'flush' | 'deferred';

export interface EmbeddedOptions {
  /** Data directory. @default './.data/jobtree' */
  path?: string;
  /**
   * When a commit is acknowledged (see `StoreDurability`). Only the process
   * that opens the store decides: processes sharing it through its owner
   * get the owner's.
   * @default 'flush'
   */
  durability?: StoreDurability;
}

export interface FoundationDbOptions {
  /** FoundationDB cluster file. */
  clusterFile: string;
  /** Directory-layer path all keys live under. @default ['jobtree'] */
  directory?: string[];
}

export type DatabaseOptions = EmbeddedOptions | FoundationDbOptions;
