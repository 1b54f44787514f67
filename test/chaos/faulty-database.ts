// A Database that wraps the real one and makes chosen transaction attempts
// fail the way a busy FoundationDB cluster does: `not_committed` (1020, a
// conflict) or `transaction_too_old` (1007). The error is raised after the
// attempt's body has run and before its commit, so everything the body did
// is thrown away and the retry loop runs it again: the jobs layer must not
// have let any of it escape (a resolved promise, a woken waiter, an event).
//
// `commit_unknown_result` (1021) is the other way round: the commit went
// through but the client was not told, and the retry loop runs the body
// again on top of its own committed writes. Bodies must be idempotent for
// that; the wrapper plays it by running a committed transaction's body once
// more and answering with the second run's result.

import { type Database, FdbError, FdbErrorCode, type Transaction, type TransactionOptions } from '@jobtree/core';

export type StorageFaultKind = 'conflict' | 'too_old' | 'unknown_result';

const CODES: Record<Exclude<StorageFaultKind, 'unknown_result'>, number> = {
  conflict: FdbErrorCode.not_committed,
  too_old: FdbErrorCode.transaction_too_old,
};

export class FaultyDatabase implements Database {
  readonly #inner: Database;
  /** Faults waiting for the next attempts, in order. */
  readonly #armed: StorageFaultKind[] = [];
  /** Attempts that failed with an injected error, by kind. */
  readonly raised: Record<StorageFaultKind, number> = { conflict: 0, too_old: 0, unknown_result: 0 };

  constructor(inner: Database) {
    this.#inner = inner;
  }

  get kind() {
    return this.#inner.kind;
  }

  /** The database under the faults (for checks that must not be disturbed). */
  get inner(): Database {
    return this.#inner;
  }

  /** The next `attempts` transaction attempts to commit (whichever they are) fail with `kind`. */
  arm(kind: StorageFaultKind, attempts = 1): void {
    for (let i = 0; i < attempts; i++) this.#armed.push(kind);
  }

  /** Faults armed and not raised yet. */
  get armed(): number {
    return this.#armed.length;
  }

  /** Drops the faults not raised yet. */
  disarm(): void {
    this.#armed.length = 0;
  }

  async doTransaction<T>(body: (tx: Transaction) => Promise<T> | T, options?: TransactionOptions): Promise<T> {
    const attempt = async (tx: Transaction): Promise<T> => {
      const result = await body(tx);
      const fault = this.#armed[0];
      if (fault === 'conflict' || fault === 'too_old') {
        this.#armed.shift();
        this.raised[fault] += 1;
        throw new FdbError(CODES[fault], 'injected by the chaos run');
      }
      return result;
    };
    const result = await this.#inner.doTransaction(attempt, options);
    if (this.#armed[0] !== 'unknown_result') return result;
    this.#armed.shift();
    this.raised.unknown_result += 1;
    return this.#inner.doTransaction(attempt, options);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}
