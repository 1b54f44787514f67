// How a finished job ended, and what its run left apart from its data:
// finish (couch_jobs: the data replaced) ends succeeded; complete keeps the
// input and stores the result apart; fail keeps the input and stores the
// error apart; cancel ends a pending or running job; retry runs a failed or
// cancelled job again with its input; filters by outcome.

import test from 'ava';
import { checkJobsConsistency, JobsError } from '@jobtree/core';
import type { Job, Jobs } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { openTempJobs, T1, T2 } from './temp-jobs.js';

async function take(jobs: Jobs, type: string, id: string, data: unknown = { input: id }): Promise<Job> {
  await jobs.add(type, id, data);
  const job = await jobs.accept(type);
  if (job?.id !== id) throw new Error(`accepted ${job?.id}, not ${id}`);
  return job;
}

async function anomalies(jobs: Jobs): Promise<unknown[]> {
  return (await checkJobsConsistency(jobs.database)).anomalies;
}

test('finish replaces the data as couch_jobs does and ends the job succeeded', async (t) => {
  const { jobs } = await openTempJobs(t);
  t.is(await jobs.finish(await take(jobs, T1, 'a'), { output: 1 }), 'finished');
  t.like(await jobs.getJob(T1, 'a'), { state: 'finished', outcome: 'succeeded', data: { output: 1 }, attempts: 0 });
  const info = await jobs.getJob(T1, 'a');
  t.false(info !== undefined && 'result' in info);
  t.false(info !== undefined && 'error' in info);
});

test('complete keeps the input as the data and stores the result apart', async (t) => {
  const { jobs } = await openTempJobs(t);
  t.is(await jobs.complete(await take(jobs, T1, 'a'), { output: 1 }), 'finished');
  t.like(await jobs.getJob(T1, 'a'), { state: 'finished', outcome: 'succeeded', data: { input: 'a' }, result: { output: 1 } });
  t.deepEqual(await jobs.getJobData(T1, 'a'), { input: 'a' });
  // No result given: none stored, and none read back.
  await jobs.complete(await take(jobs, T1, 'b'));
  const info = await jobs.getJob(T1, 'b');
  t.like(info, { outcome: 'succeeded', data: { input: 'b' } });
  t.false(info !== undefined && 'result' in info);
  // A null result is a result.
  await jobs.complete(await take(jobs, T1, 'c'), null);
  t.like(await jobs.getJob(T1, 'c'), { result: null });
  t.deepEqual(await anomalies(jobs), []);
});

test("a worker's progress stays the data when it completes: the data is the input as the worker last left it", async (t) => {
  const { jobs } = await openTempJobs(t);
  const job = await jobs.update(await take(jobs, T1, 'a'), { input: 'a', cursor: 7 });
  await jobs.complete(job, 'done');
  t.like(await jobs.getJob(T1, 'a'), { data: { input: 'a', cursor: 7 }, result: 'done' });
});

test('fail keeps the input, stores the error apart, counts the attempt and ends the job failed', async (t) => {
  const { jobs } = await openTempJobs(t);
  t.is(await jobs.fail(await take(jobs, T1, 'a'), new RangeError('out of range')), 'finished');
  t.like(await jobs.getJob(T1, 'a'), {
    state: 'finished',
    outcome: 'failed',
    data: { input: 'a' },
    attempts: 1,
    error: { message: 'out of range', name: 'RangeError' },
  });
  const history = [{ type: 'crashed', timestamp: '2030-01-01T00:00:00.000Z', reason: 'boom' }];
  await jobs.fail(await take(jobs, T1, 'b'), { message: 'boom', history });
  t.deepEqual((await jobs.getJob(T1, 'b'))?.error, { message: 'boom', name: 'Error', history });
  // An error-like object keeps its message, name and history only.
  await jobs.fail(await take(jobs, T1, 'c'), { message: 'x', name: 'E', stack: 'at /home/me' } as never);
  t.deepEqual((await jobs.getJob(T1, 'c'))?.error, { message: 'x', name: 'E' });
  t.deepEqual(await anomalies(jobs), []);
});

