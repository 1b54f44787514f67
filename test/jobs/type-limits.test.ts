// Limits per job type, kept in the store: at most `concurrency` jobs of the
// type running at once across every handle on the store, at most
// `rate.max` starts per window; slots come back with every way a job stops
// running (a finish, a fail, a cancel, a removal, the activity monitor's
// re-enqueue of a dead worker's jobs); lifting the limits lifts them; bad
// limits are a typed error.

import test from 'ava';
import { checkJobsConsistency, JobsError, LocalQueue, openJobs } from '@jobtree/core';
import type { Job, Jobs } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { openTempJobs, T1 } from './temp-jobs.js';

async function addJobs(jobs: Jobs, count: number, prefix = 'j'): Promise<void> {
  await jobs.addMany(T1, Array.from({ length: count }, (_, i) => ({ id: `${prefix}${i}`, data: { i } })));
}

/** Running jobs as the store holds them: one activity row each. */
async function running(jobs: Jobs): Promise<number> {
  return (await jobs.getActiveJobIds(T1)).length;
}

test('concurrency 2 across two local queues on one store never has more than 2 jobs running, and every job finishes', async (t) => {
  t.timeout(60_000);
  const { jobs, database } = await openTempJobs(t);
  // A second handle on the same store stands for a second process.
  const other = await openJobs({ database });
  t.teardown(() => other.close());
  await jobs.setTypeLimits(T1, { concurrency: 2 });
  await addJobs(jobs, 30);
  let most = 0;
  let runs = 0;
  const work = async (queue: LocalQueue<typeof T1>) => {
    for (let job = await queue.take(); job !== undefined; job = await queue.take()) {
      most = Math.max(most, await running(jobs));
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 2));
      await queue.finish(job);
      if (runs === 30) for (const each of queues) void each.stop();
    }
  };
  const queues = [new LocalQueue(jobs, T1, { size: 4 }), new LocalQueue(other, T1, { size: 4 })];
  await Promise.all([work(queues[0]!), work(queues[0]!), work(queues[1]!), work(queues[1]!)]);
  await Promise.all(queues.map((queue) => queue.stop()));
  t.is(runs, 30);
  t.true(most <= 2, `${most} jobs running at once`);
  t.true(most >= 1);
  t.is(await jobs.pendingCount(T1), 0);
  t.is(await running(jobs), 0);
});

test('a take held back by the concurrency waits, and wakes when a running job finishes', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { concurrency: 1 });
  await addJobs(jobs, 2);
  const first = await jobs.accept(T1, { timeout: 0 });
  t.truthy(first);
  t.is(await jobs.accept(T1, { timeout: 0 }), undefined, 'the only slot is taken');
  const waiting = jobs.accept(T1, { timeout: 20_000 });
  await new Promise((resolve) => setTimeout(resolve, 50));
  await jobs.finish(first as Job);
  const second = await waiting;
  t.truthy(second);
  t.not(second?.id, first?.id);
});

test('accepts parked in a handle and served by its write of new jobs get no more than the concurrency', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { concurrency: 1 });
  // Three accepts wait in this handle; one write enqueues three jobs, and may hand them over in its own commit.
  // They wait as long as a loaded machine's add may take; once one has its job, the others are ended.
  const ending = new AbortController();
  const waiting = [0, 1, 2].map(() => jobs.accept(T1, { timeout: 60_000, signal: ending.signal }));
  await new Promise((resolve) => setTimeout(resolve, 50));
  await addJobs(jobs, 3);
  await Promise.race(waiting);
  ending.abort();
  const got = (await Promise.all(waiting)).filter((job) => job !== undefined);
  t.is(got.length, 1);
  t.is(await running(jobs), 1);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('every way a job stops running gives its slot back: fail, cancel, remove, resubmit-and-finish', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { concurrency: 1 });
  await addJobs(jobs, 6);
  const take = async (): Promise<Job> => {
    const job = await jobs.accept(T1, { timeout: 0 });
    if (job === undefined) throw new Error('no job taken: its slot did not come back');
    t.is(await jobs.accept(T1, { timeout: 0 }), undefined, 'one slot only');
    return job;
  };
  await jobs.fail(await take(), new Error('boom'));
  await jobs.cancel(T1, (await take()).id);
  await jobs.remove(T1, (await take()).id);
  const flagged = await take();
  await jobs.resubmit(flagged);
  t.is(await jobs.finish(flagged), 'pending');
  await jobs.finish(await take());
  t.is(await running(jobs), 0);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('the consistency check reports a running counter of a limited type that differs from its running jobs', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { concurrency: 3 });
  await addJobs(jobs, 2);
  await jobs.acceptMany(T1, 2, { timeout: 0 });
  t.deepEqual((await checkJobsConsistency(database)).anomalies, []);
  const counter = new JobKeys().forType(T1).runningCount;
  await database.doTransaction(async (tx) => tx.atomicAdd(counter, 1));
  t.like((await checkJobsConsistency(database)).anomalies, [{ kind: 'running_count_mismatch', type: T1 }]);
});

