// jobs.in(tx): the jobs API inside a transaction the application runs, so a
// job is enqueued (or finished) atomically with the application's own
// writes, and nothing of it is seen unless that transaction commits.

import test from 'ava';
import { FdbError, FdbErrorCode, JobsError } from '@jobtree/core';
import type { Database } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { openTempJobs, T1, T2 } from './temp-jobs.js';

const J1 = 'j1';
const doc = (id: string) => Buffer.from(`app/doc/${id}`);

/** The type's `watches_pending` counter: what blocked accepts watch. */
async function pendingCounter(database: Database, type: string): Promise<bigint> {
  const keys = new JobKeys().forType(type);
  const value = await database.doTransaction((tx) => tx.get(keys.watchesPending));
  return value === undefined ? 0n : value.readBigInt64LE(0);
}

test('use_fabric_transaction_object: a job is read and finished inside the application transaction that writes its documents', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  t.is(await jobs.add(T1, J1, {}), 'pending');
  t.like(await jobs.getJob(T1, J1), { state: 'pending', data: {} });
  const job = await jobs.accept(T1);
  t.truthy(job);
  const outcome = await database.doTransaction(async (tx) => {
    const inTx = jobs.in(tx);
    t.deepEqual(await inTx.getJobData(T1, J1), {});
    tx.set(doc('1'), Buffer.from('{}'));
    tx.set(doc('2'), Buffer.from('{}'));
    return inTx.finish(job!, { d: 1 });
  });
  t.is(outcome, 'finished');
  t.like(await jobs.getJob(T1, J1), { state: 'finished', data: { d: 1 } });
  t.deepEqual(await database.doTransaction((tx) => Promise.all([tx.get(doc('1')), tx.get(doc('2'))])), [
    Buffer.from('{}'),
    Buffer.from('{}'),
  ]);
  t.true(await database.doTransaction((tx) => jobs.in(tx).remove(T1, J1)));
  t.is(await jobs.getJob(T1, J1), undefined);
});

test('a job added in an application transaction commits with its writes, and wakes a blocked accept', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  const blocked = jobs.accept(T1, { timeout: 60_000 });
  await database.doTransaction(async (tx) => {
    tx.set(doc('order-7'), Buffer.from('placed'));
    t.is(await jobs.in(tx).add(T1, 'email-order-7', { order: 7 }, { priority: 2 }), 'pending');
  });
  const job = await blocked;
  t.like(job, { id: 'email-order-7', data: { order: 7 }, priority: 2 });
  t.deepEqual(await database.doTransaction((tx) => tx.get(doc('order-7'))), Buffer.from('placed'));
});

test('an aborted application transaction enqueues nothing and wakes no accept', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  const counterBefore = await pendingCounter(database, T1);
  const blocked = jobs.accept(T1, { timeout: 500 });
  const error = await t.throwsAsync(
    database.doTransaction(async (tx) => {
      tx.set(doc('order-8'), Buffer.from('placed'));
      await jobs.in(tx).add(T1, 'email-order-8', { order: 8 });
      throw new Error('payment declined');
    }),
  );
  t.is(error?.message, 'payment declined');
  t.is(await blocked, undefined, 'the blocked accept ran into its timeout');
  t.is(await jobs.getJob(T1, 'email-order-8'), undefined);
  t.is(await jobs.pendingCount(T1), 0);
  t.is(await pendingCounter(database, T1), counterBefore, 'the counter blocked accepts watch never moved');
  t.is(await database.doTransaction((tx) => tx.get(doc('order-8'))), undefined);
});

