// add and finish in a shared batch read their records through callbacks
// (no async function per job): a read that rejects, or a get that throws at
// once, must still settle the call so the batch fails and is retried, and
// every call then commits exactly once.

import test from 'ava';
import { FdbError, FdbErrorCode, checkJobsConsistency } from '@jobtree/core';
import type { Database, Job } from '@jobtree/core';
import { interceptGets } from './intercepted-gets.js';
import { openTempJobs, T1 } from './temp-jobs.js';

/** Fails the next `failures` gets of any transaction with a retryable error: alternately thrown at once and as a rejection. */
class FailingGets {
  failures = 0;
  made = 0;

  wrap(database: Database): Database {
    return interceptGets(database, (tx, key) => {
      if (this.failures === 0) return tx.get(key);
      this.failures -= 1;
      this.made += 1;
      const error = new FdbError(FdbErrorCode.not_committed, 'injected by the test');
      if (this.made % 2 === 1) throw error;
      return Promise.reject(error);
    });
  }
}

test('adds and finishes whose reads fail are retried with their batch and commit once', async (t) => {
  const gets = new FailingGets();
  const { jobs, database } = await openTempJobs(t, (inner) => gets.wrap(inner));
  const ids = Array.from({ length: 20 }, (_, index) => `j${index}`);

  gets.failures = 4;
  const added = await Promise.all(ids.map((id) => jobs.add(T1, id)));
  t.deepEqual(added, ids.map(() => 'pending'));
  t.is(gets.made, 4);

  const taken = await jobs.acceptMany(T1, ids.length);
  t.is(taken.length, ids.length);

  gets.failures = 4;
  const finished = await Promise.all(taken.map((job: Job) => jobs.finish(job)));
  t.deepEqual(finished, ids.map(() => 'finished'));
  t.is(gets.made, 8);

  const settled = await jobs.finishMany(taken.map((job) => ({ job })));
  t.true(settled.every((outcome) => outcome.status === 'rejected' && (outcome.reason as { code?: string }).code === 'halt'));
  t.deepEqual(await jobs.getJobStates(T1, ids), ids.map((id) => ({ id, state: 'finished', data: null })));
  t.deepEqual((await checkJobsConsistency(database)).anomalies, []);
});
