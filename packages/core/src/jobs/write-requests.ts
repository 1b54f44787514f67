// What the write batcher (write-batcher.ts) is given to run: one call's
// work, as a body the batcher runs and wraps or as a request that reports
// its own outcome, and how a caller learns that its call has settled.

import type { Transaction } from '../storage/interfaces.js';
import type { Settled } from './interfaces.js';
import type { SharedReads } from './shared-reads.js';

/**
 * A call's work inside a shared transaction. `userVersion` is unique among
 * the calls of the transaction (an update needs one for its activity row).
 */
export type WriteBody<T> = (tx: Transaction, userVersion: number, reads: SharedReads) => Promise<T>;

/**
 * A call for the batcher: a body it runs and wraps ({@link BodyRequest}), or
 * one that reports its own outcome ({@link SettlingRequest}).
 */
export type WriteRequest<T> = BodyRequest<T> | SettlingRequest<T>;

/** What the batcher needs of every call, whatever runs it. */
interface WriteRequestBase {
  /**
   * The job the call writes: `id` of type `scope`. Two calls on one job never share a transaction, and
   * the later one waits until the earlier has settled, so calls on one job
   * apply in the order they were made.
   */
  scope: string;
  id: string;
  /** About how many bytes the call writes: transactions are kept well below the storage limit. */
  bytes: number;
}

/** A call whose body the batcher runs, its outcome caught by an async wrapper (a promise and a frame per call). */
export interface BodyRequest<T> extends WriteRequestBase {
  body: WriteBody<T>;
  settleInto?: undefined;
  readFirst?: undefined;
}

/**
 * A call that runs its own body and reports its outcome (of type `_Result`, what
 * `submit` resolves with): what the calls that come in bulk are (see
 * write-calls.ts), which saves the batch a wrapper per call.
 */
export interface SettlingRequest<_Result> extends WriteRequestBase {
  body?: undefined;
  /**
   * Runs the body and reports its outcome to `outcomes` under `userVersion`
   * itself, now or once its reads arrive; never throws, and a promise it
   * returns never rejects. Called as a method, so a request may be a class instance.
   */
  settleInto(tx: Transaction, userVersion: number, reads: SharedReads, outcomes: BodyOutcomes): Promise<void> | void;
  /**
   * Optional: makes the call's reads that the transaction answers at once,
   * before any call of the attempt runs `settleInto` (so before any
   * writes), for `settleInto` to use; `reads` are the attempt's shared
   * reads. Never throws: a failed read is `settleInto`'s outcome.
   */
  readFirst?(tx: Transaction, reads: SharedReads): void;
}

/** Where the calls of a batch report their outcomes, by user version. */
export interface BodyOutcomes {
  settle(userVersion: number, outcome: Settled<unknown>): void;
}

/**
 * Told when a call settles, just after its promise is: how a caller that
 * must know when its writes are done (a local queue's `stop()`) counts
 * them without a `then` per call.
 */
export interface WriteCounter {
  settled(): void;
}
