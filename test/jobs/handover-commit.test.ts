// An add that finds an accept of its type parked in this process takes the
// job for it in the add's own transaction: the job goes pending -> running
// in one durable commit, and the accept gets what an accept of its own
// would have got (the best due job, up to its count).

import test from 'ava';
import { checkJobsConsistency, Jobs, LocalQueue } from '@jobtree/core';
import type { AcceptOptions, AddOptions, Job, JobInputOf, JobState } from '@jobtree/core';
import { ADD_AND_HANDOVER_WRITES, openHandoverJobs } from './handover-setup.js';
import { nowSeconds, T1 } from './temp-jobs.js';

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

test('the add re-stamps the activity key once, and its watchers see the job running', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  const { versionstamp, watch } = await jobs.watchActivity(T1);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  await jobs.add(T1, 'seen', {});
  t.true(await watch.promise, 'the activity watch fired');
  t.not(await jobs.getActivityVersionstamp(T1), versionstamp);
  t.deepEqual(await jobs.getJobStates(T1, ['seen']), [{ id: 'seen', state: 'running', data: {} }]);
  t.is((await accepting)?.id, 'seen');
});

test('the best due job is handed over: higher priority first, then the older scheduled time', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  let watches = db.calls.watches;
  let accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const now = nowSeconds();
  await jobs.addMany(T1, [{ id: 'new' }, { id: 'old', scheduledTime: now - 100 }, { id: 'high', priority: 3 }]);
  t.is((await accepting)?.id, 'high');

  await jobs.remove(T1, 'new');
  await jobs.remove(T1, 'old');
  watches = db.calls.watches;
  accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  await jobs.addMany(T1, [{ id: 'newer', scheduledTime: now }, { id: 'older', scheduledTime: now - 100 }]);
  t.is((await accepting)?.id, 'older');
  t.is(await jobs.getJobState(T1, 'newer'), 'pending');
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

test('a local queue waiting for jobs is served by the add', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  // A long timeout: the queue's accept waits half a hold before it asks again.
  await jobs.setTypeTimeout('queued', 600);
  const queue = new LocalQueue(jobs, 'queued', { size: 10 });
  t.teardown(() => queue.stop());
  const watches = db.calls.watches;
  const taking = queue.take();
  await parked(watches);
  const commits = durableCommits();
  await jobs.add('queued', 'q1', { q: 1 });
  const job = await taking;
  t.is(job?.id, 'q1');
  t.is(durableCommits() - commits, 1, 'one commit from the add to the worker');
  t.is(await queue.finish(job!), 'finished');
});

test('the add answers its caller before the accept it served returns, as when the accept came a commit later', async (t) => {
  const { jobs: plain, db, parked } = await openHandoverJobs(t);
  const order: string[] = [];
  // What an observer of the handle does (counting adds, then accepts with
  // the time each job waited): it relies on seeing the add first.
  // However many steps of promise callbacks its bookkeeping takes.
  class Observed extends Jobs {
    override async add<T extends string>(type: T, id: string, data?: JobInputOf<T>, options?: AddOptions): Promise<JobState> {
      const state = await super.add(type, id, data, options);
      for (let step = 0; step < 20; step++) await Promise.resolve();
      order.push(`added ${id}`);
      return state;
    }
    override async acceptMany<T extends string>(type: T, max: number, options?: AcceptOptions): Promise<Job<T>[]> {
      const taken = await super.acceptMany(type, max, options);
      order.push(`accepted ${taken.map((job) => job.id).join()}`);
      return taken;
    }
  }
  const jobs = new Observed(plain.database);
  t.teardown(() => jobs.close());
  const watches = db.calls.watches;
  const accepting = jobs.acceptMany(T1, 1, { timeout: 60_000 });
  await parked(watches);
  await jobs.add(T1, 'seen', {});
  await accepting;
  t.deepEqual(order, ['added seen', 'accepted seen']);
});

test('an add with many parked accepts reads the queue once for the job it brings, not once per accept', async (t) => {
  const { jobs, db, parked, rangeReadsAfterBody } = await openHandoverJobs(t);
  const now = nowSeconds();
  const accepting: Promise<unknown>[] = [];
  // Each its own bound (no two share a batcher), each due for the added job.
  for (let i = 0; i < 12; i++) {
    const watches = db.calls.watches;
    accepting.push(jobs.accept(T1, { timeout: 60_000, maxSchedTime: now + 3_600 + i }));
    await parked(watches);
  }
  const before = db.calls.rangeReads;
  const afterBody = rangeReadsAfterBody(ADD_AND_HANDOVER_WRITES);
  await jobs.add(T1, 'one', {});
  t.is((await afterBody) - before, 1, 'one read of the queue in the add\'s transaction');
  const first = await Promise.race(accepting);
  t.is((first as Job | undefined)?.id, 'one');
});
