// A store written before finished jobs recorded their outcome (the fixture
// beside this file, made by that code; see its write-store.ts) opens, reads
// as it was written with every finished job `succeeded`, and its jobs carry
// on under today's calls: accepted, completed, failed, re-enqueued.

import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { checkJobsConsistency, JobsError, openJobs } from '@jobtree/core';
import type { Jobs } from '@jobtree/core';

const FIXTURE = new URL('./fixtures/store-before-outcomes/', import.meta.url);
const T = 'legacy';

/** A copy of the fixture store, opened: the fixture itself is never written. */
async function openFixture(t: ExecutionContext): Promise<Jobs> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-store-before-outcomes-'));
  await cp(new URL('data.mdb', FIXTURE), join(dir, 'data.mdb'));
  const jobs = await openJobs({ path: dir });
  t.teardown(async () => {
    await jobs.close();
    await rm(dir, { recursive: true, force: true });
  });
  return jobs;
}

test('a store written before outcomes opens, and its jobs read as written, its finished jobs as succeeded', async (t) => {
  const jobs = await openFixture(t);
  const all = await jobs.getJobs(T);
  const byId = new Map(all.map((job) => [job.id, job]));
  t.deepEqual(
    all.map((job) => [job.id, job.state, job.outcome, job.attempts]),
    [
      ['finished-given-up', 'finished', 'succeeded', 0],
      ['finished-keeping-data', 'finished', 'succeeded', 0],
      ['finished-with-data', 'finished', 'succeeded', 0],
      ['pending-later', 'pending', undefined, 0],
      ['pending-plain', 'pending', undefined, 0],
      ['running', 'running', undefined, 0],
      ['running-flagged', 'running', undefined, 0],
    ],
  );
  t.deepEqual(byId.get('finished-with-data')?.data, { result: 'done' });
  t.deepEqual(byId.get('finished-keeping-data')?.data, { n: 4 });
  // What the scheduler of that time left as data stays data: no error is made up from it.
  t.like(byId.get('finished-given-up'), { data: { outcome: 'failed', error: 'Error: boom', attempts: 3 }, result: undefined, error: undefined });
  t.like(byId.get('pending-later'), { priority: 3, scheduledTime: 4_000_000_000, continuous: true, data: { n: 2 } });
  t.like(byId.get('running'), { data: { n: 6, progress: 50 }, resubmit: false });
  t.like(byId.get('running-flagged'), { resubmit: true });
  t.deepEqual(
    (await jobs.getJobs(T, { outcome: 'succeeded' })).map((job) => job.id),
    ['finished-given-up', 'finished-keeping-data', 'finished-with-data'],
  );
  t.deepEqual(await jobs.getJobs(T, { outcome: 'failed' }), []);
  t.deepEqual(await jobs.getJobs(T, { outcome: 'cancelled' }), []);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
  t.is((await t.throwsAsync(jobs.retry(T, 'finished-given-up'), { instanceOf: JobsError }))?.code, 'not_retryable');
});

test("the jobs of a store written before outcomes run on under today's calls", async (t) => {
  const jobs = await openFixture(t);
  // Its running jobs' workers are gone: the activity monitor's re-enqueue brings them back.
  const stamp = await jobs.getActivityVersionstamp(T);
  if (stamp === undefined) throw new Error('the fixture has no activity stamp');
  t.deepEqual((await jobs.reEnqueueInactive(T, stamp)).sort(), ['running', 'running-flagged']);
  const taken = new Map((await jobs.acceptMany(T, 10)).map((job) => [job.id, job]));
  t.deepEqual([...taken.keys()].sort(), ['pending-plain', 'running', 'running-flagged']);
  const take = (id: string) => {
    const job = taken.get(id);
    if (job === undefined) throw new Error(`${id} was not taken`);
    return job;
  };
  t.like(take('running'), { attempts: 0, data: { n: 6, progress: 50 } });

  t.is(await jobs.complete(take('pending-plain'), { sum: 1 }), 'finished');
  t.like(await jobs.getJob(T, 'pending-plain'), { outcome: 'succeeded', data: { n: 1 }, result: { sum: 1 } });

  t.is(await jobs.failAttempt(take('running'), { scheduledTime: 1 }), 'pending');
  const again = await jobs.accept(T);
  t.like(again, { id: 'running', attempts: 1, data: { n: 6, progress: 50 } });
  if (again === undefined) return;
  t.is(await jobs.fail(again, new TypeError('no more')), 'finished');
  t.like(await jobs.getJob(T, 'running'), { outcome: 'failed', attempts: 2, error: { name: 'TypeError', message: 'no more' } });

  t.is(await jobs.finish(take('running-flagged')), 'finished');
  t.like(await jobs.getJob(T, 'running-flagged'), { state: 'finished', outcome: 'succeeded', data: { n: 7 } });

  await jobs.retry(T, 'running');
  t.like(await jobs.getJob(T, 'running'), { state: 'pending', attempts: 0, data: { n: 6, progress: 50 }, error: undefined });
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});
