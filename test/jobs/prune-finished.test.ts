// pruneFinished: the finished jobs of one type and outcome beyond a policy go,
// oldest first, a bounded batch per transaction; what the policy keeps by
// count and by age stays, exactly; no limit keeps everything. The finish
// log it reads has a row per batch of finishes; an entry of a job no longer
// finished so (removed, added again, retried) is skipped, and a store
// written before the log is pruned too.

import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { checkJobsConsistency, JobsError, openJobs } from '@jobtree/core';
import type { Jobs, JobOutcome, PruneLimits, PruneResult } from '@jobtree/core';
import { unpackIds } from '../../packages/core/src/jobs/finish-log.js';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import type { Database } from '@jobtree/core';
import { RecordingDatabase } from './recording-database.js';
import { openTempJobs, T1, T2 } from './temp-jobs.js';

/** Adds `ids` and ends each as `outcome`, one after the other (so in this order of finish time). */
async function endJobs(jobs: Jobs, type: string, ids: readonly string[], outcome: JobOutcome): Promise<void> {
  for (const id of ids) {
    await jobs.add(type, id, { id });
    if (outcome === 'cancelled') {
      await jobs.cancel(type, id);
      continue;
    }
    const job = await jobs.accept(type);
    if (job?.id !== id) throw new Error(`accepted ${job?.id}, not ${id}`);
    if (outcome === 'succeeded') await jobs.complete(job, { done: id });
    else await jobs.fail(job, new Error(`failed ${id}`));
  }
}

/** Prunes until nothing more is found; every call's result. */
async function pruneAll(jobs: Jobs, type: string, outcome: JobOutcome, limits: PruneLimits, options?: { now?: number; batchSize?: number }): Promise<PruneResult[]> {
  const results: PruneResult[] = [];
  for (;;) {
    const result = await jobs.pruneFinished(type, outcome, limits, options);
    results.push(result);
    if (!result.more) return results;
  }
}

async function idsOf(jobs: Jobs, type: string, outcome: JobOutcome): Promise<string[]> {
  return (await jobs.getJobs(type, { outcome })).map((job) => job.id).sort();
}

const ids = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, index) => `${prefix}${String(index).padStart(3, '0')}`);

