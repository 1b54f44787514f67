// Pending-queue order: highest priority first, then oldest scheduled time;
// random picks only among jobs of equal rank.

import test from 'ava';
import { openTempJobs, T1 } from './temp-jobs.js';

test('accept takes the highest priority first, then the oldest scheduled time', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'low-old', {}, { priority: 0, scheduledTime: 10 });
  await jobs.add(T1, 'high-new', {}, { priority: 9, scheduledTime: 30 });
  await jobs.add(T1, 'high-old', {}, { priority: 9, scheduledTime: 20 });
  await jobs.add(T1, 'mid', {}, { priority: 5, scheduledTime: 5 });
  await jobs.add(T1, 'huge', {}, { priority: Number.MAX_SAFE_INTEGER, scheduledTime: 40 });
  const order: string[] = [];
  for (let job = await jobs.accept(T1); job; job = await jobs.accept(T1)) order.push(job.id);
  t.deepEqual(order, ['huge', 'high-old', 'high-new', 'mid', 'low-old']);
});

test('fractional and whole scheduled times order together', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'b', {}, { scheduledTime: 2 });
  await jobs.add(T1, 'a', {}, { scheduledTime: 1.5 });
  await jobs.add(T1, 'c', {}, { scheduledTime: 2.25 });
  const order: string[] = [];
  for (let job = await jobs.accept(T1); job; job = await jobs.accept(T1)) order.push(job.id);
  t.deepEqual(order, ['a', 'b', 'c']);
});

test('a high priority job scheduled in the future does not block due jobs of lower priority', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'urgent-later', {}, { priority: 7, scheduledTime: 2000 });
  await jobs.add(T1, 'normal-now', {}, { priority: 1, scheduledTime: 1000 });
  t.is((await jobs.accept(T1, { maxSchedTime: 1500 }))?.id, 'normal-now');
  t.is(await jobs.accept(T1, { maxSchedTime: 1500 }), undefined);
  t.is((await jobs.accept(T1, { maxSchedTime: 2000 }))?.id, 'urgent-later');
});

test('changing the priority of a pending job moves it in the queue', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'a', {}, { scheduledTime: 1 });
  await jobs.add(T1, 'b', {}, { scheduledTime: 2 });
  await jobs.add(T1, 'b', undefined, { priority: 3 });
  t.like(await jobs.getJob(T1, 'b'), { priority: 3, scheduledTime: 2 });
  t.is(await jobs.pendingCount(T1), 2);
  t.is((await jobs.accept(T1))?.id, 'b');
  t.is((await jobs.accept(T1))?.id, 'a');
});

test('jobs of equal rank are all accepted, in some order', async (t) => {
  const { jobs } = await openTempJobs(t);
  const ids = Array.from({ length: 40 }, (_, index) => `same-${index}`);
  for (const id of ids) await jobs.add(T1, id, {}, { scheduledTime: 100, priority: 2 });
  await jobs.add(T1, 'worse', {}, { scheduledTime: 100, priority: 1 });
  const taken: string[] = [];
  for (let i = 0; i < ids.length; i++) taken.push((await jobs.accept(T1))!.id);
  t.deepEqual([...taken].sort(), [...ids].sort());
  t.is((await jobs.accept(T1))?.id, 'worse');
});

test('workers pick at random among jobs of equal rank, not always the first key', async (t) => {
  const { jobs } = await openTempJobs(t);
  const ids = Array.from({ length: 20 }, (_, index) => `same-${String(index).padStart(2, '0')}`);
  for (const id of ids) await jobs.add(T1, id, {}, { scheduledTime: 100 });
  const taken: string[] = [];
  for (let i = 0; i < 5; i++) taken.push((await jobs.accept(T1))!.id);
  // Taking the front key every time would give same-00..same-04; a random
  // pick gives exactly that with probability 1/(20*19*18*17*16).
  t.notDeepEqual(taken, ids.slice(0, 5));
});

test('pendingCount honours maxSchedTime and limit', async (t) => {
  const { jobs } = await openTempJobs(t);
  for (let i = 0; i < 30; i++) await jobs.add(T1, `j${i}`, {}, { scheduledTime: i, priority: i % 3 });
  t.is(await jobs.pendingCount(T1), 30);
  t.is(await jobs.pendingCount(T1, { maxSchedTime: 9 }), 10);
  t.is(await jobs.pendingCount(T1, { limit: 7 }), 7);
  t.is(await jobs.pendingCount(T1, { maxSchedTime: 9, limit: 4 }), 4);
});
