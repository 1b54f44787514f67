// A Database decorator for the jobs tests: it counts transactions and the
// writes of each attempt, and can inject storage errors (1007, 2101) the way
// a real cluster raises them when a transaction does too much.

import type {
  Bytes,
  Database,
  KeyValue,
  RangeOptions,
  ReadTransaction,
  Transaction,
  TransactionOptions,
  Watch,
} from '@jobtree/core';
import { FdbError } from '@jobtree/core';

export interface AttemptStats {
  /** Gets plus rows returned by range reads. */
  reads: number;
  writes: number;
}

export interface RecordingOptions {
  /** Called after every read and write of an attempt; returning an error makes the attempt fail with it. */
  inject?: (stats: AttemptStats) => FdbError | undefined;
  /** Awaited before each doTransaction call reaches the real database: holds a transaction "in flight". */
  beforeTransaction?: () => Promise<void> | undefined;
  /** Awaited after an attempt's body returned, before its commit: holds a transaction "committing". */
  afterBody?: () => Promise<void> | undefined;
}

export class RecordingDatabase implements Database {
  readonly #inner: Database;
  readonly #inject: RecordingOptions['inject'];
  readonly #beforeTransaction: RecordingOptions['beforeTransaction'];
  readonly #afterBody: RecordingOptions['afterBody'];
  /** doTransaction calls. */
  transactions = 0;
  /** Attempts (runs of a body): more than `transactions` when some were retried. */
  attempts = 0;
  /** Write counts of the attempts that committed. */
  readonly committedWrites: number[] = [];
  /** Errors injected so far, by code. */
  readonly injected = new Map<number, number>();
  /** Range reads (snapshot ones too) and watches made, over all attempts. */
  readonly calls = { rangeReads: 0, watches: 0 };

  constructor(inner: Database, options: RecordingOptions = {}) {
    this.#inner = inner;
    this.#inject = options.inject;
    this.#beforeTransaction = options.beforeTransaction;
    this.#afterBody = options.afterBody;
  }

  get kind() {
    return this.#inner.kind;
  }

  async doTransaction<T>(body: (tx: Transaction) => Promise<T> | T, options?: TransactionOptions): Promise<T> {
    this.transactions += 1;
    await this.#beforeTransaction?.();
    let last: AttemptStats = { reads: 0, writes: 0 };
    const result = await this.#inner.doTransaction(async (tx) => {
      const stats: AttemptStats = { reads: 0, writes: 0 };
      last = stats;
      this.attempts += 1;
      const result = await body(new RecordingTransaction(tx, stats, (code) => this.#count(code), this.#inject, this.calls));
      await this.#afterBody?.();
      return result;
    }, options);
    this.committedWrites.push(last.writes);
    return result;
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  #count(code: number): void {
    this.injected.set(code, (this.injected.get(code) ?? 0) + 1);
  }
}

class RecordingTransaction implements Transaction {
  constructor(
    readonly inner: Transaction,
    readonly stats: AttemptStats,
    readonly onInject: (code: number) => void,
    readonly inject: RecordingOptions['inject'],
    readonly calls: RecordingDatabase['calls'],
  ) {}

  #check(): void {
    const error = this.inject?.(this.stats);
    if (error) {
      this.onInject(error.code);
      throw error;
    }
  }

  #write(): void {
    this.stats.writes += 1;
    this.#check();
  }

  async get(key: Bytes): Promise<Buffer | undefined> {
    this.stats.reads += 1;
    this.#check();
    return this.inner.get(key);
  }

  async getRange(start: Bytes, end: Bytes, options?: RangeOptions): Promise<KeyValue[]> {
    this.calls.rangeReads += 1;
    this.#check();
    const rows = await this.inner.getRange(start, end, options);
    this.stats.reads += rows.length;
    this.#check();
    return rows;
  }

  snapshot(): ReadTransaction {
    const snapshot = this.inner.snapshot();
    return {
      get: async (key) => {
        this.stats.reads += 1;
        this.#check();
        return snapshot.get(key);
      },
      getRange: async (start, end, options) => {
        this.calls.rangeReads += 1;
        this.#check();
        const rows = await snapshot.getRange(start, end, options);
        this.stats.reads += rows.length;
        this.#check();
        return rows;
      },
    };
  }

  set(key: Bytes, value: Bytes): void {
    this.#write();
    this.inner.set(key, value);
  }
  clear(key: Bytes): void {
    this.#write();
    this.inner.clear(key);
  }
  clearRange(start: Bytes, end: Bytes): void {
    this.#write();
    this.inner.clearRange(start, end);
  }
  addReadConflictKey(key: Bytes): void {
    this.inner.addReadConflictKey(key);
  }
  addReadConflictRange(start: Bytes, end: Bytes): void {
    this.inner.addReadConflictRange(start, end);
  }
  addWriteConflictKey(key: Bytes): void {
    this.inner.addWriteConflictKey(key);
  }
  atomicAdd(key: Bytes, delta: number | bigint): void {
    this.#write();
    this.inner.atomicAdd(key, delta);
  }
  setVersionstampedKey(keyTemplate: Bytes, offset: number, value: Bytes): void {
    this.#write();
    this.inner.setVersionstampedKey(keyTemplate, offset, value);
  }
  setVersionstampedValue(key: Bytes, valueTemplate: Bytes, offset: number): void {
    this.#write();
    this.inner.setVersionstampedValue(key, valueTemplate, offset);
  }
  getVersionstamp(): Promise<Buffer> {
    return this.inner.getVersionstamp();
  }
  watch(key: Bytes): Watch {
    this.calls.watches += 1;
    return this.inner.watch(key);
  }
  onVisible(callback: () => void): void {
    this.inner.onVisible?.(callback);
  }
}

export { FdbError };

/**
 * A wrapper for `openTempJobs(t, wrap)` that keeps the RecordingDatabase it
 * makes, for tests that count what the jobs handle does in the store.
 */
export function recording(): { wrap(db: Database): RecordingDatabase; readonly db: RecordingDatabase; readonly transactions: number } {
  let recorder: RecordingDatabase | undefined;
  const opened = (): RecordingDatabase => {
    if (recorder === undefined) throw new Error('the jobs handle has not opened its database yet');
    return recorder;
  };
  return {
    wrap: (db: Database) => {
      recorder = new RecordingDatabase(db);
      return recorder;
    },
    get db() {
      return opened();
    },
    get transactions() {
      return opened().transactions;
    },
  };
}
