// The embedded backend: FoundationDB's transaction model over lmdb, in the
// process that opened it (see commit-pipeline.ts for how commits work).

import { DataDirectoryError, FdbError, FdbErrorCode } from '../../errors.js';
import type { Database, StoreDurability, Transaction, TransactionOptions } from '../interfaces.js';
import { checkTransactionArguments, type RetryPolicy, retryLoop, retryRetryable } from '../retry-loop.js';
import { CommitPipeline } from './commit-pipeline.js';
import { DirectoryLock } from './directory-lock.js';
import { EmbeddedTransaction } from './embedded-transaction.js';
import { LmdbStore } from './lmdb-store.js';

export interface EmbeddedEngineOptions {
  /** Data directory (created if missing). */
  path: string;
  /**
   * The clock the 5-second transaction life is measured with, in ms.
   * Tests inject one to age transactions without sleeping.
   * @default Date.now
   */
  now?: () => number;
  /** When a commit is acknowledged (see `StoreDurability`). @default 'flush' */
  durability?: StoreDurability;
}

export class EmbeddedDatabase implements Database {
  readonly kind = 'embedded' as const;
  /** The data directory (resolved). */
  readonly path: string;
  readonly #lock: DirectoryLock;
  readonly #store: LmdbStore;
  readonly #pipeline: CommitPipeline;
  #closed: Promise<void> | undefined;
  readonly #attempts: RetryPolicy<EmbeddedTransaction> = {
    begin: () => new EmbeddedTransaction(this.#pipeline),
    retry: retryRetryable,
  };

  private constructor(lock: DirectoryLock, store: LmdbStore, pipeline: CommitPipeline) {
    this.path = lock.directory;
    this.#lock = lock;
    this.#store = store;
    this.#pipeline = pipeline;
  }

  static open(options: EmbeddedEngineOptions): EmbeddedDatabase {
    const lock = DirectoryLock.acquire(options.path);
    let store: LmdbStore;
    try {
      store = new LmdbStore(lock.directory, true);
    } catch (error) {
      lock.release();
      const reason = error instanceof Error ? error.message : String(error);
      throw new DataDirectoryError(lock.directory, `lmdb cannot open it (${reason})`, { cause: error });
    }
    try {
      return new EmbeddedDatabase(lock, store, new CommitPipeline(store, options.now ?? Date.now, options.durability === 'deferred'));
    } catch (error) {
      // The store opened but its first read failed: close it before giving the directory up.
      void store.close().finally(() => lock.release());
      throw error;
    }
  }

  /** What a new transaction reads at: the last durable commit, or a later one read ahead of its sync (`onVisible`). */
  get durableVersion(): number {
    return this.#pipeline.durableVersion;
  }

  doTransaction<T>(body: (tx: Transaction) => Promise<T> | T, options?: TransactionOptions): Promise<T> {
    if (this.#closed !== undefined) {
      return Promise.reject(new FdbError(FdbErrorCode.client_invalid_operation, 'the database is closed'));
    }
    let retryLimit: number;
    try {
      retryLimit = checkTransactionArguments(body, options);
    } catch (error) {
      return Promise.reject(error);
    }
    return retryLoop(this.#attempts, body, retryLimit);
  }

  /** Waits for accepted commits to be durable, cancels watches, closes lmdb and releases the directory. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      try {
        await this.#pipeline.close();
        await this.#store.close();
      } finally {
        this.#lock.release();
      }
    })();
    return this.#closed;
  }
}
