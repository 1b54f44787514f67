// Once a write attempt has taken jobs for a parked accept, that accept
// belongs to the attempt until its commit's outcome is known: its signal,
// its timeout or close() arriving meanwhile do not end it empty-handed, as
// they do not end an accept whose own transaction is running. Otherwise the
// job would be running in the store under a lock nobody holds.

import test from 'ava';
import { checkJobsConsistency, JobsError } from '@jobtree/core';
import { ADD_AND_HANDOVER_WRITES, openHandoverJobs } from './handover-setup.js';
import { T1 } from './temp-jobs.js';

test('an accept whose signal aborts after the add took its job still gets the job', async (t) => {
  const { jobs, db, parked, duringAttempt } = await openHandoverJobs(t);
  const controller = new AbortController();
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000, signal: controller.signal });
  await parked(watches);
  duringAttempt(ADD_AND_HANDOVER_WRITES, () => controller.abort());
  await jobs.add(T1, 'mine', {});
  t.true(controller.signal.aborted);
  const job = await accepting;
  t.is(job?.id, 'mine');
  t.is(await jobs.finish(job!), 'finished', 'the lock it got is the one in the store');
});

test('an accept whose timeout passes while the add that took its job commits still gets the job', async (t) => {
  const { jobs, db, parked, duringAttempt } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 300 });
  await parked(watches);
  duringAttempt(ADD_AND_HANDOVER_WRITES, () => {
    const until = performance.now() + 400;
    while (performance.now() < until);
  });
  await jobs.add(T1, 'mine', {});
  const job = await accepting;
  t.is(job?.id, 'mine');
  t.deepEqual(await jobs.getActiveJobIds(T1), ['mine']);
  t.is(await jobs.finish(job!), 'finished');
});

test('close() while the add that took a job for a parked accept commits delivers the job', async (t) => {
  const { jobs, db, parked, duringAttempt } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  const other = jobs.accept('other', { timeout: 60_000 });
  await parked(watches);
  let closing: Promise<void> | undefined;
  duringAttempt(ADD_AND_HANDOVER_WRITES, () => {
    closing = jobs.close();
  });
  t.is(await jobs.add(T1, 'mine', {}), 'pending');
  t.is((await accepting)?.id, 'mine', 'committed: delivered, as by an accept already in its transaction');
  t.true(JobsError.is(await t.throwsAsync(other), 'closed'), 'an accept nobody served ends with closed');
  await closing;
  t.deepEqual((await checkJobsConsistency(db)).anomalies, []);
});
