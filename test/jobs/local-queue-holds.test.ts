// The local queue under churn: holds so short that jobs expire while
// workers take, and stops that land while an accept is in flight. Every job
// the queue took is handed to exactly one worker or given back: none is left
// running without a worker, none runs twice.

import test from 'ava';
import { LocalQueue } from '@jobtree/core';
import type { Job, Jobs, LocalQueueSource } from '@jobtree/core';
import { RecordingDatabase } from './recording-database.js';
import { openTempJobs, T1, T2, T2_TIMEOUT } from './temp-jobs.js';
import { deferred } from '../deferred.js';

type T1Job = Job<typeof T1>;

async function until(check: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function addJobs(jobs: Jobs, count: number, prefix: string): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  await jobs.addMany(
    T1,
    ids.map((id, i) => ({ id, data: { i }, priority: i % 3 })),
  );
  return ids;
}

test('with holds shorter than the work, every job runs once and none is left running', async (t) => {
  t.timeout(120_000);
  const { jobs } = await openTempJobs(t);
  const ids = await addJobs(jobs, 300, 'h');
  const queue = new LocalQueue(jobs, T1, { size: 40, holdMs: 15 });
  const runs = new Map<string, number>();
  const workers = Array.from({ length: 4 }, async () => {
    for (;;) {
      const job = await queue.take();
      if (job === undefined) return;
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
      await queue.finish(job);
      if ([...runs.keys()].length === ids.length) void queue.stop();
    }
  });
  await Promise.all(workers);
  await queue.stop();
  t.deepEqual([...runs.values()].filter((count) => count !== 1), []);
  t.is(runs.size, ids.length);
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
  t.is(await jobs.pendingCount(T1), 0);
});

for (const delayMs of [0, 1, 3, 8, 20]) {
  test(`a stop ${delayMs} ms into a fill leaves no job running that no worker holds`, async (t) => {
    t.timeout(120_000);
    const { jobs } = await openTempJobs(t);
    const ids = await addJobs(jobs, 400, 's');
    const queue = new LocalQueue(jobs, T1, { size: 200 });
    const handed: T1Job[] = [];
    const takers = Array.from({ length: 3 }, async () => {
      for (;;) {
        const job = await queue.take();
        if (job === undefined) return;
        handed.push(job);
      }
    });
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    await queue.stop();
    await Promise.all(takers);
    t.is(queue.held, 0);
    const active = new Set(await jobs.getActiveJobIds(T1));
    const handedIds = new Set(handed.map((job) => job.id));
    t.is(handedIds.size, handed.length, 'no job handed out twice');
    t.deepEqual([...active].filter((id) => !handedIds.has(id)), [], 'running jobs are the handed-out ones');
    await until(async () => (await jobs.pendingCount(T1)) === ids.length - handed.length, 'the give-backs');
    for (const job of handed) t.is(await jobs.finish(job), 'finished');
    t.deepEqual(await jobs.getActiveJobIds(T1), []);
  });
}

test('a stop while the last batch is being taken gives that batch back, even with takers waiting', async (t) => {
  t.timeout(120_000);
  const { jobs } = await openTempJobs(t);
  const queue = new LocalQueue(jobs, T1, { size: 100 });
  // Takers wait on an empty queue: the accept waits for jobs.
  const waiting = [queue.take(), queue.take()];
  await new Promise((resolve) => setTimeout(resolve, 100));
  // Jobs arrive and the stop lands in the same turn as the wake-up.
  const added = addJobs(jobs, 150, 'w');
  await added;
  const stopped = queue.stop();
  const got = (await Promise.all(waiting)).filter((job): job is T1Job => job !== undefined);
  await stopped;
  const active = await jobs.getActiveJobIds(T1);
  t.deepEqual(active.sort(), got.map((job) => job.id).sort());
  await until(async () => (await jobs.pendingCount(T1)) === 150 - got.length, 'the give-backs');
});

