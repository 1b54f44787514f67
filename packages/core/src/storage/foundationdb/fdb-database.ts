// The storage contract's `Database` on a FoundationDB cluster: one binding
// database, every key under one directory-layer prefix, and the retry loop
// driven by FoundationDB's own on_error (its backoff and its retryable set).

import { FdbError, FdbErrorCode } from '../../errors.js';
import type { BackendKind, Database, Transaction, TransactionOptions } from '../interfaces.js';
import { checkTransactionArguments, type RetryPolicy, retryLoop } from '../retry-loop.js';
import { type BindingDatabase, type BindingTransaction, bindingErrorCode } from './binding.js';
import { FdbTransaction, toFdbError } from './fdb-transaction.js';
import type { Keyspace } from './keyspace.js';

export class FoundationDbDatabase implements Database {
  readonly kind: BackendKind = 'foundationdb';
  readonly #db: BindingDatabase;
  readonly #keyspace: Keyspace;
  #closed = false;

  constructor(db: BindingDatabase, keyspace: Keyspace) {
    this.#db = db;
    this.#keyspace = keyspace;
  }

  /** The directory prefix every key lives under (for diagnostics and tests). */
  get prefix(): Buffer {
    return Buffer.from(this.#keyspace.prefix);
  }

  /**
   * The longest key a caller may use: FoundationDB's 10,000-byte limit
   * applies to the whole cluster key, directory prefix included.
   */
  get maxKeyBytes(): number {
    return this.#keyspace.maxKeyBytes;
  }

  async doTransaction<T>(body: (tx: Transaction) => Promise<T> | T, options?: TransactionOptions): Promise<T> {
    if (this.#closed) throw new FdbError(FdbErrorCode.client_invalid_operation, 'the database is closed');
    const retryLimit = checkTransactionArguments(body, options);
    return retryLoop(new FdbAttempts(this.#db.rawCreateTransaction(), this.#keyspace), body, retryLimit);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // The binding's network thread is per process and cannot restart once
    // stopped, so closing releases this database only.
    this.#db.close();
  }
}

/**
 * One `doTransaction`'s attempts: all on one binding transaction, which
 * FoundationDB's on_error resets between them.
 */
class FdbAttempts implements RetryPolicy<FdbTransaction> {
  readonly #tn: BindingTransaction;
  readonly #keyspace: Keyspace;

  constructor(tn: BindingTransaction, keyspace: Keyspace) {
    this.#tn = tn;
    this.#keyspace = keyspace;
  }

  begin(): FdbTransaction {
    return new FdbTransaction(this.#tn, this.#keyspace);
  }

  /**
   * Any error with a FoundationDB code goes to on_error, which decides: it
   * waits FoundationDB's backoff and resets the transaction, or rethrows when
   * the error is not retryable (bad-input codes, 2xxx, come straight back).
   */
  retry(error: unknown, attempt: number, retryLimit: number): Promise<void> {
    const code = bindingErrorCode(error);
    if (code === undefined || attempt >= retryLimit) this.#giveUp(error);
    return this.#tn.rawOnError(code).catch(() => this.#giveUp(error));
  }

  #giveUp(error: unknown): never {
    this.#tn.rawCancel();
    throw toFdbError(error);
  }
}
