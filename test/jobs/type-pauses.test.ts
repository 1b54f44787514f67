// Pausing a type: while its row is in the store no take starts a job of it
// (accept, acceptMany, an accept a write serves in its own transaction, a
// local queue), running jobs still finish, adds still add; a resume wakes the
// accepts that wait for the type at once, as a new job does.

import test from 'ava';
import { LocalQueue } from '@jobtree/core';
import { openTempJobs, T1, T2 } from './temp-jobs.js';

/** Fails the test rather than hang when `promise` does not settle within `ms`. */
function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
    }),
  ]);
}

test('a paused type hands out no job; adds go on; another type is not paused', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'before', {});
  await jobs.pause(T1);
  t.true(await jobs.isPaused(T1));
  t.false(await jobs.isPaused(T2));
  t.is(await jobs.add(T1, 'during', {}), 'pending');
  await jobs.add(T2, 'other', {});
  t.is(await jobs.accept(T1), undefined);
  t.deepEqual(await jobs.acceptMany(T1, 10), []);
  t.is(await jobs.accept(T1, { noSchedule: true }), undefined);
  t.is((await jobs.accept(T2))?.id, 'other');
  t.is(await jobs.pendingCount(T1), 2);
  t.deepEqual(
    (await jobs.getPausedTypes()).map((paused) => paused.type),
    [T1],
  );
  await jobs.resume(T1);
  t.false(await jobs.isPaused(T1));
  t.deepEqual((await jobs.acceptMany(T1, 10)).map((job) => job.id).sort(), ['before', 'during']);
  t.deepEqual(await jobs.getPausedTypes(), []);
});

test('a running job of a type paused under it finishes', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'running', {});
  const job = await jobs.accept(T1);
  t.truthy(job);
  await jobs.pause(T1);
  const updated = await jobs.update(job!, { step: 1 });
  t.is(await jobs.finish(updated, { done: true }), 'finished');
  t.deepEqual(await jobs.getJobData(T1, 'running'), { done: true });
});

test('pause keeps the first pause time and resume of a type that is not paused changes nothing', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.pause(T1);
  const [first] = await jobs.getPausedTypes();
  await jobs.pause(T1);
  t.deepEqual(await jobs.getPausedTypes(), [first]);
  await jobs.resume(T2);
  t.false(await jobs.isPaused(T2));
});

test('an accept waiting while the type is paused gets no job from an add, and gets it at once on resume', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  await jobs.pause(T1);
  let settled = false;
  const waiting = jobs.accept(T1, { timeout: 120_000 }).finally(() => {
    settled = true;
  });
  // An add of this handle serves waiting accepts in its own transaction: not while paused.
  await jobs.add(T1, 'held', {});
  await jobs.add(T1, 'held2', {});
  t.false(settled);
  t.is(await jobs.getJobState(T1, 'held'), 'pending');
  await jobs.resume(T1);
  // Long before the accept's own timeout: the resume woke it.
  const job = await bounded(waiting, 30_000, 'the waiting accept to wake on resume');
  t.true(job?.id === 'held' || job?.id === 'held2');
});

test('a local queue takes nothing while its type is paused and carries on after resume', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(
    T1,
    Array.from({ length: 5 }, (_, i) => ({ id: `j${i}` })),
  );
  await jobs.pause(T1);
  const queue = new LocalQueue(jobs, T1, { size: 10 });
  t.teardown(() => queue.stop());
  let taken = 0;
  const taking = (async () => {
    for (let i = 0; i < 5; i++) {
      const job = await queue.take();
      if (job === undefined) return;
      taken += 1;
      await jobs.finish(job);
    }
  })();
  // Each take of the queue is a transaction that reads the pause; none may start a job.
  await jobs.add(T1, 'extra', {});
  t.is(await jobs.pendingCount(T1), 6);
  t.is(taken, 0);
  await jobs.resume(T1);
  await bounded(taking, 30_000, 'the queue to take the backlog after resume');
  t.is(taken, 5);
});
