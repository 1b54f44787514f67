// What a committing transaction of the embedded engine hands the commit
// pipeline (commit-pipeline.ts), and the ticket it gets back.

import type { PendingWrites } from './pending-writes.js';
import type { KeyWatch } from './watch-registry.js';

/** Everything the resolver needs from a committing transaction. */
export interface CommitRequest {
  /** The read version, or undefined when the transaction never read. */
  readonly readVersion: number | undefined;
  /** Point read conflicts, as latin1 strings of the keys. */
  readonly readKeys: readonly string[];
  /** Range read conflicts, `[start, end)`. */
  readonly readRanges: ReadonlyArray<readonly [Buffer, Buffer]>;
  readonly writes: PendingWrites;
  readonly writeConflictKeys: readonly Buffer[];
  readonly watches: readonly KeyWatch[];
  /** Told once the commit is readable by new transactions, ahead of its flush when the pipeline can (see commit-pipeline.ts). */
  readonly visible: readonly (() => void)[];
}

/** An accepted commit: its versionstamp is known at once, its durability later. */
export interface CommitTicket {
  version: number;
  /** The transaction's place in its batch. */
  order: number;
  /**
   * Resolves once the batch is durable; rejects when it failed. Shared by
   * every transaction of the batch (one promise per batch, not per commit).
   */
  durable: Promise<void>;
}
