// A job's failed attempts and the time of its next attempt live in the
// store with the job: failAttempt counts one and enqueues the job for
// later, every accept hands the count out, and it survives closing and
// reopening the store. A give-back keeps it; a new run of a finished job
// starts it again.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { JobsError, openJobs } from '@jobtree/core';
import type { Job, Jobs } from '@jobtree/core';
import { nowSeconds, openTempJobs, T1 } from './temp-jobs.js';

async function acceptOne(jobs: Jobs, maxSchedTime?: number): Promise<Job> {
  const job = await jobs.accept(T1, maxSchedTime === undefined ? {} : { maxSchedTime });
  if (job === undefined) throw new Error('no job to accept');
  return job;
}

test('failAttempt counts a failed attempt and enqueues the job again for its next attempt, its data kept', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'a', { input: 'a' }, { priority: 2 });
  const first = await acceptOne(jobs);
  t.is(first.attempts, 0);
  const next = nowSeconds() + 3_600;
  t.is(await jobs.failAttempt(first, { scheduledTime: next }), 'pending');
  t.like(await jobs.getJob(T1, 'a'), { state: 'pending', attempts: 1, scheduledTime: next, priority: 2, data: { input: 'a' } });
  // Not due before its time.
  t.is(await jobs.accept(T1), undefined);
  const second = await acceptOne(jobs, next);
  t.like(second, { id: 'a', attempts: 1, data: { input: 'a' } });
  // A count of the caller's own (a worker whose long healthy run starts a new streak).
  await jobs.failAttempt(second, { scheduledTime: new Date(next * 1000), attempts: 1 });
  t.like(await acceptOne(jobs, next), { attempts: 1 });
  t.is(await jobs.getJobState(T1, 'a'), 'running');
});

test('failAttempt checks its options and the lock before it writes anything', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'a');
  const job = await acceptOne(jobs);
  const code = async (options: unknown) => (await t.throwsAsync(jobs.failAttempt(job, options as never), { instanceOf: JobsError }))?.code;
  t.is(await code(undefined), 'invalid_option');
  t.is(await code({}), 'invalid_option');
  t.is(await code({ scheduledTime: 1, attempts: -1 }), 'invalid_option');
  t.is(await code({ scheduledTime: 1, attempts: 1.5 }), 'invalid_option');
  t.is(await code({ scheduledTime: 1, retryAt: 2 }), 'invalid_option');
  t.is(await code({ scheduledTime: Date.now() }), 'invalid_scheduled_time');
  t.is(await jobs.getJobState(T1, 'a'), 'running');
  await jobs.remove(T1, 'a');
  t.is(await code({ scheduledTime: 1 }), 'halt');
});

test('attempts survive closing and reopening the store', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-attempts-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const first = await openJobs({ path: dir });
  await first.setTypeTimeout(T1, 30);
  await first.add(T1, 'a', { input: 'a' });
  await first.failAttempt(await acceptOne(first), { scheduledTime: 1 });
  await first.failAttempt(await acceptOne(first), { scheduledTime: 2 });
  await first.close();

  const second = await openJobs({ path: dir });
  t.teardown(() => second.close());
  t.like(await second.getJob(T1, 'a'), { state: 'pending', attempts: 2, scheduledTime: 2 });
  const job = await acceptOne(second);
  t.like(job, { attempts: 2, data: { input: 'a' } });
  await second.fail(job, new Error('third'));
  t.like(await second.getJob(T1, 'a'), { outcome: 'failed', attempts: 3 });
});

test('a give-back, an update, a re-enqueue and an add of a pending job keep the attempts; a new run of a finished job starts them again', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'a', { input: 'a' });
  await jobs.failAttempt(await acceptOne(jobs), { scheduledTime: 1 });
  // A give-back (a scheduler's rotation or shutdown): flagged, then finished.
  const job = await acceptOne(jobs);
  t.is((await jobs.update(job)).attempts, 1);
  t.is(await jobs.finish(await jobs.resubmit(job)), 'pending');
  t.like(await jobs.getJob(T1, 'a'), { state: 'pending', attempts: 1 });
  await jobs.add(T1, 'a', { input: 'changed' });
  t.like(await jobs.getJob(T1, 'a'), { state: 'pending', attempts: 1, data: { input: 'changed' } });
  // The activity monitor's re-enqueue of a silent worker.
  await acceptOne(jobs);
  const stamp = await jobs.getActivityVersionstamp(T1);
  if (stamp === undefined) throw new Error('no activity stamp');
  t.deepEqual(await jobs.reEnqueueInactive(T1, stamp), ['a']);
  t.like(await jobs.getJob(T1, 'a'), { state: 'pending', attempts: 1 });
  await jobs.complete(await acceptOne(jobs));
  t.like(await jobs.getJob(T1, 'a'), { outcome: 'succeeded', attempts: 1 });
  t.is(await jobs.add(T1, 'a'), 'pending');
  t.like(await jobs.getJob(T1, 'a'), { state: 'pending', attempts: 0 });
});
