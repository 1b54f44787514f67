// A LocalQueue whose accept waits is served by the add like any parked
// accept: the job reaches its worker with the add's one commit, however long
// the queue waited, and a queue stopped while an add holds its accept gives
// the job back to the store's queue.

import test from 'ava';
import { checkJobsConsistency, LocalQueue } from '@jobtree/core';
import { T1 } from '../temp-jobs.js';
import { ADD_AND_HANDOVER_WRITES, openHandoverJobs, sleep } from './handover-setup.js';

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

test('a local queue that waited longer than an eighth of its hold still gets an added job with one commit', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  // Hold 20 s: its accept waits 10 s before it asks again, and a job held
  // more than 2.5 s is stamped again before it is handed out.
  const queue = new LocalQueue(jobs, T1, { holdMs: 20_000 });
  t.teardown(() => queue.stop());
  const watches = db.calls.watches;
  const taking = queue.take();
  await parked(watches);
  await sleep(3_000);
  const commits = durableCommits();
  await jobs.add(T1, 'waited', {});
  const job = await taking;
  t.is(job?.id, 'waited');
  // The add's commit stamped the job's activity: it is as fresh as after any
  // accept, and a second stamp is a second commit before the worker starts.
  t.is(durableCommits() - commits, 1, 'one commit from the add to the worker');
  t.is(await queue.finish(job!), 'finished');
});

test('a local queue stopped while an add holds its accept gives the job back: it ends pending', async (t) => {
  const { jobs, db, parked, holdAttemptAt } = await openHandoverJobs(t);
  const queue = new LocalQueue(jobs, T1, { holdMs: 60_000 });
  const watches = db.calls.watches;
  const taking = queue.take();
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'back', {});
  await held.reached;
  const stopping = queue.stop();
  t.is(await taking, undefined, 'a stopped queue hands nothing out');
  held.release();
  t.is(await adding, 'pending');
  await stopping;
  t.is(await jobs.getJobState(T1, 'back'), 'pending', 'given back, not running under a lock nobody holds');
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});
