// A finish whose caller is told when it settles without a `then` of its
// own: a local queue counts its workers' finishes (its `stop()` waits for
// them), and a `then` per finish was a promise, a reaction and a microtask
// per job on the drain's hot path. Internal to the package (not exported
// from its index): a `Jobs` handle has it; any other source of a local
// queue (the supervisor's application, a wrapper) is counted through the
// finish's promise instead.

import type { Job } from './interfaces.js';
import type { WriteCounter } from './write-requests.js';

/** `finish(job, data)`, and `counter.settled()` once it has settled (exactly once, whatever the outcome). */
export const FINISH_COUNTED: unique symbol = Symbol('jobtree.finishCounted');

export interface CountedFinish {
  [FINISH_COUNTED](job: Job, data: unknown, counter: WriteCounter): Promise<'pending' | 'finished'>;
}

/** The source's counted finish, or undefined when it has none. */
export function countedFinish(source: object): CountedFinish[typeof FINISH_COUNTED] | undefined {
  const finish = (source as Partial<CountedFinish>)[FINISH_COUNTED];
  return typeof finish === 'function' ? finish : undefined;
}
