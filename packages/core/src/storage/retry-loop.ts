// FoundationDB's retry loop, the one loop every retrying caller shares: each
// backend's `doTransaction` and the jobs layer's bulk batches. Run the body in
// a fresh attempt, commit, and start over when the caller's policy says the
// error is worth another try, by default after a short randomized backoff so
// that transactions that conflicted with each other do not collide again in
// lockstep.

import { FdbError, FdbErrorCode } from '../errors.js';
import { OptionNames } from '../option-names.js';
import type { TransactionOptions } from './interfaces.js';
import { describe } from './limits.js';

/**
 * One attempt: the backend's transaction (or a bulk batch), which knows how
 * to commit or abandon itself. (Methods, not closures: creating functions per
 * attempt is measurable on the hot path, more so under tsx, which names each one.)
 */
export interface Attempt {
  /** Commits; `undefined` when the attempt is already committed (nothing to wait for). */
  commit(): Promise<void> | undefined;
  /** Frees the attempt after an error (its own or the body's). */
  abandon(reason: unknown): void;
}

/** Where attempts come from and which errors are worth another one. */
export interface RetryPolicy<A extends Attempt> {
  /** A fresh attempt. */
  begin(): A;
  /**
   * After `current`, the `attempt`-th (from 0), failed with `error` and was
   * abandoned: what to wait for before the next attempt (`undefined`: begin
   * it at once). Throws, or returns a promise that rejects with, the error
   * the caller is to see when there is no next attempt.
   */
  retry(error: unknown, attempt: number, retryLimit: number, current: A): Promise<void> | undefined;
}

/** An attempt that may know better than a random backoff what to wait for before the next one. */
export interface RetryHint {
  /**
   * What to wait for before retrying after `error` (e.g. until the commit it
   * conflicted with is readable); `undefined` for the default backoff.
   */
  beforeRetry?(error: FdbError, attempt: number): Promise<void> | undefined;
}

export const DEFAULT_RETRY_LIMIT = 100;

const TRANSACTION_OPTIONS = new OptionNames('doTransaction', ['retryLimit'], { retries: 'retryLimit', maxRetries: 'retryLimit' });

const MAX_BACKOFF_MS = 100;

/**
 * A random pause of up to 2^attempt ms, at most 100 ms: attempts that
 * collided pick different moments to try again.
 */
export function backoff(attempt: number): Promise<void> {
  const ceiling = Math.min(MAX_BACKOFF_MS, 2 ** Math.min(attempt, 10));
  const ms = Math.random() * ceiling;
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The default `RetryPolicy.retry`: an `FdbError` that says it is retryable
 * is retried at most `retryLimit` times, after the attempt's own hint or the
 * backoff; anything else is rethrown as it is.
 */
export function retryRetryable(
  error: unknown,
  attempt: number,
  retryLimit: number,
  current: RetryHint,
): Promise<void> {
  if (!(error instanceof FdbError) || !error.retryable || attempt >= retryLimit) throw error;
  return current.beforeRetry?.(error, attempt) ?? backoff(attempt);
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
  const unknown = TRANSACTION_OPTIONS.unknownIn(options);
  if (unknown !== undefined) throw new FdbError(FdbErrorCode.invalid_option_value, unknown);
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

type Then = PromiseLike<unknown>['then'];
const PROMISE_THEN: Then = Promise.prototype.then;

/**
 * The `then` of `value` if `await` would wait for it (a promise or any other
 * thenable), else `undefined`. Read once: a getter with side effects runs
 * once, as when a promise is resolved with `value`.
 */
function thenOf(value: unknown): Then | undefined {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined;
  const then: unknown = (value as { then?: unknown }).then;
  return typeof then === 'function' ? (then as Then) : undefined;
}

/**
 * A promise of what `value` settles to, through the `then` read from it
 * already (`await value` would read it again): a native promise is itself,
 * any other thenable goes through a new promise's resolve, as `await` would.
 */
function settledThrough<T>(value: Promise<T> | T, then: Then): Promise<T> {
  if (then === PROMISE_THEN) return value as Promise<T>;
  return new Promise<T>((resolve, reject) => then.call(value, resolve as (value: unknown) => void, reject));
}

/**
 * Runs `body` in attempts from `policy.begin()` until one commits; after a
 * failure `policy.retry` decides (given `retryLimit`, which
 * `checkTransactionArguments` checked for `doTransaction`) whether and when
 * the next attempt begins. Each `await` costs a turn of the microtask queue,
 * a real share of a short transaction's time, so a body that returns a plain
 * value, and a commit with nothing to wait for, are not awaited.
 */
export async function retryLoop<A extends Attempt, T>(
  policy: RetryPolicy<A>,
  body: (attempt: A) => Promise<T> | T,
  retryLimit: number,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const current = policy.begin();
    let wait: Promise<void> | undefined;
    try {
      const returned = body(current);
      // A body's promise (or any thenable) is settled before the commit.
      const then = thenOf(returned);
      const result = then === undefined ? (returned as T) : await settledThrough(returned, then);
      const committing = current.commit();
      if (committing !== undefined) await committing;
      return result;
    } catch (error) {
      current.abandon(error);
      wait = policy.retry(error, attempt, retryLimit, current);
    }
    if (wait !== undefined) await wait;
  }
}
