// The embedded backend: FoundationDB's transaction model over lmdb, in the
// process that opened it (see commit-pipeline.ts for how commits work).

import { FdbError, FdbErrorCode } from '../../errors.js';
import type { Database, Transaction, TransactionOptions } from '../interfaces.js';
import { retryTransaction } from '../retry-loop.js';
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
}

export class EmbeddedDatabase implements Database {
  readonly kind = 'embedded' as const;
  /** The data directory (resolved). */
  readonly path: string;
  readonly #lock: DirectoryLock;
  readonly #store: LmdbStore;
  readonly #pipeline: CommitPipeline;
  #closed: Promise<void> | undefined;
  readonly #begin = (): EmbeddedTransaction => new EmbeddedTransaction(this.#pipeline);

  private constructor(lock: DirectoryLock, store: LmdbStore, pipeline: CommitPipeline) {
    this.path = lock.directory;
    this.#lock = lock;
    this.#store = store;
    this.#pipeline = pipeline;
  }

  static open(options: EmbeddedEngineOptions): EmbeddedDatabase {
    const lock = DirectoryLock.acquire(options.path);
    try {
      const store = new LmdbStore(lock.directory);
      return new EmbeddedDatabase(lock, store, new CommitPipeline(store, options.now ?? Date.now));
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  /** The version of the last durable commit (what a new transaction reads at). */
  get durableVersion(): number {
    return this.#pipeline.durableVersion;
  }

  doTransaction<T>(body: (tx: Transaction) => Promise<T> | T, options?: TransactionOptions): Promise<T> {
    if (this.#closed !== undefined) {
      return Promise.reject(new FdbError(FdbErrorCode.client_invalid_operation, 'the database is closed'));
    }
    return retryTransaction(this.#begin, body, options);
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
