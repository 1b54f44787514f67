// The local queue: jobs taken in batches and handed out one at a time,
// never more than `size` held, given back on stop and when held past their
// hold, and an accept that a signal ends early.

import test from 'ava';
import { JobsError, LocalQueue } from '@jobtree/core';
import type { Database, Job, Jobs } from '@jobtree/core';

type T1Job = Job<typeof T1>;
import { RecordingDatabase } from './recording-database.js';
import { openTempJobs, T1 } from './temp-jobs.js';

async function addJobs(jobs: Jobs, count: number, prefix = 'j'): Promise<void> {
  await jobs.addMany(
    T1,
    Array.from({ length: count }, (_, i) => ({ id: `${prefix}${i}`, data: { i }, priority: i % 2 })),
  );
}

/** Resolves once `check` holds, looking every 20 ms (the tests' clock is the store's, not a fixed sleep). */
async function until(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('workers sharing a local queue run every job exactly once, taken in batches', async (t) => {
  t.timeout(60_000);
  let recorder: RecordingDatabase | undefined;
  const { jobs } = await openTempJobs(t, (db: Database) => {
    recorder = new RecordingDatabase(db);
    return recorder;
  });
  await addJobs(jobs, 200);
  const before = recorder!.transactions;
  const queue = new LocalQueue(jobs, T1, { size: 50 });
  const runs = new Map<string, number>();
  const finishes: Promise<unknown>[] = [];
  const worker = async () => {
    for (let job = await queue.take(); job !== undefined; job = await queue.take()) {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      finishes.push(queue.finish(job));
      if (runs.size === 200) void queue.stop();
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  await queue.stop();
  t.deepEqual(await Promise.all(finishes), Array(200).fill('finished'));
  t.is(runs.size, 200);
  t.true([...runs.values()].every((n) => n === 1));
  t.is(await jobs.pendingCount(T1), 0);
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
  // 200 jobs in batches of at most 50: a handful of accepts, and finishes sharing transactions.
  const transactions = recorder!.transactions - before;
  t.true(transactions < 100, `${transactions} transactions for 200 jobs`);
});

test('a local queue never holds more than its size of jobs no worker has started', async (t) => {
  const { jobs } = await openTempJobs(t);
  await addJobs(jobs, 100);
  const queue = new LocalQueue(jobs, T1, { size: 10 });
  const first = await queue.take();
  t.truthy(first);
  // Let the queue fill what it wants to.
  await until(async () => queue.held === 9, 'the first batch');
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.is(queue.held, 9);
  t.is((await jobs.getActiveJobIds(T1)).length, 10, 'the started job and the nine held');
  t.is(await jobs.pendingCount(T1), 90);
  for (let i = 0; i < 6; i++) await queue.take();
  // Down to 3 held: an accept asks for at most half the queue, so that a
  // second can be taken while the first is written; 3 + 5 leave too little
  // room for another.
  await until(async () => queue.held === 8, 'the refill');
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.is(queue.held, 8);
  t.is((await jobs.getActiveJobIds(T1)).length, 15);
  await queue.stop();
});

test('stop gives back every held job with its data and priority, and ends later takes', async (t) => {
  const { jobs } = await openTempJobs(t);
  await addJobs(jobs, 20);
  const queue = new LocalQueue(jobs, T1, { size: 10 });
  const started = (await queue.take()) as T1Job;
  await until(async () => queue.held === 9, 'the first batch');
  await queue.stop();
  t.is(queue.held, 0);
  t.is(await queue.take(), undefined);
  t.is(await jobs.pendingCount(T1), 19, 'everything but the started job is pending again');
  t.deepEqual(await jobs.getActiveJobIds(T1), [started.id]);
  for (const info of await jobs.getJobs(T1)) {
    if (info.id === started.id) continue;
    const i = Number(info.id.slice(1));
    t.like(info, { state: 'pending', data: { i }, priority: i % 2, resubmit: false });
  }
  // The started job is still its worker's to finish.
  t.is(await jobs.finish(started), 'finished');
});

test('stop ends a take waiting on an empty queue, and takes no job added afterwards', async (t) => {
  t.timeout(30_000);
  const { jobs } = await openTempJobs(t);
  const queue = new LocalQueue(jobs, T1);
  const waiting = queue.take();
  await new Promise((resolve) => setTimeout(resolve, 100));
  await queue.stop();
  t.is(await waiting, undefined);
  await jobs.add(T1, 'late');
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.is(await jobs.getJobState(T1, 'late'), 'pending');
});

test('a take waiting on an empty queue gets a job added later', async (t) => {
  const { jobs } = await openTempJobs(t);
  const queue = new LocalQueue(jobs, T1);
  t.teardown(() => queue.stop());
  const waiting = queue.take();
  await new Promise((resolve) => setTimeout(resolve, 50));
  await jobs.add(T1, 'new', { n: 1 });
  const job = await waiting;
  t.like(job, { id: 'new', data: { n: 1 } });
  t.is(await queue.finish(job as T1Job), 'finished');
});

test('a job held past holdMs is given back, never handed out', async (t) => {
  t.timeout(30_000);
  const { jobs } = await openTempJobs(t);
  await addJobs(jobs, 5);
  const queue = new LocalQueue(jobs, T1, { size: 5, holdMs: 300 });
  t.teardown(() => queue.stop());
  const first = (await queue.take()) as T1Job;
  await until(async () => queue.held === 4, 'the first batch');
  const heldIds = (await jobs.getActiveJobIds(T1)).filter((id) => id !== first.id);
  // Nobody takes: the timer gives the four back once their hold is over.
  await until(async () => (await jobs.pendingCount(T1)) === 4, 'the give-back');
  t.is(queue.held, 0);
  t.deepEqual(await jobs.getActiveJobIds(T1), [first.id]);
  // Taken again, each under a new lock: the old handles are stale.
  const again = (await queue.take()) as T1Job;
  t.true(heldIds.includes(again.id));
  t.is(await queue.finish(again), 'finished');
});

test('a batch that arrives after a long wait keeps most of its hold', async (t) => {
  t.timeout(30_000);
  const { jobs } = await openTempJobs(t);
  const queue = new LocalQueue(jobs, T1, { size: 5, holdMs: 2_000 });
  t.teardown(() => queue.stop());
  const waiting = queue.take();
  // Longer than the whole hold: were expiry counted from the start of the wait, the batch would be given back at once.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  await addJobs(jobs, 5);
  t.truthy(await waiting);
  await until(async () => queue.held === 4, 'the rest of the batch');
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.is(queue.held, 4);
  t.is(await jobs.pendingCount(T1), 0);
});

test('the default hold is half the type timeout', async (t) => {
  t.timeout(30_000);
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeTimeout(T1, 0.4);
  await addJobs(jobs, 3);
  const queue = new LocalQueue(jobs, T1, { size: 3 });
  t.teardown(() => queue.stop());
  const first = (await queue.take()) as T1Job;
  const startedAt = performance.now();
  await until(async () => (await jobs.pendingCount(T1)) === 2, 'the give-back');
  // Given back after ~200 ms, before the 400 ms timeout would make them inactive.
  t.true(performance.now() - startedAt >= 150);
  t.deepEqual(await jobs.getActiveJobIds(T1), [first.id]);
});

test('a local queue rejects bad options with invalid_option', (t) => {
  const jobs = {} as Jobs;
  for (const options of [{ size: 0 }, { size: 1_001 }, { size: 1.5 }, { holdMs: 0 }, { holdMs: Number.NaN }, { noSchedule: 'yes' }]) {
    const error = t.throws(() => new LocalQueue(jobs, T1, options as never), { instanceOf: JobsError });
    t.is(error?.code, 'invalid_option');
  }
});

test('a take rejects with the accept error once the handle is closed', async (t) => {
  const { jobs } = await openTempJobs(t);
  const queue = new LocalQueue(jobs, T1);
  await jobs.close();
  const error = await t.throwsAsync(queue.take(), { instanceOf: JobsError });
  t.is(error?.code, 'closed');
  await queue.stop();
});

test('an aborted signal ends a waiting accept with no job', async (t) => {
  const { jobs } = await openTempJobs(t);
  const controller = new AbortController();
  const waiting = jobs.acceptMany(T1, 10, { timeout: 60_000, signal: controller.signal });
  const single = jobs.accept(T1, { timeout: 60_000, signal: controller.signal });
  await new Promise((resolve) => setTimeout(resolve, 50));
  controller.abort();
  t.deepEqual(await waiting, []);
  t.is(await single, undefined);
  await jobs.add(T1, 'after');
  t.deepEqual(await jobs.acceptMany(T1, 10, { signal: controller.signal }), [], 'an aborted signal takes nothing');
  t.is(await jobs.getJobState(T1, 'after'), 'pending');
});

test('an accept signal that is not an AbortSignal is invalid_option', async (t) => {
  const { jobs } = await openTempJobs(t);
  const error = await t.throwsAsync(jobs.accept(T1, { signal: {} as AbortSignal }), { instanceOf: JobsError });
  t.is(error?.code, 'invalid_option');
});
