// A parked accept claimed by a write attempt that is still committing: what
// happens when that attempt then fails or is retried after the accept's
// wait ended (its watch, its signal, its timeout), and what a second write
// batch in flight meanwhile may do. In every case no job reaches two
// accepts, none is left running under a lock nobody holds, and an accept
// that got nothing is not left waiting forever.

import test from 'ava';
import { checkJobsConsistency, FdbError, FdbErrorCode, openJobs } from '@jobtree/core';
import { ADD_AND_HANDOVER_WRITES, openReviewJobs, settledYet } from './review-handover-setup.js';
import { nowSeconds, T1 } from './temp-jobs.js';

const tooLarge = () => new FdbError(FdbErrorCode.transaction_too_large, 'injected failure at commit');
const conflict = () => new FdbError(FdbErrorCode.not_committed, 'injected conflict at commit');

test('a claimed accept whose watch fires for another handle\'s job, and whose attempt then fails, takes that job itself', async (t) => {
  const { jobs, other, db, parked, holdAttemptAt } = await openReviewJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'mine', {});
  await held.reached;
  // Committed by another handle: the parked accept's watch fires while the
  // add that claimed it still waits to commit.
  t.is(await other.add(T1, 'theirs', {}), 'pending');
  t.false(await settledYet(accepting), 'claimed: it waits for the outcome of the attempt that claimed it');
  held.release(tooLarge());
  await t.throwsAsync(adding);
  t.is((await accepting)?.id, 'theirs');
  t.is(await jobs.getJobState(T1, 'mine'), undefined);
  t.deepEqual(await jobs.getActiveJobIds(T1), ['theirs']);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('a claimed accept whose signal aborts ends empty-handed when the attempt that claimed it fails', async (t) => {
  const { jobs, db, parked, holdAttemptAt } = await openReviewJobs(t);
  const controller = new AbortController();
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000, signal: controller.signal });
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'never', {});
  await held.reached;
  controller.abort();
  t.false(await settledYet(accepting), 'claimed: the abort waits for the attempt');
  held.release(tooLarge());
  await t.throwsAsync(adding);
  t.is(await accepting, undefined);
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
  t.is(await jobs.getJobState(T1, 'never'), undefined);
});

test('an attempt retried after the claimed accept\'s signal aborted hands it nothing: the job commits pending', async (t) => {
  const { jobs, db, parked, holdAttemptAt } = await openReviewJobs(t);
  const controller = new AbortController();
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000, signal: controller.signal });
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'left', {});
  await held.reached;
  controller.abort();
  held.release(conflict());
  t.is(await adding, 'pending');
  t.is(await accepting, undefined);
  t.is(await jobs.getJobState(T1, 'left'), 'pending');
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('an accept whose timeout passed while claimed, its attempt retried, ends: the job is pending or running under its lock', async (t) => {
  const { jobs, db, parked, holdAttemptAt } = await openReviewJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 300 });
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'late', {});
  await held.reached;
  // Past the accept's timeout (its timer has run: it is leaving, claimed).
  await new Promise((resolve) => setTimeout(resolve, 400));
  held.release(conflict());
  t.is(await adding, 'pending');
  const job = await accepting;
  if (job === undefined) {
    t.is(await jobs.getJobState(T1, 'late'), 'pending');
    t.deepEqual(await jobs.getActiveJobIds(T1), []);
  } else {
    t.is(job.id, 'late');
    t.is(await jobs.finish(job), 'finished', 'the accept holds the lock in the store');
  }
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('while one add holds a claimed accept, a second add serves the next parked accept; each gets its own job', async (t) => {
  const { jobs, db, parked, holdAttemptAt, durableCommits } = await openReviewJobs(t);
  let watches = db.calls.watches;
  const first = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  watches = db.calls.watches;
  const second = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'one', {});
  await held.reached;
  const commits = durableCommits();
  t.is(await jobs.add(T1, 'two', {}), 'pending');
  t.is((await second)?.id, 'two', 'served by the second add, in its commit');
  t.is(durableCommits() - commits, 1);
  t.false(await settledYet(first), 'the first still waits for the add that claimed it');
  held.release();
  t.is(await adding, 'pending');
  t.is((await first)?.id, 'one');
  t.deepEqual((await jobs.getActiveJobIds(T1)).sort(), ['one', 'two']);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('an accept bound to a past maxSchedTime, parked first, is passed over: the accept parked after it gets the job', async (t) => {
  const { jobs, db, parked, durableCommits } = await openReviewJobs(t);
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
  const { jobs, db, parked } = await openReviewJobs(t);
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

test('close() while a claimed accept\'s attempt is retried: the retry serves nobody, the accept ends closed, the job is pending', async (t) => {
  const { jobs, db, parked, holdAttemptAt } = await openReviewJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'retried', {});
  await held.reached;
  const closing = jobs.close();
  held.release(conflict());
  const added = await adding.then(
    (state) => state,
    (error: unknown) => error,
  );
  const error = await t.throwsAsync(accepting);
  t.is((error as { code?: unknown }).code, 'closed');
  await closing;
  const reopened = await openJobs({ database: jobs.database });
  t.teardown(() => reopened.close());
  if (added === 'pending') t.is(await reopened.getJobState(T1, 'retried'), 'pending');
  else t.is(await reopened.getJobState(T1, 'retried'), undefined, `the add failed (${String(added)}): nothing written`);
  t.deepEqual(await reopened.getActiveJobIds(T1), []);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});
