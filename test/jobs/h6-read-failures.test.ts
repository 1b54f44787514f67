// add and finish in a shared batch read their records through callbacks
// (no async function per job): a read that rejects, or a get that throws at
// once, must still settle the call so the batch fails and is retried, and
// every call then commits exactly once.

import test from 'ava';
import { FdbError, FdbErrorCode, checkJobsConsistency } from '@jobtree/core';
import type { Database, Job, Transaction } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

/** Fails the next `failures` gets of any transaction with a retryable error: alternately thrown at once and as a rejection. */
class FailingGets {
  failures = 0;
  made = 0;

  wrap(database: Database): Database {
    const gets = this;
    const wrapTx = (tx: Transaction): Transaction =>
      new Proxy(tx, {
        get(target, property) {
          if (property === 'get') {
            return (key: Buffer) => {
              if (gets.failures === 0) return target.get(key);
              gets.failures -= 1;
              gets.made += 1;
              const error = new FdbError(FdbErrorCode.not_committed, 'injected by the test');
              if (gets.made % 2 === 1) throw error;
              return Promise.reject(error);
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    return new Proxy(database, {
      get(target, property) {
        if (property === 'doTransaction') {
          return <T>(body: (tx: Transaction) => Promise<T> | T, options?: unknown) =>
            target.doTransaction((tx) => body(wrapTx(tx)), options as never);
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
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