test('fail checks its error before it writes anything', async (t) => {
  const { jobs } = await openTempJobs(t);
  const job = await take(jobs, T1, 'a');
  for (const bad of [undefined, 'boom', { name: 'E' }, { message: 1 }, { message: 'm', name: 2 }, { message: 'm', history: 'h' }]) {
    const error = await t.throwsAsync(jobs.fail(job, bad as never), { instanceOf: JobsError });
    t.is(error?.code, 'invalid_option', JSON.stringify(bad));
  }
  const cyclic: unknown[] = [];
  cyclic.push(cyclic);
  t.is((await t.throwsAsync(jobs.fail(job, { message: 'm', history: cyclic }), { instanceOf: JobsError }))?.code, 'invalid_job_data');
  t.is(await jobs.getJobState(T1, 'a'), 'running');
});

test('a job added again while it runs runs again with its input, not with its result', async (t) => {
  const { jobs } = await openTempJobs(t);
  const first = await take(jobs, T1, 'a');
  t.is(await jobs.add(T1, 'a'), 'running');
  t.is(await jobs.complete(first, { output: 'first run' }), 'pending');
  const pending = await jobs.getJob(T1, 'a');
  t.like(pending, { state: 'pending', data: { input: 'a' }, attempts: 0 });
  t.false(pending !== undefined && ('result' in pending || 'outcome' in pending));
  const second = await jobs.accept(T1);
  t.like(second, { id: 'a', data: { input: 'a' } });
  if (second === undefined) return;
  // A failure of a job added again while it ran counts, and the job runs again.
  await jobs.add(T1, 'a');
  t.is(await jobs.fail(second, new Error('flaky')), 'pending');
  t.like(await jobs.getJob(T1, 'a'), { state: 'pending', data: { input: 'a' }, attempts: 1 });
  t.deepEqual(await anomalies(jobs), []);
});

test('complete and fail of a job that is no longer the caller\'s get halt and write nothing', async (t) => {
  const { jobs } = await openTempJobs(t);
  const job = await take(jobs, T1, 'a');
  await jobs.remove(T1, 'a');
  t.is((await t.throwsAsync(jobs.complete(job, 1), { instanceOf: JobsError }))?.code, 'halt');
  t.is((await t.throwsAsync(jobs.fail(job, new Error('x')), { instanceOf: JobsError }))?.code, 'halt');
  t.is(await jobs.getJob(T1, 'a'), undefined);
  t.deepEqual(await anomalies(jobs), []);
});

test('completeMany and failMany end each job with its own outcome, a stale job getting its own halt', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id, data: { input: id } })));
  const [a, b, c, d, e] = await jobs.acceptMany(T1, 5);
  if (a === undefined || b === undefined || c === undefined || d === undefined || e === undefined) throw new Error('five jobs');
  await jobs.remove(T1, b.id);
  const completed = await jobs.completeMany([{ job: a, result: 1 }, { job: b, result: 2 }, { job: c }]);
  t.deepEqual(
    completed.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : (outcome.reason as JobsError).code)),
    ['finished', 'halt', 'finished'],
  );
  const failed = await jobs.failMany([{ job: d, error: new Error('d') }, { job: e, error: { message: 'e' } }]);
  t.deepEqual(
    failed.map((outcome) => outcome.status),
    ['fulfilled', 'fulfilled'],
  );
  const info = new Map((await jobs.getJobs(T1)).map((job) => [job.id, job]));
  t.like(info.get(a.id), { outcome: 'succeeded', result: 1, data: { input: a.id } });
  t.like(info.get(c.id), { outcome: 'succeeded', data: { input: c.id } });
  t.like(info.get(d.id), { outcome: 'failed', error: { message: 'd' }, data: { input: d.id } });
  t.like(info.get(e.id), { outcome: 'failed', error: { message: 'e', name: 'Error' } });
  // An item with a key of finishMany's gets its own error.
  const [wrong] = await jobs.completeMany([{ job: a, data: 1 } as never]);
  t.is(wrong?.status === 'rejected' && (wrong.reason as JobsError).code, 'invalid_option');
  t.deepEqual(await anomalies(jobs), []);
});

test('cancel ends a pending job cancelled, its data kept, and no accept takes it', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'a', { input: 'a' });
  t.true(await jobs.cancel(T1, 'a'));
  t.like(await jobs.getJob(T1, 'a'), { state: 'finished', outcome: 'cancelled', data: { input: 'a' } });
  t.is(await jobs.accept(T1), undefined);
  t.is(await jobs.pendingCount(T1), 0);
  // Cancelled already, or finished otherwise: nothing changes.
  t.false(await jobs.cancel(T1, 'a'));
  await jobs.finish(await take(jobs, T1, 'b'));
  t.false(await jobs.cancel(T1, 'b'));
  t.like(await jobs.getJob(T1, 'b'), { outcome: 'succeeded' });
  t.is((await t.throwsAsync(jobs.cancel(T1, 'nobody'), { instanceOf: JobsError }))?.code, 'not_found');
  t.deepEqual(await anomalies(jobs), []);
});