test("a dead holder's slots come back when the activity monitor re-enqueues its jobs", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { concurrency: 2 });
  await addJobs(jobs, 4);
  // Taken by a worker that then goes away without finishing them.
  const held = await jobs.acceptMany(T1, 4, { timeout: 0 });
  t.is(held.length, 2);
  t.deepEqual(await jobs.acceptMany(T1, 4, { timeout: 0 }), []);
  const since = await jobs.getActivityVersionstamp(T1);
  t.deepEqual((await jobs.reEnqueueInactive(T1, since!)).sort(), held.map((job) => job.id).sort());
  const again = await jobs.acceptMany(T1, 4, { timeout: 0 });
  t.is(again.length, 2, 'both slots are free again');
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('limits set while jobs run count those jobs', async (t) => {
  const { jobs } = await openTempJobs(t);
  await addJobs(jobs, 4);
  const before = await jobs.acceptMany(T1, 2, { timeout: 0 });
  t.is(before.length, 2);
  await jobs.setTypeLimits(T1, { concurrency: 3 });
  t.is((await jobs.acceptMany(T1, 4, { timeout: 0 })).length, 1);
});

test('lifting the limits lifts them', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { concurrency: 1, rate: { max: 1, perMs: 60_000 } });
  await addJobs(jobs, 3);
  t.is((await jobs.acceptMany(T1, 3, { timeout: 0 })).length, 1);
  await jobs.setTypeLimits(T1, null);
  t.is(await jobs.getTypeLimits(T1), undefined);
  t.is((await jobs.acceptMany(T1, 3, { timeout: 0 })).length, 2);
});

test('a rate lets no window start more than its max, and a held-back take waits for the next window', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  const perMs = 400;
  const max = 4;
  await jobs.setTypeLimits(T1, { rate: { max, perMs } });
  await addJobs(jobs, 14);
  /** Starts per window, counted only for takes that began and returned in the same window (so surely counted in it). */
  const perWindow = new Map<number, number>();
  let taken = 0;
  const firstWindow = Math.floor(Date.now() / perMs);
  while (taken < 14) {
    const asked = Math.floor(Date.now() / perMs);
    const batch = await jobs.acceptMany(T1, 10, { timeout: 10_000 });
    const returned = Math.floor(Date.now() / perMs);
    t.true(batch.length <= max, `${batch.length} jobs in one take`);
    if (asked === returned) perWindow.set(asked, (perWindow.get(asked) ?? 0) + batch.length);
    taken += batch.length;
    await Promise.all(batch.map((job) => jobs.finish(job)));
  }
  t.is(taken, 14);
  for (const [window, starts] of perWindow) t.true(starts <= max, `${starts} starts in window ${window}`);
  // 14 starts at 4 per window span at least 4 windows.
  t.true(Math.floor(Date.now() / perMs) - firstWindow >= 3);
});

test('bad limits are a typed error', async (t) => {
  const { jobs } = await openTempJobs(t);
  const bad: unknown[] = [
    undefined,
    5,
    {},
    { concurrency: 0 },
    { concurrency: 1.5 },
    { concurrency: '2' },
    { rate: { max: 10 } },
    { rate: { max: 10, perMs: -1 } },
    { rate: 10 },
    { concurrency: 1, burst: 2 },
  ];
  for (const limits of bad) {
    await t.throwsAsync(jobs.setTypeLimits(T1, limits as never), { instanceOf: JobsError, code: 'invalid_limits' }, JSON.stringify(limits));
  }
  t.is(await jobs.getTypeLimits(T1), undefined);
  await t.throwsAsync(jobs.setTypeLimits('', { concurrency: 1 }), { instanceOf: JobsError, code: 'invalid_job_type' });
});
