// Batches on the hot path: addMany, acceptMany, updateMany, finishMany and
// getJobStates each cost one transaction for many jobs, every job keeping
// its own lock, activity row and answer; and concurrent single calls share
// transactions by themselves without changing what each call gets.

import test from 'ava';
import { FdbError, FdbErrorCode, JobsError, MAX_ACCEPT_MANY } from '@jobtree/core';
import type { Job, Settled } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { RecordingDatabase, recording } from './recording-database.js';
import { openTempJobs, T1, T2 } from './temp-jobs.js';

function values<T>(outcomes: Settled<T>[]): T[] {
  return outcomes.map((outcome) => {
    if (outcome.status === 'rejected') throw outcome.reason;
    return outcome.value;
  });
}

test('addMany adds every job as add would, in one transaction', async (t) => {
  const rec = recording();
  const { jobs } = await openTempJobs(t, rec.wrap);
  await jobs.add(T1, 'j0', { old: true });
  const before = rec.transactions;
  const states = await jobs.addMany(
    T1,
    Array.from({ length: 100 }, (_, i) => ({ id: `j${i}`, data: { i }, priority: i % 3 })),
  );
  t.is(rec.transactions - before, 1);
  t.deepEqual(states, Array(100).fill('pending'));
  t.is(await jobs.pendingCount(T1), 100, 'j0 was updated in place, not enqueued twice');
  t.like(await jobs.getJob(T1, 'j0'), { data: { i: 0 }, priority: 0 });
  t.like(await jobs.getJob(T1, 'j5'), { data: { i: 5 }, priority: 2 });
});

test('addMany splits what one transaction cannot hold, and every job arrives', async (t) => {
  t.timeout(60_000);
  const rec = recording();
  const { jobs } = await openTempJobs(t, rec.wrap);
  const before = rec.transactions;
  const big = 'x'.repeat(20_000);
  const states = await jobs.addMany(
    T1,
    Array.from({ length: 300 }, (_, i) => ({ id: `big${i}`, data: { big } })),
  );
  t.is(states.length, 300);
  t.true(rec.transactions - before >= 3, `${rec.transactions - before} transactions for ~6 MB`);
  t.is(await jobs.pendingCount(T1), 300);
});

test('addMany checks every job before it writes any', async (t) => {
  const { jobs } = await openTempJobs(t);
  await t.throwsAsync(jobs.addMany(T1, [{ id: 'a' }, { id: '' }]), { instanceOf: JobsError, code: 'invalid_job_id' });
  await t.throwsAsync(jobs.addMany(T1, [{ id: 'a' }, { id: 'b', data: { f: () => 1 } }]), { code: 'invalid_job_data' });
  await t.throwsAsync(jobs.addMany(T1, [{ id: 'a' }, null as never]), { code: 'invalid_option' });
  await t.throwsAsync(jobs.addMany(T1, 'a' as never), { code: 'invalid_option' });
  t.is(await jobs.pendingCount(T1), 0);
  await t.throwsAsync(jobs.addMany('untimed', [{ id: 'a' }]), { code: 'no_type_timeout' });
  t.deepEqual(await jobs.addMany(T1, []), []);
});

test('acceptMany takes up to max jobs in one transaction, each with its own lock and activity row', async (t) => {
  const rec = recording();
  const { jobs } = await openTempJobs(t, rec.wrap);
  await jobs.addMany(T1, Array.from({ length: 30 }, (_, i) => ({ id: `j${i}`, data: { i } })));
  const before = rec.transactions;
  const taken = await jobs.acceptMany(T1, 25);
  t.is(rec.transactions - before, 1);
  t.is(taken.length, 25);
  t.is(new Set(taken.map((job) => job.id)).size, 25);
  t.is(new Set(taken.map((job) => job.lock)).size, 25);
  t.is((await jobs.getActiveJobIds(T1)).length, 25);
  const rest = await jobs.acceptMany(T1, 25);
  t.is(rest.length, 5, 'fewer when fewer are due');
  t.deepEqual(await jobs.acceptMany(T1, 25), []);
  const finished = values(await jobs.finishMany([...taken, ...rest].map((job) => ({ job }))));
  t.deepEqual(new Set(finished), new Set(['finished']));
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});

test('acceptMany waits for a job when asked to, and checks max', async (t) => {
  const { jobs } = await openTempJobs(t);
  const waiting = jobs.acceptMany(T1, 10, { timeout: 60_000 });
  await jobs.add(T1, 'late', {});
  t.deepEqual(
    (await waiting).map((job) => job.id),
    ['late'],
  );
  for (const max of [0, -1, 1.5, Number.NaN, '3']) {
    await t.throwsAsync(jobs.acceptMany(T1, max as number), { instanceOf: JobsError, code: 'invalid_option' });
  }
  t.is(MAX_ACCEPT_MANY, 1_000);
});

