// add, update and finish are plain functions returning the write's promise
// (no async wrapper per job): bad input and a closed handle must still come
// back as a rejected promise, never as a synchronous throw.

import test from 'ava';
import { JobsError } from '@jobtree/core';
import type { Job } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

/** Calls `call` and returns what it gave back, failing the test if it threw synchronously. */
function returned<R>(t: { fail(message: string): void }, call: () => Promise<R>): Promise<R> {
  try {
    return call();
  } catch (error) {
    t.fail(`threw synchronously: ${String(error)}`);
    return Promise.reject(error);
  }
}

test('update and finish reject a bad handle and bad data instead of throwing', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j');
  const job = (await jobs.accept(T1)) as Job;
  const bad = { type: T1 } as unknown as Job;
  await t.throwsAsync(returned(t, () => jobs.finish(bad)), { instanceOf: JobsError, code: 'invalid_option' });
  await t.throwsAsync(returned(t, () => jobs.update(bad)), { instanceOf: JobsError, code: 'invalid_option' });
  await t.throwsAsync(returned(t, () => jobs.finish(job, { n: Number.NaN })), { code: 'invalid_job_data' });
  await t.throwsAsync(returned(t, () => jobs.update(job, (() => 1) as never)), { code: 'invalid_job_data' });
  // Nothing was written by the refused calls: the job is still the worker's to finish.
  t.is(await jobs.finish(job), 'finished');
});

test('add, update and finish on a closed handle reject with closed', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j');
  const job = (await jobs.accept(T1)) as Job;
  await jobs.close();
  await t.throwsAsync(returned(t, () => jobs.add(T1, 'k')), { instanceOf: JobsError, code: 'closed' });
  await t.throwsAsync(returned(t, () => jobs.update(job)), { instanceOf: JobsError, code: 'closed' });
  await t.throwsAsync(returned(t, () => jobs.finish(job)), { instanceOf: JobsError, code: 'closed' });
});
