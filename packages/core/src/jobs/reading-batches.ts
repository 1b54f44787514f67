// The pipeline both batchers (accepts, writes) run their transactions in:
// while a batch's body reads, the next batch waits, since it would pick the
// same jobs or the same calls; once the body is done and only the commit is
// left, the next batch may start reading.

import type { Database, Transaction } from '../storage/interfaces.js';

export class ReadingBatches {
  readonly #database: Database;
  readonly #onBodyDone: () => void;
  #reading = 0;

  /** `onBodyDone` runs after each attempt's body: the batcher starts its next batch there. */
  constructor(database: Database, onBodyDone: () => void) {
    this.#database = database;
    this.#onBodyDone = onBodyDone;
  }

  /** Batches whose body runs now (or whose transaction has not reached its body yet). */
  get reading(): number {
    return this.#reading;
  }

  /**
   * Runs one batch's transaction. The batch counts as reading from this call
   * until its attempt's body is done, and again for each retried attempt;
   * an attempt that failed before its body ran stops counting when the
   * transaction settles.
   */
  async transact<T>(body: (tx: Transaction) => Promise<T>): Promise<T> {
    this.#reading += 1;
    let reading = true;
    try {
      return await this.#database.doTransaction(async (tx) => {
        if (!reading) {
          reading = true;
          this.#reading += 1;
        }
        try {
          return await body(tx);
        } finally {
          reading = false;
          this.#reading -= 1;
          this.#onBodyDone();
        }
      });
    } finally {
      if (reading) this.#reading -= 1;
    }
  }
}
