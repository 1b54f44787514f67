// Which writes serve a parked accept, as the package README lists them: an
// add (of a new job, or of a finished one), a creator's resubmit of a
// finished job, an add that moves a pending job from the future to now, and
// adds of two types in one shared transaction. Each takes the job for the
// accept in its own commit.

import test from 'ava';
import { checkJobsConsistency } from '@jobtree/core';
import { openReviewJobs } from './review-handover-setup.js';
import { nowSeconds, T1, T2 } from './temp-jobs.js';

test('a creator\'s resubmit of a finished job hands it to a parked accept in its commit', async (t) => {
  const { jobs, db, parked, durableCommits } = await openReviewJobs(t);
  await jobs.add(T1, 'again', { run: 1 });
  const first = (await jobs.accept(T1))!;
  await jobs.finish(first);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const commits = durableCommits();
  t.is(await jobs.resubmit(T1, 'again'), 'pending');
  const job = await accepting;
  t.is(job?.id, 'again');
  t.deepEqual(job?.data, { run: 1 });
  t.is(durableCommits() - commits, 1);
  t.is(await jobs.finish(job!), 'finished');
});

test('an add of a finished job hands it to a parked accept, with its new data, in its commit', async (t) => {
  const { jobs, db, parked, durableCommits } = await openReviewJobs(t);
  await jobs.add(T1, 'again', { run: 1 });
  await jobs.finish((await jobs.accept(T1))!);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const commits = durableCommits();
  t.is(await jobs.add(T1, 'again', { run: 2 }), 'pending');
  const job = await accepting;
  t.deepEqual(job?.data, { run: 2 });
  t.is(durableCommits() - commits, 1);
});

test('an add that moves a pending job from the future to now hands it to a parked accept', async (t) => {
  const { jobs, db, parked, durableCommits } = await openReviewJobs(t);
  await jobs.add(T1, 'moved', {}, { scheduledTime: nowSeconds() + 3_600 });
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const commits = durableCommits();
  t.is(await jobs.add(T1, 'moved', {}, { scheduledTime: nowSeconds() - 1 }), 'pending');
  t.is((await accepting)?.id, 'moved');
  t.is(durableCommits() - commits, 1);
  t.is(await jobs.pendingCount(T1), 0);
});

test('adds of two types sharing a transaction serve the accepts parked on each type in that one commit', async (t) => {
  const { jobs, db, parked, durableCommits } = await openReviewJobs(t);
  let watches = db.calls.watches;
  const one = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  watches = db.calls.watches;
  const two = jobs.acceptMany(T2, 5, { timeout: 60_000 });
  await parked(watches);
  const commits = durableCommits();
  const transactions = db.transactions;
  // A call on the idle batcher starts its transaction at once (a remove of
  // no job: it writes nothing); the adds made in the same turn gather into
  // the next one.
  await Promise.all([jobs.remove(T1, 'none'), jobs.add(T1, 'a', {}), jobs.add(T2, 'b', {}), jobs.add(T2, 'c', {})]);
  t.is((await one)?.id, 'a');
  t.deepEqual((await two).map((job) => job.id).sort(), ['b', 'c']);
  t.is(db.transactions - transactions, 2, 'the remove, then the adds: no accept ran a transaction of its own');
  t.is(durableCommits() - commits, 1);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});
