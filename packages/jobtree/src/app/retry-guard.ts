// The retry guard of the periodic jobs actors: a retryable storage error
// (a conflict, a transaction too old) is retried on the next tick instead of
// crashing the actor, as couch_jobs' periodic processes do.
// Its error classes come from the core's errors entry: those actors run on
// host threads, which must not load the store.

import { FdbError, JobsError } from '@jobtree/core/errors';

/** Whether a periodic actor should let `error` pass and try again later. */
export function isTransient(error: unknown): boolean {
  if (error instanceof FdbError) return error.retryable;
  // The core is restarting: the bridge waits for it and may give up.
  if (error instanceof Error && (error as { code?: unknown }).code === 'no_core') return true;
  return error instanceof JobsError && error.code === 'closed';
}