test("cancel ends a running job cancelled, and its worker's next update or finish gets halt", async (t) => {
  const { jobs } = await openTempJobs(t);
  const job = await take(jobs, T1, 'a');
  const other = await take(jobs, T1, 'b');
  t.true(await jobs.cancel(T1, 'a'));
  t.true(await jobs.cancel(T1, 'b'));
  t.is((await t.throwsAsync(jobs.update(job), { instanceOf: JobsError }))?.code, 'halt');
  t.is((await t.throwsAsync(jobs.finish(other), { instanceOf: JobsError }))?.code, 'halt');
  t.is((await t.throwsAsync(jobs.complete(job), { instanceOf: JobsError }))?.code, 'halt');
  t.like(await jobs.getJob(T1, 'a'), { state: 'finished', outcome: 'cancelled', data: { input: 'a' } });
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
  t.deepEqual(await anomalies(jobs), []);
});

test('retry runs a failed or cancelled job again with its input, its attempts back to 0 and its error gone', async (t) => {
  const { jobs } = await openTempJobs(t);
  const job = await take(jobs, T1, 'a');
  await jobs.failAttempt(job, { scheduledTime: 1 });
  const again = await jobs.accept(T1);
  if (again === undefined) throw new Error('no job');
  await jobs.fail(again, new Error('gave up'));
  t.like(await jobs.getJob(T1, 'a'), { outcome: 'failed', attempts: 2 });
  await jobs.retry(T1, 'a');
  const retried = await jobs.getJob(T1, 'a');
  t.like(retried, { state: 'pending', data: { input: 'a' }, attempts: 0 });
  t.false(retried !== undefined && ('error' in retried || 'outcome' in retried));
  t.like(await jobs.accept(T1), { id: 'a', data: { input: 'a' }, attempts: 0 });

  await jobs.add(T1, 'b', { input: 'b' });
  await jobs.cancel(T1, 'b');
  await jobs.retry(T1, 'b');
  t.like(await jobs.getJob(T1, 'b'), { state: 'pending', data: { input: 'b' } });
  t.deepEqual(await anomalies(jobs), []);
});

test('retry of a job that did not fail nor was cancelled is a not_retryable JobsError, of a missing job not_found', async (t) => {
  const { jobs } = await openTempJobs(t);
  const running = await take(jobs, T1, 'running');
  await jobs.complete(await take(jobs, T1, 'succeeded'), 1);
  await jobs.add(T1, 'pending');
  for (const id of ['pending', 'running', 'succeeded']) {
    const error = await t.throwsAsync(jobs.retry(T1, id), { instanceOf: JobsError });
    t.is(error?.code, 'not_retryable', id);
  }
  t.is((await t.throwsAsync(jobs.retry(T1, 'nobody'), { instanceOf: JobsError }))?.code, 'not_found');
  // Nothing changed.
  t.is(await jobs.getJobState(T1, 'pending'), 'pending');
  t.like(await jobs.update(running), { id: 'running' });
  t.like(await jobs.getJob(T1, 'succeeded'), { outcome: 'succeeded', result: 1 });
});

test('a finished job added again or removed leaves no outcome row behind', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.fail(await take(jobs, T1, 'a'), new Error('a'));
  await jobs.complete(await take(jobs, T1, 'b'), 'b');
  await jobs.add(T1, 'c');
  await jobs.cancel(T1, 'c');
  t.is(await jobs.add(T1, 'a', { input: 'again' }), 'pending');
  t.is(await jobs.resubmit(T1, 'b'), 'pending');
  t.true(await jobs.remove(T1, 'c'));
  t.like(await jobs.getJob(T1, 'a'), { state: 'pending', data: { input: 'again' }, attempts: 0 });
  t.like(await jobs.getJob(T1, 'b'), { state: 'pending', data: { input: 'b' } });
  t.deepEqual(await jobs.getJobs(T1, { outcome: 'failed' }), []);
  t.deepEqual(await jobs.getJobs(T1, { outcome: 'cancelled' }), []);
  t.deepEqual(await anomalies(jobs), []);
});

