// A take held back by a limit waits on what may let it through (a finish, the
// rate's window). Setting other limits, or lifting them, may let it through
// too: each test holds an accept back behind a job that never finishes,
// changes the limits, and expects the waiting accept to get a job. Its own
// timeout is far off (an accept that times out takes once more, which would
// hide a wake that never came); the test gives up on it after a bound that a
// woken accept meets even on a loaded machine. A drain held back at its
// concurrency most of the time checks what those waits leave behind.

import test from 'ava';
import type { ExecutionContext } from 'ava';
import type { TypeLimits } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';
import { heldAccept, woken } from './held-accept.js';


/**
 * Holds an accept back under `before` (one of two jobs taken, never
 * finished), sets `after`, and checks that the accept gets the other job.
 */
async function changeWakesHeldTake(t: ExecutionContext, before: TypeLimits, after: TypeLimits | null, group?: string): Promise<void> {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, before);
  const options = group === undefined ? {} : { group };
  await jobs.add(T1, 'a', {}, options);
  await jobs.add(T1, 'b', {}, options);
  const [first] = await jobs.acceptMany(T1, 1, { timeout: 0 });
  t.truthy(first);
  const waiting = await heldAccept(t, jobs);
  await jobs.setTypeLimits(T1, after);
  t.deepEqual(await woken(waiting.taken), [first?.id === 'a' ? 'b' : 'a']);
}

test('lifting a concurrency wakes a take it holds back', (t) => changeWakesHeldTake(t, { concurrency: 1 }, null));

test('replacing a concurrency by a rate wakes a take the concurrency holds back', (t) =>
  changeWakesHeldTake(t, { concurrency: 1 }, { rate: { max: 100, perMs: 1_000 } }));

test('raising a rate wakes a take it holds back', (t) =>
  changeWakesHeldTake(t, { rate: { max: 1, perMs: 600_000 } }, { rate: { max: 2, perMs: 600_000 } }));

test('raising a group concurrency wakes a take it holds back', (t) =>
  changeWakesHeldTake(t, { group: { concurrency: 1 } }, { group: { concurrency: 2 } }, 'g'));

test('a drain in which most takes are held back by the concurrency finishes every job', async (t) => {
  // Held takes whose attempts conflict and run again leave watches of the
  // attempts that did not commit: those reject unobserved, and must not end the process.
  t.timeout(120_000);
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { concurrency: 4 });
  const count = 2_000;
  await jobs.addMany(T1, Array.from({ length: count }, (_, i) => ({ id: `j${i}`, data: {} })));
  let finished = 0;
  let most = 0;
  let running = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (finished < count) {
        const [job] = await jobs.acceptMany(T1, 1, { timeout: 200 });
        if (job === undefined) continue;
        running += 1;
        most = Math.max(most, running);
        await jobs.finish(job);
        running -= 1;
        finished += 1;
      }
    }),
  );
  t.is(finished, count);
  t.true(most <= 4, `${most} ran at once`);
});
