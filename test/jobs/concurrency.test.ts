// Many workers on one queue: every job runs exactly once, and the lock check
// inside update/finish makes double completion impossible.

import test from 'ava';
import { JobsError } from '@jobtree/core';
import { RecordingDatabase } from './recording-database.js';
import { openTempJobs, T1 } from './temp-jobs.js';

test('8 concurrent workers over 5,000 jobs finish each job exactly once and leave nothing pending', async (t) => {
  t.timeout(100_000);
  const { jobs } = await openTempJobs(t);
  const total = 5_000;
  for (let start = 0; start < total; start += 250) {
    await Promise.all(
      Array.from({ length: Math.min(250, total - start) }, (_, i) =>
        jobs.add(T1, `job-${start + i}`, { n: start + i }, { priority: (start + i) % 3 }),
      ),
    );
  }
  t.is(await jobs.pendingCount(T1), total);

  const finishedBy = new Map<string, number>();
  const worker = async (): Promise<number> => {
    let done = 0;
    for (let job = await jobs.accept(T1); job; job = await jobs.accept(T1)) {
      await jobs.finish(job, { n: (job.data as { n: number }).n, done: true });
      finishedBy.set(job.id, (finishedBy.get(job.id) ?? 0) + 1);
      done += 1;
    }
    return done;
  };
  const counts = await Promise.all(Array.from({ length: 8 }, worker));
  t.is(
    counts.reduce((a, b) => a + b, 0),
    total,
  );
  t.is(finishedBy.size, total);
  t.true([...finishedBy.values()].every((times) => times === 1), 'no job was finished twice');
  t.is(await jobs.pendingCount(T1), 0);
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
  const states = await jobs.foldJobs(T1, (seen, job) => seen.add(job.state), new Set<string>());
  t.deepEqual([...states], ['finished']);
});

test('a stale worker and the current one racing to finish: only the current one succeeds', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j', { v: 0 });
  const stale = (await jobs.accept(T1))!;
  const since = (await jobs.getActivityVersionstamp(T1))!;
  await jobs.reEnqueueInactive(T1, since);
  const current = (await jobs.accept(T1))!;
  const results = await Promise.allSettled([jobs.finish(stale, { by: 'stale' }), jobs.finish(current, { by: 'current' })]);
  t.is(results[0].status, 'rejected');
  t.is(results[1].status, 'fulfilled');
  t.deepEqual(await jobs.getJobData(T1, 'j'), { by: 'current' });
});

test('two concurrent finishes of one handle: exactly one wins', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j', {});
  const job = (await jobs.accept(T1))!;
  const results = await Promise.allSettled([jobs.finish(job, { n: 1 }), jobs.finish(job, { n: 2 })]);
  t.is(results.filter((result) => result.status === 'fulfilled').length, 1);
  const rejected = results.find((result) => result.status === 'rejected');
  t.is((rejected as PromiseRejectedResult).reason.code, 'halt');
});

test('blocked workers share a burst of jobs without losing or duplicating any', async (t) => {
  t.timeout(30_000);
  const { jobs } = await openTempJobs(t);
  const taken: string[] = [];
  let allTaken: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    allTaken = resolve;
  });
  // Workers wait without a deadline (no timing assumption on a loaded box);
  // close() ends the ones still blocked once the burst is done.
  const workers = Array.from({ length: 4 }, async () => {
    try {
      for (;;) {
        const job = await jobs.accept(T1, { timeout: Number.POSITIVE_INFINITY });
        if (!job) throw new Error('an accept without a deadline returned no job');
        taken.push(job.id);
        await jobs.finish(job);
        if (taken.length === 40) allTaken();
      }
    } catch (error) {
      if (!JobsError.is(error, 'closed')) throw error;
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  await Promise.all(Array.from({ length: 40 }, (_, i) => jobs.add(T1, `burst-${i}`, {})));
  await done;
  await jobs.close();
  await Promise.all(workers);
  t.is(taken.length, 40);
  t.is(new Set(taken).size, 40);
});

test('concurrent accepts in one process share transactions, and each job gets its own activity row', async (t) => {
  let recorder: RecordingDatabase | undefined;
  const { jobs } = await openTempJobs(t, (db) => {
    recorder = new RecordingDatabase(db);
    return recorder;
  });
  await Promise.all(Array.from({ length: 20 }, (_, i) => jobs.add(T1, `j${i}`, { i })));
  const before = recorder!.transactions;
  const accepted = await Promise.all(Array.from({ length: 20 }, () => jobs.accept(T1)));
  t.is(new Set(accepted.map((job) => job?.id)).size, 20, 'twenty different jobs');
  t.true(recorder!.transactions - before < 20, `${recorder!.transactions - before} transactions for 20 accepts`);

  const since = (await jobs.getActivityVersionstamp(T1))!;
  t.is((await jobs.getActiveJobIds(T1)).length, 20);
  t.is((await jobs.getInactiveSince(T1, since)).length, 20, 'rows of one commit count as equally old');
  const lastCommit = (await jobs.getActiveSince(T1, since)).length;
  t.true(lastCommit > 1 && lastCommit <= 20, `the last accept commit made ${lastCommit} rows, all reported`);
  const updated = await Promise.all(accepted.map((job) => jobs.update(job!)));
  t.is((await jobs.getActiveJobIds(T1)).length, 20, 'updates moved the rows, none left behind');
  t.deepEqual(await jobs.getInactiveSince(T1, since), []);
  await Promise.all(updated.map((job) => jobs.finish(job)));
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});
