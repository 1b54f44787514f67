// Bulk operations adapt their batch size: they grow on success and shrink on
// transaction_too_old (1007) and transaction_too_large (2101), and still
// finish. The errors are injected by a Database decorator that fails any
// attempt doing more than a fixed amount of work, as a real cluster would.

import test from 'ava';
import { FdbError, FdbErrorCode, JobsError } from '@jobtree/core';
import type { Database, Jobs } from '@jobtree/core';
import { AdaptiveBatchSize } from '../../packages/core/src/jobs/batch-size.js';
import { RecordingDatabase } from './recording-database.js';
import type { AttemptStats } from './recording-database.js';
import { openTempJobs, T1, T2 } from './temp-jobs.js';

test('AdaptiveBatchSize grows on success, halves on failure, and stays within its bounds', (t) => {
  const batch = new AdaptiveBatchSize({ initial: 10, min: 2, max: 40 });
  t.is(batch.size, 10);
  batch.grow();
  t.is(batch.size, 15);
  batch.grow();
  batch.grow();
  batch.grow();
  t.is(batch.size, 40, 'capped at max');
  t.true(batch.shrink());
  t.is(batch.size, 20);
  while (batch.shrink());
  t.is(batch.size, 2, 'floored at min');
  t.false(batch.shrink(), 'reports that it cannot shrink further');
  batch.reset(1_000);
  t.is(batch.size, 40);
  t.true(JobsError.is(t.throws(() => new AdaptiveBatchSize({ shrink: 1 })), 'invalid_option'));
});

/** A recorder that, once armed, fails attempts over a budget of writes (2101) or reads (1007). */
function budgeted(limits: { writes?: number; reads?: number }) {
  const state = { armed: false, recorder: undefined as RecordingDatabase | undefined };
  const inject = (stats: AttemptStats) => {
    if (!state.armed) return undefined;
    if (limits.writes !== undefined && stats.writes > limits.writes) {
      return new FdbError(FdbErrorCode.transaction_too_large, 'injected: too many writes');
    }
    if (limits.reads !== undefined && stats.reads > limits.reads) {
      return new FdbError(FdbErrorCode.transaction_too_old, 'injected: too many reads');
    }
    return undefined;
  };
  return {
    state,
    wrap: (db: Database) => {
      state.recorder = new RecordingDatabase(db, { inject });
      return state.recorder;
    },
  };
}

async function runningJobs(jobs: Jobs, count: number) {
  await Promise.all(Array.from({ length: count }, (_, i) => jobs.add(T1, `j${i}`, { i })));
  for (let i = 0; i < count; i++) await jobs.accept(T1);
}

test('reEnqueueInactive shrinks its batches on transaction_too_large (2101) and still re-enqueues everything', async (t) => {
  const budget = budgeted({ writes: 50 });
  const { jobs } = await openTempJobs(t, budget.wrap);
  await runningJobs(jobs, 200);
  const since = (await jobs.getActivityVersionstamp(T1))!;
  const recorder = budget.state.recorder!;
  const firstBulk = recorder.committedWrites.length;
  budget.state.armed = true;

  const ids = await jobs.reEnqueueInactive(T1, since, { batchSize: 100 });
  budget.state.armed = false;
  t.is(ids.length, 200);
  t.is(new Set(ids).size, 200);
  t.true((recorder.injected.get(FdbErrorCode.transaction_too_large) ?? 0) >= 1, 'the first, too large batch failed');
  const bulkWrites = recorder.committedWrites.slice(firstBulk);
  t.true(bulkWrites.every((writes) => writes <= 50), `committed batches wrote ${bulkWrites.join(',')}`);
  t.true(bulkWrites.length >= 4, 'the work was split into several smaller batches');
  t.is(await jobs.pendingCount(T1), 200);
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});

