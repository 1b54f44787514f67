// Every error of the jobs API is a JobsError with a code that says what was
// wrong: bad arguments of any kind, and calls that were in flight when the
// handle closed (never a TypeError, never the storage's "database is closed").

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { JobsError, Jobs, openJobs } from '@jobtree/core';
import type { ExecutionContext } from 'ava';
import type { Job, OpenJobsOptions } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

async function tempDir(t: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-typed-errors-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('foldJobs with a fold that is not a function is invalid_option', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j', {});
  const error = await t.throwsAsync(jobs.foldJobs(T1, 'notfn' as never, 0), { instanceOf: JobsError });
  t.is(error?.code, 'invalid_option');
});

test('isResubmitted of something that is not a job handle is invalid_option', async (t) => {
  const { jobs } = await openTempJobs(t);
  for (const bad of [null, undefined, 5, 'job', {}]) {
    const error = t.throws(() => jobs.isResubmitted(bad as unknown as Job), { instanceOf: JobsError });
    t.is(error?.code, 'invalid_option');
  }
});

test('openJobs with options that are not options is invalid_option, before anything is opened', async (t) => {
  const bad: unknown[] = [
    null,
    's',
    42,
    [],
    { path: 42 },
    { path: '' },
    { path: null },
    { clusterFile: 7 },
    { clusterFile: '' },
    { database: undefined },
    { database: null },
    { database: {} },
    { database: { doTransaction: 'no' } },
  ];
  for (const options of bad) {
    const error = await t.throwsAsync(openJobs(options as OpenJobsOptions), { instanceOf: JobsError });
    t.is(error?.code, 'invalid_option', JSON.stringify(options));
  }
  t.throws(() => new Jobs(null as never), { instanceOf: JobsError, code: 'invalid_option' });
});

test('accept with a noSchedule that is not a boolean is invalid_option', async (t) => {
  const { jobs } = await openTempJobs(t);
  await t.throwsAsync(jobs.accept(T1, { noSchedule: 'yes' as never }), { instanceOf: JobsError, code: 'invalid_option' });
});

test('an add in flight when close() runs rejects with closed, not a storage error', async (t) => {
  const dir = await tempDir(t);
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeTimeout(T1, 5);
  const adds = Array.from({ length: 20 }, (_, i) => jobs.add(T1, `j${i}`, { i }));
  await jobs.close();
  const results = await Promise.allSettled(adds);
  for (const result of results) {
    if (result.status === 'rejected') {
      t.true(JobsError.is(result.reason, 'closed'), String(result.reason));
    }
  }
  t.true(
    results.some((result) => result.status === 'rejected'),
    'at least one add was still in flight',
  );
});

test('every kind of call in flight when close() runs rejects with closed or succeeds', async (t) => {
  const dir = await tempDir(t);
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeTimeout(T1, 5);
  for (let i = 0; i < 10; i++) await jobs.add(T1, `r${i}`, { i });
  const handles: Job[] = [];
  for (let i = 0; i < 6; i++) handles.push((await jobs.accept(T1))!);
  const calls: Promise<unknown>[] = [
    jobs.getJobState(T1, 'r9'),
    jobs.getJobData(T1, 'r9'),
    jobs.getJob(T1, 'r9'),
    jobs.getJobs(T1),
    jobs.foldJobs(T1, (n) => n + 1, 0),
    jobs.pendingCount(T1),
    jobs.getActiveJobIds(T1),
    jobs.getTypes(),
    jobs.getTypeTimeout(T1),
    jobs.remove(T1, 'r8'),
    jobs.resubmit(T1, 'r7', { priority: 2 }),
    jobs.update(handles[0]!, { step: 1 }),
    jobs.finish(handles[1]!),
    jobs.resubmit(handles[2]!),
    jobs.reEnqueueInactive(T1, 'f'.repeat(24)),
    jobs.getActivityVersionstamp(T1),
    jobs.accept(T1),
    jobs.setTypeTimeout('other', 1),
  ];
  await jobs.close();
  const results = await Promise.allSettled(calls);
  for (const [index, result] of results.entries()) {
    if (result.status === 'rejected') t.true(JobsError.is(result.reason, 'closed'), `call ${index}: ${String(result.reason)}`);
  }
  await t.throwsAsync(jobs.getJobState(T1, 'r1'), { instanceOf: JobsError, code: 'closed' });
});
