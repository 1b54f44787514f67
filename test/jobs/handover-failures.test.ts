// A write attempt that took a job for a parked accept and then failed hands
// nothing over: a retried attempt decides again, a failed transaction
// leaves the accept waiting in its place, and when a shared transaction
// fails and its calls run again one by one, no job reaches two accepts and
// none is lost. An accept's body that fails for a reason of its own (a job
// record that does not decode) fails that accept, never the write.

import test from 'ava';
import { checkJobsConsistency, FdbError, FdbErrorCode } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { encodeJobRecord } from '../../packages/core/src/jobs/job-record.js';
import { ADD_AND_HANDOVER_WRITES, openHandoverJobs } from './handover-setup.js';
import { T1 } from './temp-jobs.js';

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
