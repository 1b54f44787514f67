// checkJobsConsistency: a clean store reports no anomaly whatever its jobs'
// states, and each broken invariant of the keyspace, written by hand, is
// reported under its own kind.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { type Database, checkJobsConsistency, type Jobs, openDatabase, openJobs } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { decodeJobRecord, encodeJobRecord } from '../../packages/core/src/jobs/job-record.js';

const T = 'checked';

async function store(t: ExecutionContext): Promise<{ database: Database; jobs: Jobs }> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-consistency-'));
  const database = await openDatabase({ path: dir });
  const jobs = await openJobs({ database });
  t.teardown(async () => {
    await jobs.close();
    await database.close();
    await rm(dir, { recursive: true, force: true });
  });
  await jobs.setTypeTimeout(T, 30);
  return { database, jobs };
}

/** One job in each state: p pending, r running, f finished. */
async function threeJobs(jobs: Jobs): Promise<void> {
  await jobs.add(T, 'f', { n: 1 });
  const first = await jobs.accept(T);
  await jobs.finish(first!, { done: true });
  await jobs.add(T, 'r', { n: 2 }, { priority: 2 });
  await jobs.accept(T);
  await jobs.add(T, 'p', { n: 3 }, { priority: 1, scheduledTime: 1_000 });
}

test('a store written only through the jobs API is consistent, in every state (a flow parent waiting included)', async (t) => {
  const { database, jobs } = await store(t);
  await threeJobs(jobs);
  // A flow's parent waits for its child.
  await jobs.addFlow({ type: T, id: 'parent', children: [{ type: T, id: 'child' }] });
  const report = await checkJobsConsistency(database);
  t.deepEqual(report.anomalies, []);
  t.is(report.jobs, 5);
  t.deepEqual(report.states, { waiting: 1, pending: 2, running: 1, finished: 1 });
  t.deepEqual(
    report.running.map(({ type, id }) => ({ type, id })),
    [{ type: T, id: 'r' }],
  );
  t.regex(report.running[0]!.lock, /^[0-9a-f]{32}$/);
});

test('a pending job without its pending key, and a pending key without its job, are reported', async (t) => {
  const { database, jobs } = await store(t);
  await threeJobs(jobs);
  const keys = new JobKeys().forType(T);
  await database.doTransaction((tx) => {
    tx.clear(keys.pendingKey(1, 1_000, 'p'));
    tx.set(keys.pendingKey(0, 5, 'ghost'), Buffer.alloc(0));
  });
  const kinds = (await checkJobsConsistency(database)).anomalies.map(({ kind, id }) => `${kind} ${id}`).sort();
  t.deepEqual(kinds, ['orphan_pending_key ghost', 'pending_not_indexed p']);
});

test('a pending key whose rank is not its job\'s, and a second pending key, are reported', async (t) => {
  const { database, jobs } = await store(t);
  await threeJobs(jobs);
  const keys = new JobKeys().forType(T);
  await database.doTransaction((tx) => {
    tx.set(keys.pendingKey(4, 1_000, 'p'), Buffer.alloc(0));
  });
  const kinds = (await checkJobsConsistency(database)).anomalies.map(({ kind, id }) => `${kind} ${id}`).sort();
  t.deepEqual(kinds, ['pending_index_mismatch p', 'pending_indexed_twice p']);
});

test('a running job whose activity row is gone is reported: nothing would re-enqueue it', async (t) => {
  const { database, jobs } = await store(t);
  await threeJobs(jobs);
  const keys = new JobKeys().forType(T);
  await database.doTransaction(async (tx) => {
    const record = decodeJobRecord((await tx.get(keys.job('r')))!);
    tx.clear(keys.activityKey(record.seq!));
  });
  const anomalies = (await checkJobsConsistency(database)).anomalies;
  t.deepEqual(
    anomalies.map(({ kind, id }) => `${kind} ${id}`),
    ['running_without_activity r'],
  );
});

test('an activity row of a finished job, and one at a stale sequence, are reported', async (t) => {
  const { database, jobs } = await store(t);
  await threeJobs(jobs);
  const keys = new JobKeys().forType(T);
  await database.doTransaction(async (tx) => {
    const record = decodeJobRecord((await tx.get(keys.job('r')))!);
    const stale = Buffer.from(record.seq!);
    stale[11] = (stale[11]! + 1) % 256;
    tx.set(keys.activityKey(stale), Buffer.from('r'));
    tx.set(keys.activityKey(Buffer.alloc(12, 1)), Buffer.from('f'));
  });
  const kinds = (await checkJobsConsistency(database)).anomalies.map(({ kind, id }) => `${kind} ${id}`).sort();
  t.deepEqual(kinds, ['orphan_activity_row f', 'orphan_activity_row r', 'running_activity_twice r']);
});

test('a data row that does not decode is reported, and the rest is still checked', async (t) => {
  const { database, jobs } = await store(t);
  await threeJobs(jobs);
  const keys = new JobKeys().forType(T);
  await database.doTransaction((tx) => {
    tx.set(keys.job('bad'), Buffer.from([9, 9, 9]));
    const pending = encodeJobRecord({ state: 'pending', seq: undefined, lock: undefined, resubmit: false, continuous: false, priority: 0, scheduledTime: 7, data: Buffer.from('null') });
    tx.set(keys.job('unindexed'), pending);
  });
  const kinds = (await checkJobsConsistency(database)).anomalies.map(({ kind, id }) => `${kind} ${id}`).sort();
  t.deepEqual(kinds, ['corrupt_row bad', 'pending_not_indexed unindexed']);
});