test('a retried application transaction enqueues, updates and finishes each job once', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.add(T1, 'running', { step: 0 });
  const job = (await jobs.accept(T1))!;
  await jobs.add(T1, 'done', {});
  const done = (await jobs.accept(T1))!;
  let attempts = 0;
  const result = await database.doTransaction(async (tx) => {
    attempts += 1;
    const inTx = jobs.in(tx);
    const added = await inTx.add(T2, 'fresh', { n: 1 });
    const updated = await inTx.update(job, { step: 1 });
    const finished = await inTx.finish(done, { ok: true });
    // Conflicts retry the body: the second attempt runs it all again.
    if (attempts === 1) throw new FdbError(FdbErrorCode.not_committed, 'injected conflict');
    return { added, updated, finished };
  });
  t.is(attempts, 2);
  t.is(result.added, 'pending');
  t.like(result.updated, { id: 'running', data: { step: 1 }, lock: job.lock });
  t.is(result.finished, 'finished');
  t.is(await jobs.pendingCount(T2), 1, 'one queue entry');
  t.deepEqual(await jobs.getActiveJobIds(T1), ['running'], 'one activity row for the updated job, none for the finished one');
  t.like(await jobs.getJob(T1, 'done'), { state: 'finished', data: { ok: true } });
  const accepted = await jobs.accept(T2);
  t.is(accepted?.id, 'fresh');
  t.is(await jobs.accept(T2), undefined, 'enqueued once');
  t.is(await jobs.finish(result.updated), 'finished', 'the updated handle still owns its job');
});

test('several updates in one application transaction each keep their own activity row', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  for (let i = 0; i < 5; i++) await jobs.add(T1, `u${i}`, {});
  const handles = await jobs.acceptMany(T1, 5);
  t.is(handles.length, 5);
  const updated = await database.doTransaction(async (tx) => {
    // Two views of one transaction share their user versions.
    const first = await Promise.all(handles.slice(0, 3).map((job) => jobs.in(tx).update(job, { u: job.id })));
    const rest = await Promise.all(handles.slice(3).map((job) => jobs.in(tx).update(job)));
    return [...first, ...rest];
  });
  t.deepEqual((await jobs.getActiveJobIds(T1)).sort(), ['u0', 'u1', 'u2', 'u3', 'u4']);
  const states = await Promise.all(updated.map((job) => jobs.finish(job)));
  t.deepEqual(states, Array(5).fill('finished'));
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});

test('the view covers type timeouts, creator resubmits, states and job reads', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await database.doTransaction(async (tx) => {
    const inTx = jobs.in(tx);
    await inTx.setTypeTimeout('reports', 12);
    t.is(await inTx.getTypeTimeout('reports'), 12, 'read back in the same transaction');
    await inTx.add('reports', 'r1', { v: 1 });
    await inTx.add('reports', 'r2', { v: 2 }, { continuous: true });
  });
  t.is(await jobs.getTypeTimeout('reports'), 12);
  await jobs.remove('reports', 'r2');
  const r1 = (await jobs.accept('reports'))!;
  await jobs.finish(r1);
  await jobs.add('reports', 'r2', { v: 2 }, { continuous: true });
  const read = await database.doTransaction(async (tx) => {
    const inTx = jobs.in(tx);
    const resubmitted = await inTx.resubmit('reports', r1.id, { data: { v: 10 } });
    return {
      resubmitted,
      states: await inTx.getJobStates('reports', ['r1', 'r2', 'nope']),
      state: await inTx.getJobState('reports', 'r2'),
      job: await inTx.getJob('reports', 'r2'),
    };
  });
  t.is(read.resubmitted, 'pending');
  t.deepEqual(read.states, [
    { id: 'r1', state: 'pending', data: { v: 10 } },
    { id: 'r2', state: 'pending', data: { v: 2 } },
    { id: 'nope', state: undefined, data: undefined },
  ]);
  t.is(read.state, 'pending');
  t.like(read.job, { id: 'r2', continuous: true });
  await t.throwsAsync(
    database.doTransaction((tx) => jobs.in(tx).resubmit('reports', 'missing')),
    { instanceOf: JobsError, code: 'not_found' },
  );
});

test('in() refuses what is not a transaction, and a closed handle', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  for (const bad of [null, undefined, 5, {}]) {
    t.throws(() => jobs.in(bad as never), { instanceOf: JobsError, code: 'invalid_option' });
  }
  await database.doTransaction(async (tx) => {
    await t.throwsAsync(jobs.in(tx).add(T1, '', {}), { code: 'invalid_job_id' });
    await t.throwsAsync(jobs.in(tx).add('untimed', 'x', {}), { code: 'no_type_timeout' });
  });
  await jobs.close();
  await database.doTransaction(async (tx) => {
    t.throws(() => jobs.in(tx), { instanceOf: JobsError, code: 'closed' });
  });
});
