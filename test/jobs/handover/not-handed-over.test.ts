// What an add does not hand over: a job to an accept whose signal aborted,
// whose timeout passed or whose handle closed before the add decided, or a
// job the accept's schedule bound would not take (maxSchedTime, now). An
// accept with noSchedule takes a job scheduled in the future. An accept
// parked first that its bound keeps from the job is passed over: the job
// goes to an accept parked after it.

import test from 'ava';
import { checkJobsConsistency, JobsError, openJobs } from '@jobtree/core';
import { nowSeconds, T1 } from '../temp-jobs.js';
import { ADD_AND_HANDOVER_WRITES, ADD_WRITES, openHandoverJobs, settledYet, sleep } from './handover-setup.js';

test('an accept whose signal aborted before the add decided gets nothing, and the job stays pending', async (t) => {
  const { jobs, db, parked, duringAttempt } = await openHandoverJobs(t);
  const controller = new AbortController();
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000, signal: controller.signal });
  await parked(watches);
  // Aborted inside the add's transaction, as its last own write is made:
  // its decision comes right after, whether or not the accept's wait has
  // woken by then.
  duringAttempt(ADD_WRITES, () => controller.abort());
  const added = jobs.add(T1, 'j', {});
  t.is(await accepting, undefined);
  t.is(await added, 'pending');
  t.is(await jobs.getJobState(T1, 'j'), 'pending');
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});

test('an accept whose timeout passed is not handed a job, even before its timer has run', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.acceptMany(T1, 5, { timeout: 200 });
  await parked(watches);
  // Hold the event loop past the deadline: the accept's timer cannot run
  // before the add below has made its decision.
  const until = performance.now() + 300;
  while (performance.now() < until);
  const commits = durableCommits();
  const added = jobs.add(T1, 'late', {});
  const taken = await accepting;
  t.is(await added, 'pending');
  // Past its timeout an accept looks at the queue once more; whatever it
  // finds then it takes in a commit of its own, never in the add's.
  const running = taken.length === 1;
  t.is(durableCommits() - commits, running ? 2 : 1);
  t.is(await jobs.getJobState(T1, 'late'), running ? 'running' : 'pending');
  t.is(db.committedWrites.includes(ADD_AND_HANDOVER_WRITES), false, 'no add took a job');
});

test('close() before the add decides ends the parked accept with closed and hands it nothing', async (t) => {
  const { jobs, db, parked, duringAttempt } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  let closing: Promise<void> | undefined;
  duringAttempt(ADD_WRITES, () => {
    closing = jobs.close();
  });
  const added = jobs.add(T1, 'j', {});
  const error = await t.throwsAsync(accepting);
  t.true(JobsError.is(error, 'closed'));
  t.is(await added, 'pending');
  await closing;
  const reopened = await openJobs({ database: db });
  t.teardown(() => reopened.close());
  t.is(await reopened.getJobState(T1, 'j'), 'pending');
});

test('an accept bound by maxSchedTime is handed only the jobs scheduled by then', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  const now = nowSeconds();
  const watches = db.calls.watches;
  const accepting = jobs.acceptMany(T1, 10, { timeout: 60_000, maxSchedTime: now + 50 });
  await parked(watches);
  const commits = durableCommits();
  await jobs.addMany(T1, [
    { id: 'later', scheduledTime: now + 100 },
    { id: 'soon', scheduledTime: now + 20 },
  ]);
  t.deepEqual(
    (await accepting).map((job) => job.id),
    ['soon'],
  );
  t.is(durableCommits() - commits, 1);
  t.is(await jobs.getJobState(T1, 'later'), 'pending');
});

test('an accept of due jobs is not handed a job scheduled in the future, and keeps waiting', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  const controller = new AbortController();
  let watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000, signal: controller.signal });
  await parked(watches);
  watches = db.calls.watches;
  await jobs.add(T1, 'future', {}, { scheduledTime: nowSeconds() + 3_600 });
  t.is(await jobs.getJobState(T1, 'future'), 'pending');
  await sleep(50);
  let settled = false;
  void accepting.then(() => {
    settled = true;
  });
  await sleep(50);
  t.false(settled, 'the accept still waits');
  controller.abort();
  t.is(await accepting, undefined);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('an accept with noSchedule is handed a job scheduled in the future', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000, noSchedule: true });
  await parked(watches);
  const commits = durableCommits();
  await jobs.add(T1, 'future', {}, { scheduledTime: nowSeconds() + 3_600 });
  t.is((await accepting)?.id, 'future');
  t.is(durableCommits() - commits, 1);
});

test('an accept bound to a past maxSchedTime, parked first, is passed over: the accept parked after it gets the job', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  let watches = db.calls.watches;
  const bounded = jobs.accept(T1, { timeout: 60_000, maxSchedTime: nowSeconds() - 1_000 });
  await parked(watches);
  watches = db.calls.watches;
  const plain = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const commits = durableCommits();
  await jobs.add(T1, 'due', {});
  t.is((await plain)?.id, 'due');
  t.is(durableCommits() - commits, 1);
  t.false(await settledYet(bounded), 'the bounded accept waits on');
  await jobs.add(T1, 'old', {}, { scheduledTime: nowSeconds() - 2_000 });
  t.is((await bounded)?.id, 'old');
});

test('an accept with noSchedule parked first takes the due job; an accept of due jobs parked after it keeps waiting', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  let watches = db.calls.watches;
  const any = jobs.accept(T1, { timeout: 60_000, noSchedule: true });
  await parked(watches);
  watches = db.calls.watches;
  const due = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  await jobs.addMany(T1, [{ id: 'later', scheduledTime: nowSeconds() + 3_600 }, { id: 'now' }]);
  const anyJob = await any;
  t.truthy(anyJob);
  if (anyJob?.id === 'later') {
    t.is((await due)?.id, 'now', 'the due job goes to the accept of due jobs');
  } else {
    t.is(anyJob?.id, 'now');
    t.false(await settledYet(due));
    t.is(await jobs.getJobState(T1, 'later'), 'pending');
  }
});
