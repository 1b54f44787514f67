// The continuous flag: stored with the job, shown on Job and JobInfo, kept
// by an existing job unless a new value is given.

import test from 'ava';
import { JobsError } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

test('a job is one-shot unless added as continuous, and both Job and JobInfo say which', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'once', {});
  await jobs.add(T1, 'forever', {}, { continuous: true, priority: 1 });
  t.like(await jobs.getJob(T1, 'once'), { continuous: false });
  t.like(await jobs.getJob(T1, 'forever'), { continuous: true });
  const first = await jobs.accept(T1);
  t.like(first, { id: 'forever', continuous: true });
  t.like(await jobs.update(first!), { continuous: true });
  const second = await jobs.accept(T1);
  t.like(second, { id: 'once', continuous: false });
  t.deepEqual(
    (await jobs.getJobs(T1)).map((job) => [job.id, job.continuous]),
    [
      ['forever', true],
      ['once', false],
    ],
  );
});

test('an existing job keeps its flag unless the option is given', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j', { v: 1 }, { continuous: true });
  await jobs.add(T1, 'j', { v: 2 });
  t.like(await jobs.getJob(T1, 'j'), { continuous: true, data: { v: 2 } });
  const job = (await jobs.accept(T1))!;
  // Flagged for resubmission while running: the flag stays through the re-enqueue.
  await jobs.add(T1, 'j', { v: 3 });
  t.is(await jobs.finish(job), 'pending');
  t.like(await jobs.getJob(T1, 'j'), { state: 'pending', continuous: true });
  await jobs.add(T1, 'j', undefined, { continuous: false });
  t.like(await jobs.getJob(T1, 'j'), { continuous: false });
  const again = (await jobs.accept(T1))!;
  t.is(await jobs.finish(again), 'finished');
  await jobs.resubmit(T1, 'j', { continuous: true });
  t.like(await jobs.getJob(T1, 'j'), { state: 'pending', continuous: true });
  await jobs.addMany(T1, [{ id: 'k', continuous: true }, { id: 'j' }]);
  t.like(await jobs.getJob(T1, 'k'), { continuous: true });
  t.like(await jobs.getJob(T1, 'j'), { continuous: true });
});

test('a re-enqueued inactive continuous job stays continuous', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j', {}, { continuous: true });
  const job = (await jobs.accept(T1))!;
  const stamp = await jobs.getActivityVersionstamp(T1);
  t.deepEqual(await jobs.reEnqueueInactive(T1, stamp!), ['j']);
  t.like(await jobs.getJob(T1, 'j'), { state: 'pending', continuous: true });
  await t.throwsAsync(jobs.finish(job), { code: 'halt' });
});

test('continuous must be a boolean', async (t) => {
  const { jobs } = await openTempJobs(t);
  for (const bad of ['yes', 1, null]) {
    await t.throwsAsync(jobs.add(T1, 'j', {}, { continuous: bad as never }), { instanceOf: JobsError, code: 'invalid_option' });
  }
  t.is(await jobs.getJob(T1, 'j'), undefined);
});