test('a shared write transaction bumps the pending counter once for all its jobs, and still wakes a waiting accept', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  const keys = new JobKeys().forType(T1);
  const counter = async () => {
    const value = await database.doTransaction((tx) => tx.get(keys.watchesPending));
    return value === undefined ? 0n : value.readBigInt64LE(0);
  };
  const waiting = jobs.acceptMany(T1, 100, { timeout: 60_000 });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const before = await counter();
  await jobs.addMany(T1, Array.from({ length: 50 }, (_, i) => ({ id: `j${i}` })));
  t.is((await counter()) - before, 1n, 'one bump for the 50 enqueues of one transaction');
  const taken = await waiting;
  t.true(taken.length >= 1);
  // Activity is re-stamped once too, and still moves with every transaction that changes a state.
  const stamp = await jobs.getActivityVersionstamp(T1);
  t.is((await jobs.finishMany(taken.map((job) => ({ job })))).every((outcome) => outcome.status === 'fulfilled'), true);
  t.not(await jobs.getActivityVersionstamp(T1), stamp);
});

test('concurrent accepts and an acceptMany share out the queue without handing a job out twice', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, Array.from({ length: 200 }, (_, i) => ({ id: `j${i}` })));
  const results = await Promise.all([
    jobs.acceptMany(T1, 70),
    ...Array.from({ length: 20 }, () => jobs.accept(T1)),
    jobs.acceptMany(T1, 150),
  ]);
  const ids = results.flatMap((result) => (Array.isArray(result) ? result : result ? [result] : [])).map((job) => job.id);
  t.is(ids.length, 200);
  t.is(new Set(ids).size, 200);
});

test('finishMany checks each lock: a stale job gets its own halt, the others commit in one transaction', async (t) => {
  const rec = recording();
  const { jobs } = await openTempJobs(t, rec.wrap);
  await jobs.addMany(T1, Array.from({ length: 5 }, (_, i) => ({ id: `j${i}` })));
  const taken = await jobs.acceptMany(T1, 5);
  const stale = taken[2]!;
  await jobs.remove(T1, stale.id);
  const before = rec.transactions;
  const outcomes = await jobs.finishMany(taken.map((job) => ({ job, data: { done: job.id } })));
  t.is(rec.transactions - before, 1);
  outcomes.forEach((outcome, index) => {
    if (index === 2) {
      t.is(outcome.status, 'rejected');
      t.true(JobsError.is(outcome.status === 'rejected' ? outcome.reason : undefined, 'halt'));
    } else {
      t.deepEqual(outcome, { status: 'fulfilled', value: 'finished' });
    }
  });
  for (const job of taken) {
    if (job !== stale) t.like(await jobs.getJob(T1, job.id), { state: 'finished', data: { done: job.id } });
  }
});

test('updateMany gives bad items their own error and updates the rest', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
  const [a, b, c] = await jobs.acceptMany(T1, 3);
  const outcomes = await jobs.updateMany([
    { job: a!, data: { step: 1 } },
    { job: b!, data: { bad: 1n } },
    { job: null as unknown as Job },
    { job: c! },
    { job: { ...c!, lock: '0'.repeat(32) } },
  ]);
  t.is(outcomes.length, 5);
  t.like(outcomes[0], { status: 'fulfilled', value: { id: a!.id, data: { step: 1 } } });
  t.like(outcomes[1], { status: 'rejected', reason: { code: 'invalid_job_data' } });
  t.like(outcomes[2], { status: 'rejected', reason: { code: 'invalid_option' } });
  t.like(outcomes[3], { status: 'fulfilled', value: { id: c!.id } });
  t.like(outcomes[4], { status: 'rejected', reason: { code: 'halt' } });
  t.deepEqual(await jobs.getJobData(T1, a!.id), { step: 1 });
  t.is((await jobs.getActiveJobIds(T1)).length, 3);
  await t.throwsAsync(jobs.updateMany('x' as never), { code: 'invalid_option' });
});