test('getJobs and foldJobs filter by outcome, for one type and for all', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.complete(await take(jobs, T1, 's1'), 's1');
  await jobs.finish(await take(jobs, T1, 's2'));
  await jobs.fail(await take(jobs, T1, 'f1'), new Error('f1'));
  await jobs.fail(await take(jobs, T2, 'f2'), new Error('f2'));
  await jobs.add(T2, 'c1');
  await jobs.cancel(T2, 'c1');
  await jobs.add(T1, 'p1');
  await take(jobs, T2, 'r1');
  const ids = (list: { id: string }[]) => list.map((job) => job.id);
  t.deepEqual(ids(await jobs.getJobs(T1, { outcome: 'succeeded' })), ['s1', 's2']);
  t.deepEqual(ids(await jobs.getJobs(T1, { outcome: 'failed' })), ['f1']);
  t.deepEqual(ids(await jobs.getJobs(undefined, { outcome: 'failed' })), ['f1', 'f2']);
  t.deepEqual(ids(await jobs.getJobs(undefined, { outcome: 'cancelled' })), ['c1']);
  t.deepEqual(ids(await jobs.getJobs(undefined, { outcome: 'succeeded' })), ['s1', 's2']);
  t.deepEqual(ids(await jobs.getJobs(T2)), ['c1', 'f2', 'r1']);
  t.deepEqual(await jobs.getJobs(T2, {}), await jobs.getJobs(T2));
  // Each job read by a filter carries what it left apart.
  t.like((await jobs.getJobs(T1, { outcome: 'succeeded' }))[0], { id: 's1', result: 's1', data: { input: 's1' } });
  t.like((await jobs.getJobs(T2, { outcome: 'failed' }))[0], { id: 'f2', error: { message: 'f2' }, data: { input: 'f2' } });
  t.like((await jobs.getJobs(T1)).find((job) => job.id === 'f1'), { error: { message: 'f1' } });
  const failedMessages = await jobs.foldJobs(T1, (list: string[], job) => [...list, job.error?.message ?? '?'], [], { outcome: 'failed' });
  t.deepEqual(failedMessages, ['f1']);
  for (const bad of [{ outcome: 'done' }, { state: 'finished' }, 'failed']) {
    const error = await t.throwsAsync(jobs.getJobs(T1, bad as never), { instanceOf: JobsError });
    t.is(error?.code, 'invalid_option', JSON.stringify(bad));
  }
});

test('the jobs API inside an application transaction cancels, retries, completes and fails', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'x', { input: 'x' });
  await jobs.database.doTransaction((tx) => jobs.in(tx).cancel(T1, 'x'));
  t.like(await jobs.getJob(T1, 'x'), { outcome: 'cancelled' });
  await jobs.database.doTransaction((tx) => jobs.in(tx).retry(T1, 'x'));
  t.is(await jobs.getJobState(T1, 'x'), 'pending');
  const job = await jobs.accept(T1);
  if (job === undefined) throw new Error('no job');
  await jobs.database.doTransaction((tx) => jobs.in(tx).complete(job, { output: 'x' }));
  t.like(await jobs.getJob(T1, 'x'), { outcome: 'succeeded', data: { input: 'x' }, result: { output: 'x' } });
  const other = await take(jobs, T1, 'y');
  await jobs.database.doTransaction((tx) => jobs.in(tx).fail(other, new Error('y')));
  t.like(await jobs.getJob(T1, 'y'), { outcome: 'failed', error: { message: 'y' }, attempts: 1 });
  t.deepEqual(await anomalies(jobs), []);
});

test('the consistency check reports an outcome row no record claims, and a failed job without its row', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.fail(await take(jobs, T1, 'a'), new Error('a'));
  await jobs.complete(await take(jobs, T1, 'b'), 'b');
  const keys = new JobKeys().forType(T1);
  await database.doTransaction((tx) => {
    tx.clear(keys.outcomeKey('failed', 'a'));
    tx.set(keys.outcomeKey('cancelled', 'b'), Buffer.from('null'));
    tx.set(keys.outcomeKey('succeeded', 'nobody'), Buffer.from('1'));
  });
  const found = (await checkJobsConsistency(database)).anomalies.map((anomaly) => [anomaly.kind, anomaly.id]);
  t.deepEqual(found.sort(), [
    ['orphan_outcome_row', 'b'],
    ['orphan_outcome_row', 'nobody'],
    ['outcome_row_missing', 'a'],
  ]);
});
