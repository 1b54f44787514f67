// Bulk operations (re-enqueueing inactive jobs, scanning jobs, counting the
// queue) run as a series of transactions of `size` items each. The size
// adapts like the activity monitor's in couch_jobs: it grows after each
// success and halves when a transaction was too slow (transaction_too_old,
// 1007) or too big (transaction_too_large, 2101), then the batch is retried.

import type { Database, Transaction } from '../storage/interfaces.js';
import { FdbError, FdbErrorCode, JobsError } from '../errors.js';
import { type Attempt, type RetryPolicy, backoff, retryLoop } from '../storage/retry-loop.js';

export interface BatchSizeOptions {
  /** Items in the first batch. @default 100 */
  initial?: number;
  /** Never fewer items than this. @default 1 */
  min?: number;
  /** Never more items than this. @default 10000 */
  max?: number;
  /** Factor applied after a successful batch. @default 1.5 */
  growth?: number;
  /** Factor applied after a 1007/2101 failure. @default 0.5 */
  shrink?: number;
}

export class AdaptiveBatchSize {
  #size: number;
  readonly #min: number;
  readonly #max: number;
  readonly #growth: number;
  readonly #shrink: number;

  constructor(options: BatchSizeOptions = {}) {
    this.#min = Math.max(1, Math.floor(options.min ?? 1));
    this.#max = Math.max(this.#min, Math.floor(options.max ?? 10_000));
    this.#growth = options.growth ?? 1.5;
    this.#shrink = options.shrink ?? 0.5;
    if (!(this.#growth >= 1) || !(this.#shrink > 0 && this.#shrink < 1)) {
      throw new JobsError('invalid_option', 'growth must be >= 1 and shrink strictly between 0 and 1');
    }
    this.#size = this.#clamp(options.initial ?? 100);
  }

  get size(): number {
    return this.#size;
  }

  /** Starts over from `size` (clamped), e.g. a caller's explicit batch size. */
  reset(size: number): void {
    this.#size = this.#clamp(size);
  }

  /** After a batch committed. */
  grow(): void {
    this.#size = this.#clamp(Math.ceil(this.#size * this.#growth));
  }

  /** After a batch failed with 1007/2101. Returns false when it was already at the minimum. */
  shrink(): boolean {
    if (this.#size <= this.#min) return false;
    this.#size = this.#clamp(Math.floor(this.#size * this.#shrink));
    return true;
  }

  #clamp(size: number): number {
    return Math.min(this.#max, Math.max(this.#min, Math.floor(size)));
  }
}

/** 1007 and 2101: the batch did too much for one transaction. */
export function isBatchTooBig(error: unknown): boolean {
  return (
    FdbError.is(error) &&
    (error.code === FdbErrorCode.transaction_too_old || error.code === FdbErrorCode.transaction_too_large)
  );
}

/** Other retryable errors (conflicts) run the same batch again, at most this often. */
const MAX_CONFLICT_RETRIES = 100;

/**
 * Runs one batch `body(tx, size)` in its own transaction. The storage retry
 * loop is switched off (`retryLimit: 0`) so that a 1007 reaches us: the batch
 * then shrinks and runs again; a conflict runs it again at the same size.
 * A committed batch grows the size for the next one.
 */
export function runBatch<T>(
  database: Database,
  batch: AdaptiveBatchSize,
  body: (tx: Transaction, size: number) => Promise<T>,
): Promise<T> {
  return retryLoop(
    new BatchAttempts(batch),
    (attempt) => {
      const size = attempt.size;
      return database.doTransaction((tx) => body(tx, size), { retryLimit: 0 });
    },
    MAX_CONFLICT_RETRIES,
  );
}

/**
 * The attempts of one `runBatch`, each at the size the batch had when it
 * began. The same object serves as every attempt: a batch's transaction has
 * committed by the time its attempt is, so there is nothing per attempt to free.
 */
class BatchAttempts implements RetryPolicy<BatchAttempts>, Attempt {
  readonly #batch: AdaptiveBatchSize;
  #size = 0;
  #conflicts = 0;

  constructor(batch: AdaptiveBatchSize) {
    this.#batch = batch;
  }

  /** Items in the current attempt's batch. */
  get size(): number {
    return this.#size;
  }

  begin(): BatchAttempts {
    this.#size = this.#batch.size;
    return this;
  }

  commit(): undefined {
    this.#batch.grow();
    return undefined;
  }

  abandon(): void {}

  retry(error: unknown, _attempt: number, retryLimit: number): Promise<void> | undefined {
    if (isBatchTooBig(error)) {
      if (!this.#batch.shrink()) throw error;
      return undefined;
    }
    // Only conflicts count against the limit: shrinking ends at the minimum size.
    if (FdbError.is(error) && error.retryable && this.#conflicts < retryLimit) {
      this.#conflicts += 1;
      // As the storage retry loop does: a short random pause, so two bulk
      // jobs that conflicted do not collide again in lockstep.
      return backoff(this.#conflicts);
    }
    throw error;
  }
}