test('getJobStates reads many jobs in one transaction, missing ones as undefined', async (t) => {
  const rec = recording();
  const { jobs } = await openTempJobs(t, rec.wrap);
  await jobs.addMany(T1, [{ id: 'p', data: { p: 1 } }, { id: 'r', data: { r: 1 } }]);
  await jobs.remove(T1, 'p');
  await jobs.add(T1, 'p', { p: 2 });
  const before = rec.transactions;
  const states = await jobs.getJobStates(T1, ['p', 'missing', 'r']);
  t.is(rec.transactions - before, 1);
  t.deepEqual(states, [
    { id: 'p', state: 'pending', data: { p: 2 } },
    { id: 'missing', state: undefined, data: undefined },
    { id: 'r', state: 'pending', data: { r: 1 } },
  ]);
  t.deepEqual(await jobs.getJobStates(T1, []), []);
  await t.throwsAsync(jobs.getJobStates(T1, ['ok', 7 as never]), { code: 'invalid_job_id' });
  await t.throwsAsync(jobs.getJobStates(T1, 'p' as never), { code: 'invalid_option' });
});

test('concurrent single adds, updates and finishes share transactions and each gets its own answer', async (t) => {
  const rec = recording();
  const { jobs } = await openTempJobs(t, rec.wrap);
  let before = rec.transactions;
  const added = await Promise.all(Array.from({ length: 100 }, (_, i) => jobs.add(T1, `j${i}`, { i })));
  t.deepEqual(added, Array(100).fill('pending'));
  t.true(rec.transactions - before < 20, `${rec.transactions - before} transactions for 100 adds`);
  const taken = await jobs.acceptMany(T1, 100);
  t.is(taken.length, 100);
  before = rec.transactions;
  const updated = await Promise.all(taken.map((job) => jobs.update(job, { step: job.id })));
  t.true(rec.transactions - before < 20, `${rec.transactions - before} transactions for 100 updates`);
  t.is((await jobs.getActiveJobIds(T1)).length, 100, 'one activity row per updated job');
  // One job is taken away from its worker: only its finish fails.
  await jobs.remove(T1, updated[7]!.id);
  const finished = await Promise.allSettled(updated.map((job) => jobs.finish(job)));
  finished.forEach((outcome, index) => {
    if (index === 7) t.like(outcome, { status: 'rejected', reason: { code: 'halt' } });
    else t.deepEqual(outcome, { status: 'fulfilled', value: 'finished' });
  });
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});

test('calls on one job apply in the order they were made, even when they overlap', async (t) => {
  const { jobs } = await openTempJobs(t);
  const calls = Array.from({ length: 20 }, (_, i) => jobs.add(T1, 'same', { version: i }));
  await Promise.all(calls);
  t.deepEqual(await jobs.getJobData(T1, 'same'), { version: 19 });
  t.is(await jobs.pendingCount(T1), 1);
  const removed = jobs.remove(T1, 'same');
  const readded = jobs.add(T2, 'same', {});
  const again = jobs.add(T1, 'same', { version: 'after remove' });
  t.deepEqual(await Promise.all([removed, readded, again]), [true, 'pending', 'pending']);
  t.deepEqual(await jobs.getJobData(T1, 'same'), { version: 'after remove' });
});

test('a shared write transaction that fails in storage runs its calls again one by one', async (t) => {
  const state = { armed: false, fired: 0 };
  const { jobs } = await openTempJobs(
    t,
    (db) =>
      new RecordingDatabase(db, {
        inject: (stats) => {
          // An add makes four writes: only a transaction shared by several adds gets this far.
          if (!state.armed || stats.writes < 12) return undefined;
          state.armed = false;
          state.fired += 1;
          return new FdbError(FdbErrorCode.operation_failed, 'injected');
        },
      }),
  );
  state.armed = true;
  const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => jobs.add(T1, `j${i}`, { i })));
  t.is(state.fired, 1);
  t.deepEqual(
    results.filter((result) => result.status === 'rejected'),
    [],
    'each call of the failed transaction succeeded on its own',
  );
  t.is(await jobs.pendingCount(T1), 30);
});

test('acceptMany stops once its records reach about 2 MB; the rest stay pending for the next call', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  const big = 'x'.repeat(90_000);
  await jobs.addMany(
    T1,
    Array.from({ length: 40 }, (_, i) => ({ id: `big${i}`, data: { big } })),
  );
  const first = await jobs.acceptMany(T1, 40);
  t.true(first.length >= 20 && first.length < 40, `${first.length} jobs in the first transaction`);
  t.is(await jobs.pendingCount(T1), 40 - first.length);
  // Concurrent single accepts behind a truncated batch are served, not told "no job".
  const rest = await Promise.all(Array.from({ length: 40 - first.length }, () => jobs.accept(T1)));
  t.true(rest.every((job) => job !== undefined));
  t.is(new Set([...first, ...rest].map((job) => job!.id)).size, 40);
  t.is((await jobs.getActiveJobIds(T1)).length, 40);
});
