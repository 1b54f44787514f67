// A job's own retry policy (`add(..., { retry })`) is stored with the job,
// apart from its data, and handed out with it: on every accept, in any
// process, across a reopen of the store, through failed attempts, a
// failure and a retry. Adding the job again without one keeps it; with one
// replaces it; removing the job takes it away.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { JobsError, openJobs } from '@jobtree/core';
import type { Job, JobRetryPolicy, Jobs } from '@jobtree/core';
import { T1, openTempJobs } from './temp-jobs.js';

const policy: JobRetryPolicy = { attempts: 7, backoff: { type: 'fixed', delayMs: 2_000, jitter: 0.5 }, maxRunMs: 60_000 };

async function acceptOne(jobs: Jobs, maxSchedTime?: number): Promise<Job> {
  const job = await jobs.accept(T1, maxSchedTime === undefined ? {} : { maxSchedTime });
  if (job === undefined) throw new Error('no job to accept');
  return job;
}

test("a job's retry policy is stored apart from its data and comes with it on every accept", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'a', { input: 1 }, { retry: policy });
  await jobs.add(T1, 'plain', { input: 2 });
  const info = await jobs.getJob(T1, 'a');
  t.like(info, { data: { input: 1 }, retry: policy });
  t.false('retry' in ((await jobs.getJob(T1, 'plain')) ?? {}));
  // Jobs of equal rank are accepted in random order: take both, look at each.
  const taken = [await acceptOne(jobs), await acceptOne(jobs)];
  const first = taken.find((job) => job.id === 'a') as Job;
  const plain = taken.find((job) => job.id === 'plain') as Job;
  t.deepEqual(first.retry, policy);
  t.deepEqual(first.data, { input: 1 });
  t.false('retry' in plain);
  // An update keeps it on the handle; a failed attempt keeps it in the store.
  const updated = await jobs.update(first, { input: 1, step: 2 });
  t.deepEqual(updated.retry, policy);
  await jobs.failAttempt(updated, { scheduledTime: 1 });
  const second = await acceptOne(jobs);
  t.like(second, { id: 'a', attempts: 1, retry: policy });
  // Failed, then retried by hand: the policy stays.
  await jobs.fail(second, { message: 'no' });
  await jobs.retry(T1, 'a');
  t.like(await acceptOne(jobs), { id: 'a', attempts: 0, retry: policy });
});

test('adding a job again without a policy keeps its policy, with one replaces it, and removing it takes it away', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'a', null, { retry: policy });
  await jobs.add(T1, 'a', { more: true });
  t.like(await jobs.getJob(T1, 'a'), { retry: policy, data: { more: true } });
  const other = { attempts: 2 };
  await jobs.add(T1, 'a', undefined, { retry: other });
  t.deepEqual((await jobs.getJob(T1, 'a'))?.retry, other);
  // A running job's new policy is the next run's.
  const running = await acceptOne(jobs);
  t.deepEqual(running.retry, other);
  await jobs.add(T1, 'a', undefined, { retry: policy });
  await jobs.finish(running);
  t.deepEqual((await acceptOne(jobs)).retry, policy);
  t.true(await jobs.remove(T1, 'a'));
  await jobs.add(T1, 'a');
  t.false('retry' in (await acceptOne(jobs)));
  // addMany takes it per job.
  await jobs.addMany(T1, [{ id: 'm', retry: other }, { id: 'n' }]);
  t.deepEqual((await jobs.getJob(T1, 'm'))?.retry, other);
  t.false('retry' in ((await jobs.getJob(T1, 'n')) ?? {}));
});

test("a job's retry policy survives closing and reopening the store", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-retry-policy-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const first = await openJobs({ path: join(dir, 'db') });
  await first.setTypeTimeout(T1, 5);
  await first.add(T1, 'a', {}, { retry: policy });
  await first.close();
  const second = await openJobs({ path: join(dir, 'db') });
  t.teardown(() => second.close());
  t.deepEqual((await acceptOne(second)).retry, policy);
});

test('a bad retry policy is refused with invalid_option before anything is written', async (t) => {
  const { jobs } = await openTempJobs(t);
  const cases: [unknown, RegExp][] = [
    [5, /retry is an object/],
    [{ attempts: 0 }, /retry\.attempts/],
    [{ attempts: 1.5 }, /retry\.attempts/],
    [{ retries: 3 }, /"retries".*attempts/],
    [{ backoff: () => 5 }, /a backoff function belongs to app\.process/],
    [{ backoff: { type: 'linear', delayMs: 1 } }, /retry\.backoff\.type/],
    [{ backoff: { type: 'fixed', delayMs: -1 } }, /retry\.backoff\.delayMs/],
    [{ backoff: { type: 'exponential', delayMs: 10, maxDelayMs: 5 } }, /maxDelayMs/],
    [{ backoff: { type: 'fixed', delayMs: 10, jitter: 2 } }, /jitter/],
    [{ maxRunMs: 0 }, /retry\.maxRunMs/],
  ];
  for (const [retry, message] of cases) {
    const error = await t.throwsAsync(jobs.add(T1, 'bad', {}, { retry: retry as JobRetryPolicy }), { instanceOf: JobsError, message }, JSON.stringify(retry));
    t.is(error?.code, 'invalid_option');
  }
  t.is(await jobs.getJob(T1, 'bad'), undefined);
});
