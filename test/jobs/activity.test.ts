// The activity contract the activity monitor and the notifiers rely on:
// every state change re-stamps `watches_activity`, and a running job has
// exactly one activity row (none once it is pending, finished or removed).

import test from 'ava';
import { ZERO_VERSIONSTAMP } from '@jobtree/core';
import type { Job, Jobs, Versionstamp } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

test('every state change re-stamps watches_activity and keeps one activity row per running job', async (t) => {
  const { jobs } = await openTempJobs(t);
  let last: Versionstamp | undefined;
  const step = async (name: string, change: () => Promise<unknown>, running: string[]) => {
    await change();
    const stamp = await jobs.getActivityVersionstamp(T1);
    t.truthy(stamp, `${name}: stamped`);
    if (last !== undefined) t.true(stamp! > last, `${name}: the stamp moved on`);
    last = stamp;
    t.deepEqual(await jobs.getActiveJobIds(T1), running, `${name}: activity rows`);
  };
  const accept = async (): Promise<Job> => {
    const job = await jobs.accept(T1);
    if (!job) throw new Error('expected a job');
    return job;
  };

  let job: Job | undefined;
  await step('add (new -> pending)', () => jobs.add(T1, 'j', { v: 1 }), []);
  await step('accept (pending -> running)', async () => (job = await accept()), ['j']);
  await step('update (running, row moved)', async () => (job = await jobs.update(job!)), ['j']);
  await step('resubmit flag, then finish (running -> pending)', async () => {
    await jobs.resubmit(job!);
    t.is(await jobs.finish(job!), 'pending');
  }, []);
  await step('accept again', async () => (job = await accept()), ['j']);
  await step('reEnqueueInactive (running -> pending)', () => reEnqueueAll(jobs), []);
  await step('accept after re-enqueue', async () => (job = await accept()), ['j']);
  await step('finish (running -> finished)', () => jobs.finish(job!), []);
  await step('add of a finished job (finished -> pending)', () => jobs.add(T1, 'j', { v: 2 }), []);
  await step('remove (pending -> gone)', () => jobs.remove(T1, 'j'), []);
});

test('an unchanged add or a flag on a running job writes no stamp: they are not state changes', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j', { v: 1 }, { scheduledTime: 10 });
  const pending = await jobs.getActivityVersionstamp(T1);
  await jobs.add(T1, 'j', { v: 1 }, { scheduledTime: 10 });
  t.is(await jobs.getActivityVersionstamp(T1), pending);
  const job = (await jobs.accept(T1))!;
  const running = await jobs.getActivityVersionstamp(T1);
  await jobs.resubmit(job);
  t.is(await jobs.getActivityVersionstamp(T1), running);
});

test('getActiveSince and getInactiveSince split the running jobs at a commit, which counts on both sides', async (t) => {
  const { jobs } = await openTempJobs(t);
  const stamps: Versionstamp[] = [];
  for (const id of ['a', 'b', 'c']) {
    await jobs.add(T1, id, {});
    stamps.push(await acceptAndStamp(jobs, id));
  }
  const [sa, sb, sc] = stamps as [Versionstamp, Versionstamp, Versionstamp];
  t.deepEqual(await jobs.getActiveSince(T1, sb), ['b', 'c']);
  t.deepEqual(await jobs.getInactiveSince(T1, sb), ['a', 'b']);
  t.deepEqual(await jobs.getActiveSince(T1, sc), ['c']);
  t.deepEqual(await jobs.getInactiveSince(T1, sa), ['a']);
  t.deepEqual(await jobs.getInactiveSince(T1, ZERO_VERSIONSTAMP), []);
  t.deepEqual(await jobs.getActiveSince(T1, ZERO_VERSIONSTAMP), ['a', 'b', 'c']);
  t.deepEqual(await jobs.reEnqueueInactive(T1, sa), ['a'], 're-enqueues exactly the inactive side');
  t.deepEqual(await jobs.getActiveJobIds(T1), ['b', 'c']);
});

async function acceptAndStamp(jobs: Jobs, id: string): Promise<Versionstamp> {
  const job = await jobs.accept(T1);
  if (job?.id !== id) throw new Error(`expected to accept ${id}, got ${job?.id}`);
  const stamp = await jobs.getActivityVersionstamp(T1);
  if (stamp === undefined) throw new Error('no activity stamp');
  return stamp;
}

async function reEnqueueAll(jobs: Jobs): Promise<void> {
  const since = await jobs.getActivityVersionstamp(T1);
  const ids = await jobs.reEnqueueInactive(T1, since!);
  if (ids.length !== 1) throw new Error(`re-enqueued ${ids.length} jobs`);
}
