// A write that enqueues a job of a type with an accept parked in this
// process takes the job for it in the write's own transaction: the job goes
// pending -> running in one durable commit, and the accept gets what an
// accept of its own would have got (up to its count, oldest accept first).
// The writes that serve a parked accept, as the package README lists them:
// an add (of a new job, or of a finished one, with its new data), addMany, a
// creator's resubmit of a finished job, a finish that enqueues a resubmitted
// job, an add that moves a pending job from the future to now, and adds of
// two types in one shared transaction. The accept gets its job once the
// write's commit is readable, ahead of its sync (a take need not be durable,
// see docs/durability.md); the add answers its caller once it is durable.

import test from 'ava';
import { checkJobsConsistency } from '@jobtree/core';
import { nowSeconds, T1, T2 } from '../temp-jobs.js';
import { openHandoverJobs } from './handover-setup.js';
import { holdNextWrite } from '../../storage/held-write.js';

test('a parked accept gets an added job with one durable commit', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const commits = durableCommits();
  const transactions = db.transactions;
  t.is(await jobs.add(T1, 'j1', { n: 1 }), 'pending', 'add answers with the state its own write made');
  const job = await accepting;
  t.is(job?.id, 'j1');
  t.deepEqual(job?.data, { n: 1 });
  t.is(durableCommits() - commits, 1, 'the add and the accept share one commit');
  t.is(db.transactions - transactions, 1, 'the accept ran no transaction of its own');
  // The job is running as after any accept: its state, its activity row, its lock.
  t.is(await jobs.getJobState(T1, 'j1'), 'running');
  t.deepEqual(await jobs.getActiveJobIds(T1), ['j1']);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
  t.is(await jobs.finish(job!, { done: true }), 'finished');
});

test('addMany of more jobs than the parked acceptMany wants hands over exactly its count', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.acceptMany(T1, 3, { timeout: 60_000 });
  await parked(watches);
  const commits = durableCommits();
  await jobs.addMany(
    T1,
    Array.from({ length: 10 }, (_, i) => ({ id: `m${i}`, data: { i } })),
  );
  const taken = await accepting;
  t.is(taken.length, 3);
  t.is(new Set(taken.map((job) => job.id)).size, 3);
  t.is(durableCommits() - commits, 1);
  t.is(await jobs.pendingCount(T1), 7);
  t.deepEqual((await jobs.getActiveJobIds(T1)).sort(), taken.map((job) => job.id).sort());
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('parked accepts are served oldest first, each with its own jobs, in one commit', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  let watches = db.calls.watches;
  const first = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  watches = db.calls.watches;
  const second = jobs.acceptMany(T1, 2, { timeout: 60_000 });
  await parked(watches);
  watches = db.calls.watches;
  const third = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);

  let commits = durableCommits();
  watches = db.calls.watches;
  await jobs.add(T1, 'a', {});
  t.is((await first)?.id, 'a', 'the accept parked first gets the only job');
  t.is(durableCommits() - commits, 1);
  // The add's commit woke the other two (their watch): they look again and park again.
  await parked(watches);

  commits = durableCommits();
  await jobs.addMany(T1, [{ id: 'b' }, { id: 'c' }, { id: 'd' }]);
  const [many, one] = await Promise.all([second, third]);
  t.is(many.length, 2);
  t.truthy(one);
  t.deepEqual([...many.map((job) => job.id), one!.id].sort(), ['b', 'c', 'd']);
  t.is(durableCommits() - commits, 1);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('a finish that enqueues a resubmitted job hands it to a parked accept', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  await jobs.add(T1, 'again', { run: 1 });
  const job = (await jobs.accept(T1))!;
  await jobs.add(T1, 'again', { run: 2 }); // running: flagged to run again
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const commits = durableCommits();
  t.is(await jobs.finish(job, { run: 1, done: true }), 'pending');
  const next = await accepting;
  t.is(next?.id, 'again');
  t.not(next?.lock, job.lock);
  t.is(durableCommits() - commits, 1);
  t.is(await jobs.getJobState(T1, 'again'), 'running');
});

test('a creator\'s resubmit of a finished job hands it to a parked accept in its commit', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
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
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
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
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
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
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
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

test.serial('the accept an add served gets its job once the add is written, before it is on disk; the add answers once it is', async (t) => {
  t.timeout(20_000);
  const { jobs, db, parked } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.acceptMany(T1, 1, { timeout: 60_000 });
  await parked(watches);
  // lmdb's next write: its commit and flush promises wait for the test, its notice that it is visible does not.
  const held = holdNextWrite(t);
  let added = false;
  const adding = jobs.add(T1, 'seen', {}).then((state) => {
    added = true;
    return state;
  });
  t.deepEqual((await accepting).map((job) => job.id), ['seen']);
  t.false(added, 'the add waits for its sync');
  held.release();
  t.is(await adding, 'pending', 'add answers with the state its own write made');
  t.is(await jobs.getJobState(T1, 'seen'), 'running');
});
