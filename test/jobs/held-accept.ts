// An accept held back by a limit, and the bound within which a wake must
// let it through: shared by the tests of what wakes held takes.

import type { ExecutionContext } from 'ava';
import type { Jobs } from '@jobtree/core';
import { T1 } from './temp-jobs.js';

/** The accept's own timeout: never reached while a test runs (an accept that times out takes once more, which would hide a wake that never came). */
export const ACCEPT_TIMEOUT_MS = 600_000;
/** How long a test waits for the woken accept before it calls it not woken: a woken accept meets it even on a loaded machine. */
const WAKE_BOUND_MS = 15_000;

/** The ids the accept took, or 'not woken' once the bound passed. */
export function woken(taken: Promise<string[]>): Promise<string[] | 'not woken'> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'not woken'>((resolve) => {
    timer = setTimeout(resolve, WAKE_BOUND_MS, 'not woken');
  });
  return Promise.race([taken, bound]).finally(() => clearTimeout(timer));
}

/** An accept that waits for a job, once it is held back (wrapped: an async function would wait for it). */
export async function heldAccept(t: ExecutionContext, jobs: Jobs): Promise<{ taken: Promise<string[]> }> {
  const waiting = jobs.acceptMany(T1, 1, { timeout: ACCEPT_TIMEOUT_MS }).then((taken) => taken.map((job) => job.id));
  // The accept has read the limits and armed its watch once a take of its own found nothing either.
  t.deepEqual(await jobs.acceptMany(T1, 1, { timeout: 0 }), []);
  return { taken: waiting };
}
