// What the parts of a `Jobs` handle (jobs.ts) behind its API share of it:
// whether it is open, the error its calls reject with once it is not, the
// checked keys of a type or of a job handle's type, and its transactions.

import { JobsError } from '../errors.js';
import type { Database, Transaction } from '../storage/interfaces.js';
import type { AdaptiveBatchSize } from './batch-size.js';
import type { Job } from './interfaces.js';
import type { TypeKeys } from './job-keys.js';
import type { JobsClock } from './jobs-clock.js';

/** A `Jobs` handle, as its accept path, its read, batch and activity calls use it. */
export interface HandleContext {
  readonly database: Database;
  /** Whether `close()` has run. */
  isClosed(): boolean;
  /** Throws `closed` once the handle is closed. */
  checkOpen(): void;
  /** What a call rejects with: once the handle is closed, a storage error means `closed`. */
  failure(error: unknown): unknown;
  /** The checked, cached keys of a type; throws `closed` once the handle is closed. */
  typeKeys(type: unknown): TypeKeys;
  /** `typeKeys` of a job handle's type, once the handle's shape and id are checked. */
  jobKeys(job: Job): TypeKeys;
  /** `body` in a transaction of its own; its failures as `failure` names them. */
  run<T>(body: (tx: Transaction) => Promise<T> | T): Promise<T>;
  /** One bulk batch of adaptive size (see batch-size.ts); its failures as `failure` names them. */
  runBatch<T>(size: AdaptiveBatchSize, body: (tx: Transaction, size: number) => Promise<T>): Promise<T>;
  /** The clock rate limits count on (see jobs-clock.ts). */
  readonly clock: JobsClock;
}

/** What the calls of a closed handle reject with; `cause`: the storage error that failed one in flight. */
export function closedError(cause?: unknown): JobsError {
  return new JobsError('closed', 'this jobs handle is closed', cause === undefined ? undefined : { cause });
}