/** The ids of the finish log rows of `outcome`, row by row, oldest first. */
async function logRows(database: Database, type: string, outcome: JobOutcome): Promise<string[][]> {
  const range = new JobKeys().forType(type).finishLog[outcome].range();
  return database.doTransaction(async (tx) => (await tx.getRange(range.begin, range.end)).map((row) => unpackIds(row.value)));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('a count keeps exactly the newest finished jobs of that outcome, and each outcome has its own', async (t) => {
  const { jobs } = await openTempJobs(t);
  await endJobs(jobs, T1, ids('s', 6), 'succeeded');
  await endJobs(jobs, T1, ids('f', 4), 'failed');
  await endJobs(jobs, T1, ids('c', 3), 'cancelled');
  await jobs.add(T1, 'still-pending');
  const removed = async (outcome: JobOutcome, maxCount: number): Promise<number> =>
    (await pruneAll(jobs, T1, outcome, { maxCount })).reduce((sum, result) => sum + result.removed, 0);
  t.is(await removed('succeeded', 2), 4);
  t.deepEqual(await idsOf(jobs, T1, 'succeeded'), ['s004', 's005']);
  // The other outcomes are untouched by a prune of one.
  t.deepEqual(await idsOf(jobs, T1, 'failed'), ids('f', 4));
  t.is(await removed('failed', 3), 1);
  t.deepEqual(await idsOf(jobs, T1, 'failed'), ['f001', 'f002', 'f003']);
  t.is(await removed('cancelled', 0), 3);
  t.deepEqual(await idsOf(jobs, T1, 'cancelled'), []);
  // Within the count already: nothing goes.
  t.is(await removed('succeeded', 2), 0);
  t.is(await jobs.getJobState(T1, 'still-pending'), 'pending');
  // Their outcome rows went with them.
  t.is(await jobs.getJob(T1, 'f000'), undefined);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('an age keeps exactly the jobs that finished within it at the time given', async (t) => {
  const { jobs } = await openTempJobs(t);
  await endJobs(jobs, T1, ['old-1', 'old-2'], 'succeeded');
  await endJobs(jobs, T1, ['old-f'], 'failed');
  await sleep(5);
  const between = Date.now() / 1000;
  await sleep(5);
  await endJobs(jobs, T1, ['new-1', 'new-2'], 'succeeded');
  await endJobs(jobs, T1, ['new-f'], 'failed');
  // An hour after `between`, with an hour's age: what finished before `between` is older.
  const hourLater = { now: between + 3600 };
  t.like(await jobs.pruneFinished(T1, 'succeeded', { maxAgeSeconds: 3600 }, hourLater), { removed: 2, more: false });
  t.deepEqual(await idsOf(jobs, T1, 'succeeded'), ['new-1', 'new-2']);
  t.like(await jobs.pruneFinished(T1, 'failed', { maxAgeSeconds: 3600 }, hourLater), { removed: 1, more: false });
  t.deepEqual(await idsOf(jobs, T1, 'failed'), ['new-f']);
  // Now, the same age keeps them all.
  t.like(await jobs.pruneFinished(T1, 'succeeded', { maxAgeSeconds: 3600 }), { removed: 0, more: false });
  // Age and count together: whichever removes more.
  t.like(await jobs.pruneFinished(T1, 'succeeded', { maxAgeSeconds: 3600, maxCount: 1 }), { removed: 1 });
  t.deepEqual(await idsOf(jobs, T1, 'succeeded'), ['new-2']);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('no limit, or infinite ones, keep every finished job', async (t) => {
  const { jobs } = await openTempJobs(t);
  await endJobs(jobs, T1, ids('s', 3), 'succeeded');
  for (const limits of [{}, { maxAgeSeconds: Infinity }, { maxCount: Infinity }, { maxAgeSeconds: Infinity, maxCount: Infinity }]) {
    t.deepEqual(await jobs.pruneFinished(T1, 'succeeded', limits, { now: Date.now() / 1000 + 1e9 }), { removed: 0, indexed: 0, more: false });
  }
  t.deepEqual(await idsOf(jobs, T1, 'succeeded'), ids('s', 3));
});

test('a prune removes at most its batch size in each of its transactions', async (t) => {
  let recording: RecordingDatabase | undefined;
  const { jobs } = await openTempJobs(t, (database) => {
    recording = new RecordingDatabase(database);
    return recording;
  });
  const all = ids('j', 230);
  await jobs.addMany(
    T1,
    all.map((id) => ({ id })),
  );
  const taken = await jobs.acceptMany(T1, 230);
  await jobs.completeMany(taken.map((job) => ({ job })));
  const database = recording as RecordingDatabase;
  const before = database.committedWrites.length;
  const results = await pruneAll(jobs, T1, 'succeeded', { maxCount: 0 }, { batchSize: 50 });
  t.deepEqual(
    results.map((result) => result.removed),
    [50, 50, 50, 50, 30],
  );
  const writes = database.committedWrites.slice(before);
  t.is(writes.length, results.length);
  // Per job: its record and its index row cleared, and the count once per row.
  for (const each of writes) t.true(each <= 50 * 3, `${each} writes`);
  t.deepEqual(await jobs.getJobs(T1), []);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('a finished job removed, added again or retried is counted no more', async (t) => {
  const { jobs } = await openTempJobs(t);
  await endJobs(jobs, T1, ['removed', 'added-again', 'kept'], 'succeeded');
  await endJobs(jobs, T1, ['retried'], 'failed');
  await endJobs(jobs, T2, ['cancelled-then-retried'], 'cancelled');
  await jobs.remove(T1, 'removed');
  await jobs.add(T1, 'added-again', { again: true });
  await jobs.retry(T1, 'retried');
  await jobs.retry(T2, 'cancelled-then-retried');
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
  // One succeeded job counted: a count of 1 keeps it.
  t.like(await jobs.pruneFinished(T1, 'succeeded', { maxCount: 1 }), { removed: 0 });
  t.is(await jobs.getJobState(T1, 'kept'), 'finished');
  // Finished again: counted again, at their new time, newer than the one kept.
  for (let run = 0; run < 2; run++) {
    const job = await jobs.accept(T1);
    if (job === undefined) throw new Error('nothing to accept');
    await jobs.complete(job);
  }
  t.like(await jobs.pruneFinished(T1, 'succeeded', { maxCount: 2 }), { removed: 1 });
  t.deepEqual(await idsOf(jobs, T1, 'succeeded'), ['added-again', 'retried']);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('a batch of finishes writes one log row and one count add per outcome, and the counts stay exact', async (t) => {
  let recording: RecordingDatabase | undefined;
  const { jobs } = await openTempJobs(t, (database) => {
    recording = new RecordingDatabase(database);
    return recording;
  });
  const database = recording as RecordingDatabase;
  const all = ids('b', 100);
  await jobs.addMany(
    T1,
    all.map((id) => ({ id })),
  );
  const taken = await jobs.acceptMany(T1, 100);
  t.is(taken.length, 100);
  const before = database.committedWrites.length;
  await jobs.completeMany(taken.slice(0, 60).map((job) => ({ job })));
  const [writes] = database.committedWrites.slice(before);
  // Per job: its record and its activity row cleared; then the log row, the count, the running-jobs count and the activity stamp once.
  t.is(writes, 60 * 2 + 4);
  t.deepEqual(await logRows(database, T1, 'succeeded'), [taken.slice(0, 60).map((job) => job.id)]);
  // Both outcomes in the transactions concurrent calls share.
  await Promise.all([...taken.slice(60, 80).map((job) => jobs.complete(job)), ...taken.slice(80).map((job) => jobs.fail(job, new Error('no')))]);
  t.like(await jobs.pruneFinished(T1, 'succeeded', { maxCount: 79 }), { removed: 1 });
  t.like(await jobs.pruneFinished(T1, 'failed', { maxCount: 19 }), { removed: 1 });
  t.like(await jobs.pruneFinished(T1, 'failed', { maxCount: 19 }), { removed: 0 });
  // A removal uncounts its job: 78 left, one past a count of 77.
  t.true(await jobs.remove(T1, (taken[79] as { id: string }).id));
  t.like(await jobs.pruneFinished(T1, 'succeeded', { maxCount: 77 }), { removed: 1 });
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('a log entry of a job added again since it finished is skipped, not removed, and dropped from the log', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await endJobs(jobs, T1, ['again', 'old'], 'succeeded');
  await jobs.add(T1, 'again', { again: true });
  t.is(await jobs.getJobState(T1, 'again'), 'pending');
  // Beyond any age: only the job still finished goes, the one added again stays pending.
  const later = Date.now() / 1000 + 60;
  const byAge = await pruneAll(jobs, T1, 'succeeded', { maxAgeSeconds: 0 }, { now: later });
  t.is(
    byAge.reduce((sum, result) => sum + result.removed, 0),
    1,
  );
  t.is(await jobs.getJobState(T1, 'old'), undefined);
  t.is(await jobs.getJobState(T1, 'again'), 'pending');
  t.deepEqual(await logRows(database, T1, 'succeeded'), []);
  // Finished again after `middle`: its first entry, older than `middle`'s, is stale, and a count keeps it.
  t.true(await jobs.remove(T1, 'again'));
  await endJobs(jobs, T1, ['twice', 'middle'], 'succeeded');
  // Its finish times differ from the first's (they are stamped to the millisecond).
  await sleep(5);
  await jobs.add(T1, 'twice', { again: true });
  const job = await jobs.accept(T1);
  if (job?.id !== 'twice') throw new Error(`accepted ${job?.id}, not twice`);
  await jobs.complete(job);
  await endJobs(jobs, T1, ['newest'], 'succeeded');
  t.is((await logRows(database, T1, 'succeeded')).flat().length, 4);
  t.like(await jobs.pruneFinished(T1, 'succeeded', { maxCount: 2 }), { removed: 1 });
  t.deepEqual(await idsOf(jobs, T1, 'succeeded'), ['newest', 'twice']);
  t.deepEqual((await logRows(database, T1, 'succeeded')).flat(), ['twice', 'newest']);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test("a pruned job's own retry policy goes with it", async (t) => {
  const { jobs, database } = await openTempJobs(t);
  const keys = new JobKeys().forType(T1);
  const policies = keys.retryPolicies.range();
  const policyRows = (): Promise<number> => database.doTransaction(async (tx) => (await tx.getRange(policies.begin, policies.end)).length);
  await jobs.add(T1, 'own-policy', { n: 1 }, { retry: { attempts: 1 } });
  const job = await jobs.accept(T1);
  if (job === undefined) throw new Error('nothing to accept');
  await jobs.fail(job, new Error('given up'));
  t.is(await policyRows(), 1);
  t.like(await jobs.pruneFinished(T1, 'failed', { maxCount: 0 }), { removed: 1 });
  t.is(await jobs.getJobState(T1, 'own-policy'), undefined);
  t.is(await policyRows(), 0);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test("a pruned job's trace context goes with it", async (t) => {
  const { jobs, database } = await openTempJobs(t);
  const contexts = new JobKeys().forType(T1).traceContexts.range();
  const contextRows = (): Promise<number> => database.doTransaction(async (tx) => (await tx.getRange(contexts.begin, contexts.end)).length);
  await jobs.add(T1, 'traced', { n: 1 }, { traceContext: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } });
  const job = await jobs.accept(T1);
  if (job === undefined) throw new Error('nothing to accept');
  await jobs.complete(job, { done: true });
  t.is(await contextRows(), 1);
  t.like(await jobs.pruneFinished(T1, 'succeeded', { maxCount: 0 }), { removed: 1 });
  t.is(await contextRows(), 0);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('bad limits and options are refused with invalid_option before anything is read', async (t) => {
  const { jobs } = await openTempJobs(t);
  const bad: [unknown, unknown, unknown][] = [
    ['done', {}, undefined],
    ['succeeded', null, undefined],
    ['succeeded', { maxCount: -1 }, undefined],
    ['succeeded', { maxCount: 1.5 }, undefined],
    ['succeeded', { maxAgeSeconds: Number.NaN }, undefined],
    ['succeeded', { maxAge: 3 }, undefined],
    ['succeeded', {}, { batchSize: 0 }],
    ['succeeded', {}, { batchSize: 501 }],
    ['succeeded', {}, { now: 'today' }],
    ['succeeded', {}, { every: 3 }],
  ];
  for (const [outcome, limits, options] of bad) {
    const error = await t.throwsAsync(jobs.pruneFinished(T1, outcome as never, limits as never, options as never), { instanceOf: JobsError });
    t.is(error?.code, 'invalid_option', JSON.stringify([outcome, limits, options]));
  }
});

test('jobs finished before the store kept its finish log are logged first, as finished then, and pruned after', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-prune-legacy-'));
  await cp(new URL('./fixtures/store-before-outcomes/data.mdb', import.meta.url), join(dir, 'data.mdb'));
  const jobs = await openJobs({ path: dir });
  t.teardown(async () => {
    await jobs.close();
    await rm(dir, { recursive: true, force: true });
  });
  const legacy = ['finished-given-up', 'finished-keeping-data', 'finished-with-data'];
  // Their age counts from the logging: a day's age keeps them.
  const first = await pruneAll(jobs, 'legacy', 'succeeded', { maxAgeSeconds: 86_400 }, { batchSize: 2 });
  t.is(
    first.reduce((sum, result) => sum + result.indexed, 0),
    3,
  );
  t.is(
    first.reduce((sum, result) => sum + result.removed, 0),
    0,
  );
  t.deepEqual(await idsOf(jobs, 'legacy', 'succeeded'), legacy);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
  // A job finished now is newer than they are: a count of 1 keeps it alone.
  await jobs.add('legacy', 'today');
  const accepted = await jobs.acceptMany('legacy', 10);
  const today = accepted.find((job) => job.id === 'today');
  if (today === undefined) throw new Error('today was not accepted');
  await jobs.complete(today);
  const second = await pruneAll(jobs, 'legacy', 'succeeded', { maxCount: 1 });
  t.is(
    second.reduce((sum, result) => sum + result.removed, 0),
    3,
  );
  t.is(
    second.reduce((sum, result) => sum + result.indexed, 0),
    0,
  );
  t.deepEqual(await idsOf(jobs, 'legacy', 'succeeded'), ['today']);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});
