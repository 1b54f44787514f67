// The type's cancellation count and its watch: a worker running jobs hears
// through it that someone else ended one of them (removed or cancelled it),
// without waiting for its next update. Only the end of a running job counts:
// removing or cancelling a pending or finished job has no worker to tell.

import test from 'ava';
import { openTempJobs, T1 } from './temp-jobs.js';

test('watchCancellations fires when a running job is removed, and the count goes up', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'run', {});
  const job = await jobs.accept(T1);
  t.is(job?.id, 'run');
  const { cancellations, watch } = await jobs.watchCancellations(T1);
  t.is(cancellations, 0);
  t.true(await jobs.remove(T1, 'run'));
  t.true(await watch.promise);
  const after = await jobs.watchCancellations(T1);
  after.watch.cancel();
  t.is(after.cancellations, 1);
});

test('watchCancellations fires when a running job is cancelled', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'run', {});
  await jobs.accept(T1);
  const { watch } = await jobs.watchCancellations(T1);
  t.true(await jobs.cancel(T1, 'run'));
  t.true(await watch.promise);
  const after = await jobs.watchCancellations(T1);
  after.watch.cancel();
  t.is(after.cancellations, 1);
});

test('removing or cancelling a job that is not running leaves the cancellation count as it was', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, [{ id: 'pending-removed' }, { id: 'pending-cancelled' }, { id: 'done' }]);
  t.true(await jobs.remove(T1, 'pending-removed'));
  t.true(await jobs.cancel(T1, 'pending-cancelled'));
  const done = await jobs.accept(T1);
  await jobs.finish(done!);
  t.false(await jobs.cancel(T1, 'done'));
  t.true(await jobs.remove(T1, 'done'));
  // Its own worker's finish is no cancellation either.
  const { cancellations, watch } = await jobs.watchCancellations(T1);
  watch.cancel();
  t.is(cancellations, 0);
  t.false(await watch.promise);
});
