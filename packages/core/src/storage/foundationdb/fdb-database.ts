// The storage contract's `Database` on a FoundationDB cluster: one binding
// database, every key under one directory-layer prefix, and the retry loop
// driven by FoundationDB's own on_error (its backoff and its retryable set).

import { FdbError, FdbErrorCode } from '../../errors.js';
import type { BackendKind, Database, Transaction, TransactionOptions } from '../interfaces.js';
import { checkTransactionArguments } from '../retry-loop.js';
import { type BindingDatabase, bindingErrorCode } from './binding.js';
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
    const tn = this.#db.rawCreateTransaction();
    for (let retries = 0; ; retries++) {
      const attempt = new FdbTransaction(tn, this.#keyspace);
      try {
        const result = await body(attempt);
        await attempt.commit();
        return result;
      } catch (error) {
        attempt.end();
        // Any error with a FoundationDB code goes to on_error, which decides:
        // bad-input codes (2xxx) are not retryable and come straight back.
        const code = bindingErrorCode(error);
        if (code === undefined || retries >= retryLimit) {
          tn.rawCancel();
          throw toFdbError(error);
        }
        try {
          // Waits FoundationDB's backoff and resets the transaction, or
          // rethrows when the error is not retryable.
          await tn.rawOnError(code);
        } catch {
          tn.rawCancel();
          throw toFdbError(error);
        }
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // The binding's network thread is per process and cannot restart once
    // stopped, so closing releases this database only.
    this.#db.close();
  }
}
