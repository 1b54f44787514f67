// FoundationDB's retry loop, shared by every backend's `doTransaction`:
// run the body in a fresh transaction, commit, and start over on the
// retryable errors, after a short randomized backoff so that transactions
// that conflicted with each other do not collide again in lockstep.

import { FdbError, FdbErrorCode } from '../errors.js';
import type { TransactionOptions } from './interfaces.js';
import { describe } from './limits.js';

/**
 * One attempt: the backend's transaction, which also knows how to commit or
 * abandon itself. (Methods, not closures: creating functions per attempt is
 * measurable on the hot path, more so under tsx, which names each one.)
 */
export interface Attempt {
  /** Commits; `undefined` when the attempt is already committed (nothing to wait for). */
  commit(): Promise<void> | undefined;
  /** Frees the attempt after an error (its own or the body's). */
  abandon(reason: unknown): void;
  /**
   * What to wait for before retrying after `error`, when the backend knows
   * better than a random backoff (e.g. until the commit it conflicted with
   * is readable); `undefined` for the default backoff.
   */
  beforeRetry?(error: FdbError, attempt: number): Promise<void> | undefined;
}

export const DEFAULT_RETRY_LIMIT = 100;
const MAX_BACKOFF_MS = 100;

function backoff(attempt: number): Promise<void> {
  const ceiling = Math.min(MAX_BACKOFF_MS, 2 ** Math.min(attempt, 10));
  const ms = Math.random() * ceiling;
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Checks `doTransaction`'s arguments, for every backend, before anything
 * runs, and returns the retry limit. A limit that is not a number would make
 * `attempt >= retryLimit` never true, and the loop endless.
 */
export function checkTransactionArguments(body: unknown, options: unknown): number {
  if (typeof body !== 'function') {
    throw new FdbError(FdbErrorCode.client_invalid_operation, `the transaction body must be a function, got ${describe(body)}`);
  }
  if (options === undefined || options === null) return DEFAULT_RETRY_LIMIT;
  if (typeof options !== 'object') {
    throw new FdbError(FdbErrorCode.invalid_option_value, `transaction options must be an object, got ${describe(options)}`);
  }
  const { retryLimit } = options as TransactionOptions;
  if (retryLimit === undefined) return DEFAULT_RETRY_LIMIT;
  if (
    typeof retryLimit !== 'number' ||
    !(retryLimit >= 0) ||
    (!Number.isSafeInteger(retryLimit) && retryLimit !== Number.POSITIVE_INFINITY)
  ) {
    throw new FdbError(
      FdbErrorCode.invalid_option_value,
      `retryLimit must be a non-negative integer or Infinity, got ${describe(retryLimit)}`,
    );
  }
  return retryLimit;
}

/** Whether `await` would wait for `value` (a promise or any other thenable). */
function isThenable<T>(value: Promise<T> | T): value is Promise<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/**
 * Runs `body` in attempts from `begin` until one commits, retrying at most
 * `retryLimit` times (checked by `checkTransactionArguments`). Each `await` costs
 * a turn of the microtask queue, a real share of a short transaction's time,
 * so a body that returns a plain value, and a commit with nothing to wait
 * for, are not awaited.
 */
export async function retryTransaction<Tx extends Attempt, T>(
  begin: () => Tx,
  body: (tx: Tx) => Promise<T> | T,
  retryLimit: number,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const current = begin();
    let wait: Promise<void> | undefined;
    try {
      const returned = body(current);
      // A body's promise (or any thenable) is settled before the commit.
      const result = isThenable(returned) ? await returned : returned;
      const committing = current.commit();
      if (committing !== undefined) await committing;
      return result;
    } catch (error) {
      current.abandon(error);
      if (!(error instanceof FdbError) || !error.retryable || attempt >= retryLimit) throw error;
      wait = current.beforeRetry?.(error, attempt);
    }
    await (wait ?? backoff(attempt));
  }
}
