// A job handed to a parked accept by the write that enqueued it is running
// as after any accept for the readers of activity: the write re-stamps the
// type's activity key once (its watchers see the job running), the job's
// activity row carries the write's commit, apart from the rows of the
// updates that share that commit, so the activity monitor's reads (active /
// inactive since a stamp, re-enqueue of the inactive) treat it as just
// accepted.

import test from 'ava';
import { checkJobsConsistency } from '@jobtree/core';
import type { Job } from '@jobtree/core';
import { T1 } from '../temp-jobs.js';
import { openHandoverJobs } from './handover-setup.js';

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

test('the activity monitor\'s reads see a handed-over job as accepted in the add\'s commit', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  // An earlier running job, accepted before the stamp the monitor reads.
  await jobs.add(T1, 'old', {});
  const old = (await jobs.accept(T1))!;
  const before = await jobs.getActivityVersionstamp(T1);
  if (before === undefined) throw new Error('no activity stamp after an accept');
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  await jobs.add(T1, 'handed', {});
  const job = (await accepting)!;
  const after = await jobs.getActivityVersionstamp(T1);
  if (after === undefined) throw new Error('no activity stamp after the add');
  t.not(after, before);
  t.deepEqual(await jobs.getInactiveSince(T1, before), ['old'], 'the handed job is not inactive since a stamp before it');
  t.deepEqual(await jobs.getActiveSince(T1, after), ['handed'], 'active since its own commit');
  t.deepEqual(await jobs.reEnqueueInactive(T1, before), ['old'], 'the monitor re-enqueues the silent job only');
  t.is(await jobs.getJobState(T1, 'handed'), 'running');
  t.is(await jobs.finish(job), 'finished');
  await t.throwsAsync(jobs.finish(old), { code: 'halt' } as never);
});

test('updates sharing the commit that hands a job over keep their own activity rows', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  await jobs.addMany(
    T1,
    Array.from({ length: 5 }, (_, i) => ({ id: `u${i}` })),
  );
  const running = await jobs.acceptMany(T1, 5);
  t.is(running.length, 5);
  const watches = db.calls.watches;
  const accepting = jobs.acceptMany(T1, 3, { timeout: 60_000 });
  await parked(watches);
  const transactions = db.transactions;
  // A call on the idle batcher starts at once (a remove of no job); the
  // updates and adds made in the same turn share the next transaction.
  const [, updated, added] = await Promise.all([
    jobs.remove(T1, 'none'),
    jobs.updateMany(running.map((job) => ({ job, data: { step: 1 } }))),
    jobs.addMany(T1, [{ id: 'a1' }, { id: 'a2' }, { id: 'a3' }]),
  ]);
  t.is(db.transactions - transactions, 2, 'the updates, the adds and the hand-over in one transaction');
  t.true(updated.every((outcome) => outcome.status === 'fulfilled'));
  t.deepEqual(added, ['pending', 'pending', 'pending']);
  const handed = await accepting;
  t.deepEqual(handed.map((job) => job.id).sort(), ['a1', 'a2', 'a3']);
  // Eight running jobs, eight activity rows: none overwrote another.
  t.deepEqual((await jobs.getActiveJobIds(T1)).sort(), ['a1', 'a2', 'a3', 'u0', 'u1', 'u2', 'u3', 'u4']);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
  const updatedJobs = updated.map((outcome) => (outcome as { value: Job }).value);
  const finished = await jobs.finishMany([...updatedJobs, ...handed].map((job) => ({ job })));
  t.true(finished.every((outcome) => outcome.status === 'fulfilled'));
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});
