// A job's trace context (`add(..., { traceContext })`) is an opaque map of
// strings stored with the job in a row of its own and handed out with it on
// every accept: through failed attempts and a retry, so that every run of
// the job joins the trace of the add that made it. A job added without one
// has no row at all; removing the job takes the row away, and a finished
// job added again without one drops it.

import test from 'ava';
import { JobsError } from '@jobtree/core';
import type { Database, Job, Jobs, TraceContext } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { T1, openTempJobs } from './temp-jobs.js';

const context: TraceContext = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'vendor=1' };
const keys = new JobKeys().forType(T1);

async function acceptOne(jobs: Jobs): Promise<Job> {
  const job = await jobs.accept(T1);
  if (job === undefined) throw new Error('no job to accept');
  return job;
}

/** The ids of the type's trace context rows, as the store holds them. */
async function traceRows(database: Database): Promise<number> {
  const { begin, end } = keys.traceContexts.range();
  return (await database.doTransaction((tx) => tx.getRange(begin, end))).length;
}

test("a job's trace context comes with it on every accept, through a failed attempt and a retry", async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.add(T1, 'a', { input: 1 }, { traceContext: context });
  t.is(await traceRows(database), 1);
  t.deepEqual((await jobs.getJob(T1, 'a'))?.traceContext, context);
  const first = await acceptOne(jobs);
  t.deepEqual(first.traceContext, context);
  t.deepEqual(first.data, { input: 1 });
  await jobs.failAttempt(first, { scheduledTime: 1 });
  const second = await acceptOne(jobs);
  t.like(second, { id: 'a', attempts: 1, traceContext: context });
  await jobs.fail(second, { message: 'no' });
  await jobs.retry(T1, 'a');
  t.like(await acceptOne(jobs), { id: 'a', attempts: 0, traceContext: context });
});

test('a job added without a trace context writes no row, and its handle has none', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.add(T1, 'plain', { input: 2 });
  await jobs.addMany(T1, [{ id: 'm' }, { id: 'n', traceContext: {} }]);
  t.is(await traceRows(database), 0);
  for (let i = 0; i < 3; i++) t.false('traceContext' in (await acceptOne(jobs)));
  t.false('traceContext' in ((await jobs.getJob(T1, 'plain')) ?? {}));
});

test('removing a job takes its trace context away; a finished job added again without one drops it', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.addMany(T1, [
    { id: 'a', traceContext: context },
    { id: 'b', traceContext: context },
  ]);
  t.is(await traceRows(database), 2);
  t.true(await jobs.remove(T1, 'a'));
  t.is(await traceRows(database), 1);
  const running = await acceptOne(jobs);
  t.is(running.id, 'b');
  // Added again while it runs, without one: its next run keeps it.
  await jobs.add(T1, 'b');
  await jobs.finish(running);
  const again = await acceptOne(jobs);
  t.deepEqual(again.traceContext, context);
  await jobs.finish(again);
  // Finished, then added again without one: the next run is another add's.
  await jobs.add(T1, 'b');
  t.is(await traceRows(database), 0);
  t.false('traceContext' in (await acceptOne(jobs)));
  const other = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
  await jobs.add(T1, 'c', null, { traceContext: context });
  await jobs.add(T1, 'c', null, { traceContext: other });
  t.deepEqual((await jobs.getJob(T1, 'c'))?.traceContext, other);
});

test('a trace context that is not a small map of strings is invalid_option', async (t) => {
  const { jobs } = await openTempJobs(t);
  for (const traceContext of [[], 'x', { traceparent: 1 }, Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])), { big: 'x'.repeat(5000) }]) {
    const error = await t.throwsAsync(jobs.add(T1, 'a', null, { traceContext: traceContext as never }));
    t.true(JobsError.is(error, 'invalid_option'), String(error?.message));
  }
  t.is(await jobs.getJob(T1, 'a'), undefined);
});
