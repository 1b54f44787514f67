// FoundationDB's retry loop, shared by every backend's `doTransaction`:
// run the body in a fresh transaction, commit, and start over on the
// retryable errors, after a short randomized backoff so that transactions
// that conflicted with each other do not collide again in lockstep.

import { FdbError } from '../errors.js';
import type { TransactionOptions } from './interfaces.js';

/**
 * One attempt: the backend's transaction, which also knows how to commit or
 * abandon itself. (Methods, not closures: creating functions per attempt is
 * measurable on the hot path, more so under tsx, which names each one.)
 */
export interface Attempt {
  commit(): Promise<void>;
  /** Frees the attempt after an error (its own or the body's). */
  abandon(reason: unknown): void;
  /**
   * What to wait for before retrying after `error`, when the backend knows
   * better than a random backoff (e.g. until the commit it conflicted with
   * is readable); `undefined` for the default backoff.
   */
  beforeRetry?(error: FdbError, attempt: number): Promise<void> | undefined;
}

const DEFAULT_RETRY_LIMIT = 100;
const MAX_BACKOFF_MS = 100;

function backoff(attempt: number): Promise<void> {
  const ceiling = Math.min(MAX_BACKOFF_MS, 2 ** Math.min(attempt, 10));
  const ms = Math.random() * ceiling;
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function retryTransaction<Tx extends Attempt, T>(
  begin: () => Tx,
  body: (tx: Tx) => Promise<T> | T,
  options?: TransactionOptions,
): Promise<T> {
  const retryLimit = options?.retryLimit ?? DEFAULT_RETRY_LIMIT;
  for (let attempt = 0; ; attempt++) {
    const current = begin();
    let wait: Promise<void> | undefined;
    try {
      const result = await body(current);
      await current.commit();
      return result;
    } catch (error) {
      current.abandon(error);
      if (!(error instanceof FdbError) || !error.retryable || attempt >= retryLimit) throw error;
      wait = current.beforeRetry?.(error, attempt);
    }
    await (wait ?? backoff(attempt));
  }
}
