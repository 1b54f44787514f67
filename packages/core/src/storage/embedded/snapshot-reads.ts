// `tx.snapshot()` of an embedded transaction: its reads without read conflicts.

import type { Bytes, KeyValue, RangeOptions, ReadTransaction } from '../interfaces.js';

/** The reads of a transaction, with or without a read conflict (what `EmbeddedTransaction` offers). */
export interface ConflictChoosingReads {
  readKey(key: Bytes, conflict: boolean): Promise<Buffer | undefined>;
  readRange(start: Bytes, end: Bytes, options: RangeOptions | undefined, conflict: boolean): Promise<KeyValue[]>;
}

/**
 * `tx.snapshot()`: the same reads without read conflicts. A class rather
 * than an object of arrow functions, which tsx (esbuild keepNames) would
 * name one by one with `Object.defineProperty` for every transaction.
 */
export class SnapshotReads implements ReadTransaction {
  readonly #tx: ConflictChoosingReads;

  constructor(tx: ConflictChoosingReads) {
    this.#tx = tx;
  }

  get(key: Bytes): Promise<Buffer | undefined> {
    return this.#tx.readKey(key, false);
  }

  getRange(start: Bytes, end: Bytes, options?: RangeOptions): Promise<KeyValue[]> {
    return this.#tx.readRange(start, end, options, false);
  }
}