test('reEnqueueInactive shrinks its batches on transaction_too_old (1007) and still finishes', async (t) => {
  const budget = budgeted({ reads: 30 });
  const { jobs } = await openTempJobs(t, budget.wrap);
  await runningJobs(jobs, 120);
  const since = (await jobs.getActivityVersionstamp(T1))!;
  budget.state.armed = true;
  const ids = await jobs.reEnqueueInactive(T1, since, { batchSize: 100 });
  budget.state.armed = false;
  t.is(ids.length, 120);
  t.true((budget.state.recorder!.injected.get(FdbErrorCode.transaction_too_old) ?? 0) >= 1);
  t.is(await jobs.pendingCount(T1), 120);
});

test('getJobs, foldJobs and pendingCount page through big types under 1007 without losing rows', async (t) => {
  const budget = budgeted({ reads: 100 });
  const { jobs } = await openTempJobs(t, budget.wrap);
  await Promise.all(Array.from({ length: 700 }, (_, i) => jobs.add(T1, `j${String(i).padStart(4, '0')}`, { i })));
  budget.state.armed = true;
  const all = await jobs.getJobs(T1);
  t.is(all.length, 700);
  t.is(new Set(all.map((job) => job.id)).size, 700);
  t.is(await jobs.foldJobs(T1, (sum, job) => sum + (job.data as { i: number }).i, 0), (699 * 700) / 2);
  t.is(await jobs.pendingCount(T1), 700);
  budget.state.armed = false;
  t.true((budget.state.recorder!.injected.get(FdbErrorCode.transaction_too_old) ?? 0) >= 2);
});

test('a bulk batch that conflicts runs again at the same size and loses nothing', async (t) => {
  const state = { conflicts: 0, left: 0 };
  const { jobs } = await openTempJobs(t, (db) =>
    new RecordingDatabase(db, {
      inject: (stats) => {
        if (state.left === 0 || stats.writes === 0) return undefined;
        state.left -= 1;
        state.conflicts += 1;
        return new FdbError(FdbErrorCode.not_committed, 'injected conflict');
      },
    }),
  );
  await runningJobs(jobs, 30);
  const since = (await jobs.getActivityVersionstamp(T1))!;
  state.left = 3;
  const ids = await jobs.reEnqueueInactive(T1, since, { batchSize: 100 });
  t.is(state.conflicts, 3);
  t.is(new Set(ids).size, 30);
  t.is(await jobs.pendingCount(T1), 30);
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});

test('a batch that fails even at the minimum size surfaces the storage error', async (t) => {
  const budget = budgeted({ writes: 1 });
  const { jobs } = await openTempJobs(t, budget.wrap);
  await runningJobs(jobs, 3);
  const since = (await jobs.getActivityVersionstamp(T1))!;
  budget.state.armed = true;
  const error = await t.throwsAsync(jobs.reEnqueueInactive(T1, since, { batchSize: 4 }));
  budget.state.armed = false;
  t.true(FdbError.is(error, 'transaction_too_large'));
  t.deepEqual((await jobs.getActiveJobIds(T1)).length, 3, 'nothing half-written');
});

test('reEnqueueInactive keeps one adaptive batch size per type: a type that had to shrink does not shrink another', async (t) => {
  const budget = budgeted({ writes: 50 });
  const { jobs } = await openTempJobs(t, budget.wrap);
  await runningJobs(jobs, 200);
  const since = (await jobs.getActivityVersionstamp(T1))!;
  budget.state.armed = true;
  t.is((await jobs.reEnqueueInactive(T1, since, { batchSize: 100 })).length, 200);
  budget.state.armed = false;
  // T1's size shrank below 50; T2's is still its own initial 100: one batch re-enqueues 80 jobs.
  for (let i = 0; i < 80; i++) await jobs.add(T2, `k${i}`, {});
  for (let i = 0; i < 80; i++) await jobs.accept(T2);
  const sinceT2 = (await jobs.getActivityVersionstamp(T2))!;
  const recorder = budget.state.recorder!;
  const before = recorder.committedWrites.length;
  t.is((await jobs.reEnqueueInactive(T2, sinceT2)).length, 80);
  const batches = recorder.committedWrites.slice(before).filter((writes) => writes > 0);
  t.is(batches.length, 1, `T2 re-enqueued in ${batches.length} batches: ${batches.join(',')}`);
});