test('a job handed out near the end of its hold gets a whole type timeout before the activity monitor takes it back, as after accept', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  const timeoutMs = T2_TIMEOUT * 1000;
  await jobs.addMany(T2, [{ id: 'first' }, { id: 'second' }]);
  // The default hold: half the type timeout.
  const queue = new LocalQueue(jobs, T2, { size: 2 });
  t.teardown(() => queue.stop());
  const first = (await queue.take()) as Job<typeof T2>;
  await until(async () => queue.held === 1, 'the batch');
  // Any later activity of the type (here the first job's finish) moves the type's stamp on;
  // the activity monitor records it now and checks against it one timeout later.
  await jobs.finish(first);
  const monitorStamp = (await jobs.getActivityVersionstamp(T2)) as string;
  const stampedAt = performance.now();
  // Well inside the hold (half the timeout): the job is still handed out.
  await new Promise((resolve) => setTimeout(resolve, timeoutMs / 4));
  const second = (await queue.take()) as Job<typeof T2>;
  const handedAt = performance.now();
  // accept picks among the front at random: either job may come first.
  t.deepEqual([first.id, second.id].sort(), ['first', 'second']);
  // The monitor's check, one full timeout after it recorded the stamp.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, stampedAt + timeoutMs - performance.now())));
  const silentFor = performance.now() - handedAt;
  t.true(silentFor < timeoutMs, `the worker has had the job ${Math.round(silentFor)} ms, less than the type timeout`);
  t.deepEqual(await jobs.reEnqueueInactive(T2, monitorStamp), [], 'a worker within its timeout keeps its job');
  t.is(await jobs.finish(second), 'finished');
});

test('a job whose accept commits after its hold is over is given back, not handed to a waiting worker', async (t) => {
  t.timeout(60_000);
  let slowCommits = false;
  const { jobs } = await openTempJobs(t, (db) => new RecordingDatabase(db, {
    // A slow commit: the storage is loaded, or the accept's fsync stalls.
    afterBody: () => (slowCommits ? new Promise((resolve) => setTimeout(resolve, 300)) : undefined),
  }));
  await jobs.add(T1, 'late', { n: 1 });
  const holdMs = 50;
  const queue = new LocalQueue(jobs, T1, { size: 5, holdMs });
  t.teardown(() => queue.stop());
  slowCommits = true;
  const askedAt = performance.now();
  const job = await Promise.race([queue.take(), new Promise<'none'>((resolve) => setTimeout(() => resolve('none'), 1_500))]);
  slowCommits = false;
  const waited = performance.now() - askedAt;
  // Handing it out is fine only within its hold, counted from before the accept.
  if (job !== 'none' && job !== undefined) t.true(waited <= holdMs + 20, `handed out ${Math.round(waited)} ms after the accept began, past its ${holdMs} ms hold`);
  else t.pass();
});

test('a stop that lands while the accept transaction is committing gives its whole batch back', async (t) => {
  t.timeout(60_000);
  let hold: Promise<void> | undefined;
  const { promise: bodyDone, resolve: inBody } = deferred();
  const { jobs } = await openTempJobs(t, (db) => new RecordingDatabase(db, {
    afterBody: () => {
      if (hold === undefined) return undefined;
      inBody();
      return hold;
    },
  }));
  await addJobs(jobs, 30, 'c');
  let release!: () => void;
  hold = new Promise<void>((resolve) => {
    release = resolve;
  });
  // An explicit hold: the first transaction the queue makes is the accept (no timeout read).
  let accepted = 0;
  const source: LocalQueueSource = {
    acceptMany: async (type, max, options) => {
      const taken = await jobs.acceptMany(type, max, options);
      accepted += taken.length;
      return taken;
    },
    update: (job, data) => jobs.update(job, data),
    finish: (job, data) => jobs.finish(job, data),
    finishMany: (items) => jobs.finishMany(items),
    resubmit: jobs.resubmit.bind(jobs),
    getTypeTimeout: (type) => jobs.getTypeTimeout(type),
  };
  const queue = new LocalQueue(source, T1, { size: 20, holdMs: 30_000 });
  const taking = queue.take();
  await bodyDone; // the accept has picked its jobs and is about to commit
  hold = undefined;
  const stopped = queue.stop();
  release();
  await stopped;
  const job = await taking;
  t.is(job, undefined, 'a stopped queue hands out nothing');
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
  t.is(await jobs.pendingCount(T1), 30);
  // The accept in flight asks for half the queue (a second may follow it): whatever they took came back.
  t.true(accepted >= 10, `the accept in flight did take a batch, and it came back (${accepted} taken)`);
});
