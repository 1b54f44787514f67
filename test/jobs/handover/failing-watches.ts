// A database whose watches the test can fail rather than fire: FoundationDB
// rejects a watch after its transaction committed (too many watches, a lost
// connection), and so may any other storage behind the `Database` interface.

import type { Bytes, Database, Transaction, TransactionOptions, Watch } from '@jobtree/core';

/** Passes everything through, but keeps a way to fail each watch made through it (in `failers`, oldest first). */
export class FailingWatches implements Database {
  readonly #inner: Database;
  readonly failers: ((error: unknown) => void)[] = [];

  constructor(inner: Database) {
    this.#inner = inner;
  }

  get kind() {
    return this.#inner.kind;
  }

  doTransaction<T>(body: (tx: Transaction) => Promise<T> | T, options?: TransactionOptions): Promise<T> {
    return this.#inner.doTransaction((tx) => body(this.#wrap(tx)), options);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  #wrap(tx: Transaction): Transaction {
    const failers = this.failers;
    return new Proxy(tx, {
      get(target, property) {
        if (property === 'watch') {
          return (key: Bytes): Watch => {
            const inner = target.watch(key);
            let fail!: (error: unknown) => void;
            const failed = new Promise<boolean>((_, reject) => {
              fail = reject;
            });
            failed.catch(() => {});
            failers.push(fail);
            const promise = Promise.race([inner.promise, failed]);
            promise.catch(() => {});
            return { promise, cancel: () => inner.cancel() };
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }
}
