// Recognises a FailedOutcome: the data a job is finished with when the
// scheduler gives it up. The scheduler tells its own write failures apart
// by it, and the app's jobs handle counts given-up jobs by it.

import type { FailedOutcome } from './interfaces.js';

export function isFailedOutcome(data: unknown): data is FailedOutcome {
  return typeof data === 'object' && data !== null && (data as { outcome?: unknown }).outcome === 'failed';
}
