// A write attempt that took a job for a parked accept and then failed hands
// nothing over: a retried attempt decides again, a failed transaction
// leaves the accept waiting in its place, and when a shared transaction
// fails and its calls run again one by one, no job reaches two accepts and
// none is lost. An accept's body that fails for a reason of its own (a job
// record that does not decode) fails that accept, never the write. The same
// holds when the claimed accept's wait ended while the attempt was
// committing (its watch fired, its signal aborted, its timeout passed, its
// handle closed): no job is left running under a lock nobody holds, and an
// accept that got nothing is not left waiting forever.

import test from 'ava';
import { checkJobsConsistency, FdbError, FdbErrorCode, openJobs } from '@jobtree/core';
import { JobKeys } from '../../../packages/core/src/jobs/job-keys.js';
import { encodeJobRecord } from '../../../packages/core/src/jobs/job-record.js';
import { T1 } from '../temp-jobs.js';
import { ADD_AND_HANDOVER_WRITES, openHandoverJobs, settledYet } from './handover-setup.js';

const tooLarge = () => new FdbError(FdbErrorCode.transaction_too_large, 'injected failure at commit');
const conflict = () => new FdbError(FdbErrorCode.not_committed, 'injected conflict at commit');

test('a retried attempt hands the job over once, in the attempt that commits', async (t) => {
  const { jobs, db, parked, failAt, durableCommits } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.acceptMany(T1, 5, { timeout: 60_000 });
  await parked(watches);
  const { attempts, transactions } = db;
  const commits = durableCommits();
  // The attempt fails on its last write, after it took the job for the accept.
  failAt(ADD_AND_HANDOVER_WRITES, new FdbError(FdbErrorCode.not_committed, 'injected conflict'));
  t.is(await jobs.add(T1, 'once', {}), 'pending');
  t.deepEqual(
    (await accepting).map((job) => job.id),
    ['once'],
  );
  t.is(db.transactions - transactions, 1);
  t.is(db.attempts - attempts, 2, 'the add ran twice');
  t.is(durableCommits() - commits, 1);
  t.deepEqual(await jobs.getActiveJobIds(T1), ['once'], 'one activity row: taken by the attempt that committed');
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('a failed add hands nothing over, and the accept keeps its place for the next one', async (t) => {
  const { jobs, db, parked, failAt } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  failAt(ADD_AND_HANDOVER_WRITES, new FdbError(FdbErrorCode.transaction_too_large, 'injected failure'));
  const error = await t.throwsAsync(jobs.add(T1, 'lost', {}));
  t.is((error as FdbError).code, FdbErrorCode.transaction_too_large);
  t.is(await jobs.getJobState(T1, 'lost'), undefined, 'the failed add wrote nothing');
  let settled = false;
  void accepting.then(() => {
    settled = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  t.false(settled, 'the accept still waits');
  t.is(await jobs.add(T1, 'next', {}), 'pending');
  t.is((await accepting)?.id, 'next');
  t.deepEqual(await jobs.getActiveJobIds(T1), ['next']);
});

test('a failed shared transaction whose calls run again alone hands each job to one accept at most', async (t) => {
  const { jobs, db, parked, failAt } = await openHandoverJobs(t);
  let watches = db.calls.watches;
  const first = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  watches = db.calls.watches;
  const second = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  // Three adds in one transaction (8 writes: one counter bump and one
  // activity stamp between them) and two jobs taken (3 writes each): it
  // fails as it takes the second, and each add then runs alone.
  failAt(8 + 3 + 2, new FdbError(FdbErrorCode.transaction_too_large, 'injected failure'));
  t.deepEqual(await jobs.addMany(T1, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]), ['pending', 'pending', 'pending']);
  t.is(db.injected.get(FdbErrorCode.transaction_too_large), 1);
  const taken = [(await first)?.id, (await second)?.id];
  t.true(taken.every((id) => id !== undefined));
  t.is(new Set(taken).size, 2, 'two accepts, two different jobs');
  t.deepEqual((await jobs.getActiveJobIds(T1)).sort(), [...taken].sort());
  t.is(await jobs.pendingCount(T1), 1);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('an accept whose body fails in the add\'s transaction fails on its own; the add commits', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  // A job whose data does not decode, at the front of the queue, written
  // behind the jobs layer's back (the pending counter does not move, so the
  // parked accept does not wake).
  const keys = new JobKeys().forType(T1);
  await db.doTransaction((tx) => {
    const data = Buffer.from('not json');
    tx.set(keys.job('bad'), encodeJobRecord({ state: 'pending', seq: undefined, lock: undefined, resubmit: false, continuous: false, priority: 5, scheduledTime: 1, data }));
    tx.set(keys.pendingKey(5, 1, 'bad'), Buffer.alloc(0));
  });
  t.is(await jobs.add(T1, 'good', {}), 'pending', 'the add is not failed by the accept it tried to serve');
  await t.throwsAsync(accepting, undefined, 'the accept meets the bad job in its own transaction, as without the add');
  t.is(await jobs.getJobState(T1, 'good'), 'pending');
});

test('a claimed accept whose watch fires for another handle\'s job, and whose attempt then fails, takes that job itself', async (t) => {
  const { jobs, db, parked, holdAttemptAt, openOther } = await openHandoverJobs(t);
  const other = await openOther();
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
  const { jobs, db, parked, holdAttemptAt } = await openHandoverJobs(t);
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
  const { jobs, db, parked, holdAttemptAt } = await openHandoverJobs(t);
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

// Serial, with a timeout of a second: the accept must not time out before the add claims it, even on a loaded machine.
test.serial('an accept whose timeout passed while claimed, its attempt retried, ends: the job is pending or running under its lock', async (t) => {
  const { jobs, db, parked, holdAttemptAt } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 1_000 });
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'late', {});
  await held.reached;
  // Past the accept's timeout (its timer has run: it is leaving, claimed).
  await new Promise((resolve) => setTimeout(resolve, 1_100));
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

test('close() while a claimed accept\'s attempt is retried: the retry serves nobody, the accept ends closed, the job is pending', async (t) => {
  const { jobs, db, parked, holdAttemptAt } = await openHandoverJobs(t);
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
