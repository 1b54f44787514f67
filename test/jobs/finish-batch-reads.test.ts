// The finish side of a batched drain: in a shared transaction on the
// embedded engine, each finish and update reads its record at once and
// answers there (no promise of its own), still with its own lock check; a
// wrapper that intercepts reads sees every one of them; a call rejects with
// `closed` once its handle closed; and a
// counted finish tells its counter exactly once, whatever its outcome.

import test from 'ava';
import { checkJobsConsistency, FdbError, FdbErrorCode, JobsError } from '@jobtree/core';
import type { Database, Job, Transaction } from '@jobtree/core';
import { interceptGets } from './intercepted-gets.js';
import { FINISH_COUNTED } from '../../packages/core/src/jobs/counted-finish.js';
import type { CountedFinish } from '../../packages/core/src/jobs/counted-finish.js';
import { openTempJobs, T1 } from './temp-jobs.js';

/** Wraps every transaction in a proxy whose `get` counts the reads (every other member is the transaction's own). */
class CountingGets {
  made = 0;

  wrap(database: Database): Database {
    return interceptGets(database, (tx, key) => {
      this.made += 1;
      return tx.get(key);
    });
  }
}

async function takeAll(jobs: { acceptMany(type: string, max: number): Promise<Job[]> }, count: number): Promise<Job[]> {
  const taken: Job[] = [];
  while (taken.length < count) {
    const batch = await jobs.acceptMany(T1, count - taken.length);
    if (batch.length === 0) throw new Error('the queue ran dry');
    taken.push(...batch);
  }
  return taken;
}

test('finishes and updates sharing a transaction each check their own lock: the stale ones halt, the others commit', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  const ids = Array.from({ length: 40 }, (_, i) => `f${i}`);
  await jobs.addMany(T1, ids.map((id, i) => ({ id, data: { i } })));
  const taken = await takeAll(jobs, ids.length);
  // Two jobs are no longer their worker's: one removed, one re-enqueued and taken by another worker.
  const [removed, retaken] = taken as [Job, Job, ...Job[]];
  await jobs.remove(T1, removed.id);
  await jobs.resubmit(T1, retaken.id);
  t.is(await jobs.finish(retaken), 'pending');
  const newOwner = (await jobs.acceptMany(T1, 1))[0] as Job;
  t.is(newOwner.id, retaken.id);

  // All in one turn: the batcher gathers them into shared transactions.
  const finishes = taken.slice(0, 30).map((job) => jobs.finish(job, { finished: job.id }).catch((error: unknown) => error));
  const updates = taken.slice(30).map((job) => jobs.update(job, { step: 2 }).catch((error: unknown) => error));
  const finished = await Promise.all(finishes);
  const updated = await Promise.all(updates);

  t.true(JobsError.is(finished[0], 'halt'), String(finished[0]));
  t.true(JobsError.is(finished[1], 'halt'), String(finished[1]));
  t.deepEqual(finished.slice(2), Array.from({ length: 28 }, () => 'finished'));
  for (const [index, job] of updated.entries()) {
    const before = taken[30 + index] as Job;
    t.deepEqual(job, { ...before, data: { step: 2 } }, 'an update answers with the new handle');
  }
  // The new owner still holds its job, and every finished job keeps the data its finish gave it.
  t.is(await jobs.finish(newOwner), 'finished');
  const states = await jobs.getJobStates(T1, taken.slice(2, 30).map((job) => job.id));
  for (const state of states) t.deepEqual(state, { id: state.id, state: 'finished', data: { finished: state.id } });
  const report = await checkJobsConsistency(database);
  t.deepEqual(report.anomalies, []);
  t.is(report.states.running, 10, 'the updated jobs still run, each with its one activity row');
});

test('a transaction wrapper that intercepts get sees the read of every finish and update in a shared batch', async (t) => {
  const gets = new CountingGets();
  const { jobs } = await openTempJobs(t, (inner) => gets.wrap(inner));
  await jobs.addMany(T1, Array.from({ length: 12 }, (_, i) => ({ id: `w${i}` })));
  const taken = await takeAll(jobs, 12);
  gets.made = 0;
  const updated = await Promise.all(taken.slice(0, 4).map((job) => jobs.update(job)));
  t.is(gets.made, 4, 'one read per update, through the wrapper');
  gets.made = 0;
  const finished = await Promise.all([...updated, ...taken.slice(4)].map((job) => jobs.finish(job)));
  t.deepEqual(finished, Array.from({ length: 12 }, () => 'finished'));
  t.is(gets.made, 12, 'one read per finish, through the wrapper');
});

test('a finish whose transaction fails after its handle closed rejects with closed, not with the storage error', async (t) => {
  let gate: (() => void) | undefined;
  let failNext = false;
  const storageError = new FdbError(FdbErrorCode.internal_error, 'injected by the test');
  const { jobs } = await openTempJobs(t, (inner) =>
    new Proxy(inner, {
      get(target, property) {
        if (property === 'doTransaction') {
          return async <T>(body: (tx: Transaction) => Promise<T> | T, options?: unknown): Promise<T> => {
            if (!failNext) return target.doTransaction(body, options as never);
            failNext = false;
            await new Promise<void>((resolve) => {
              gate = resolve;
            });
            throw storageError;
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }),
  );
  await jobs.add(T1, 'c1');
  const job = (await jobs.acceptMany(T1, 1))[0] as Job;
  failNext = true;
  const finish = jobs.finish(job).catch((error: unknown) => error);
  while (gate === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
  const closing = jobs.close();
  gate();
  const error = await finish;
  await closing;
  t.true(JobsError.is(error, 'closed'), String(error));
});

test('a counted finish tells its counter once when it commits, when it halts, and when it is refused before any transaction', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, [{ id: 'k1' }, { id: 'k2' }]);
  const [first, second] = (await takeAll(jobs, 2)) as [Job, Job];
  await jobs.remove(T1, second.id);
  const counted = (jobs as unknown as CountedFinish)[FINISH_COUNTED].bind(jobs);
  const order: string[] = [];
  const counter = { settled: () => order.push('counted') };

  t.is(await counted(first, undefined, counter), 'finished');
  t.deepEqual(order, ['counted']);

  order.length = 0;
  const halted = await counted(second, undefined, counter).catch((error: unknown) => error);
  t.true(JobsError.is(halted, 'halt'), String(halted));
  t.deepEqual(order, ['counted']);

  order.length = 0;
  const refused = await counted({ ...first, id: 7 as unknown as string }, undefined, counter).catch((error: unknown) => error);
  t.true(JobsError.is(refused, 'invalid_job_id'), String(refused));
  t.deepEqual(order, ['counted']);

  order.length = 0;
  await jobs.close();
  const closed = await counted(first, undefined, counter).catch((error: unknown) => error);
  t.true(JobsError.is(closed, 'closed'), String(closed));
  t.deepEqual(order, ['counted']);
});
