// Batch calls, coalesced single calls and calls inside application
// transactions, all at once, with removes, re-adds and re-enqueues of
// running jobs going on: no lock ever finishes twice, every halt is a job
// that really was taken away, and the indexes end up consistent.

import test from 'ava';
import { JobsError } from '@jobtree/core';
import type { Job } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { decodeJobRecord } from '../../packages/core/src/jobs/job-record.js';
import { openTempJobs, T1 } from './temp-jobs.js';

/** A small seeded generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x ^= x + Math.imul(x ^ (x >>> 7), 61 | x);
    return ((x ^ (x >>> 14)) >>> 0) / 2 ** 32;
  };
}

test('mixed batch and single calls under removes and re-enqueues keep every job consistent', async (t) => {
  t.timeout(120_000);
  const seed = Date.now() % 1_000_000;
  t.log(`seed ${seed}`);
  const rand = random(seed);
  const { jobs, database } = await openTempJobs(t);
  const ids = Array.from({ length: 300 }, (_, i) => `j${i}`);
  const pick = () => ids[Math.floor(rand() * ids.length)] as string;

  // Jobs arrive three ways at once.
  await Promise.all([
    jobs.addMany(
      T1,
      ids.slice(0, 100).map((id) => ({ id, data: { id } })),
    ),
    ...ids.slice(100, 200).map((id) => jobs.add(T1, id, { id })),
    ...ids.slice(200).map((id) => database.doTransaction((tx) => jobs.in(tx).add(T1, id, { id }))),
  ]);

  const finishedLocks = new Set<string>();
  let doubleFinish = 0;
  let chaosOn = true;
  const recordFinish = (job: Job) => {
    if (finishedLocks.has(job.lock)) doubleFinish += 1;
    finishedLocks.add(job.lock);
  };
  const isHalt = (error: unknown) => JobsError.is(error, 'halt');

  const worker = async (index: number) => {
    let idle = 0;
    while (idle < 3) {
      const batch = index % 2 === 0 ? await jobs.acceptMany(T1, 1 + Math.floor(rand() * 8)) : [await jobs.accept(T1)].flatMap((job) => (job ? [job] : []));
      if (batch.length === 0) {
        idle = chaosOn ? 0 : idle + 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      idle = 0;
      let current = batch;
      if (rand() < 0.5) {
        const outcomes = await jobs.updateMany(current.map((job) => ({ job, data: { step: 1 } })));
        current = outcomes.flatMap((outcome) => {
          if (outcome.status === 'fulfilled') return [outcome.value];
          if (!isHalt(outcome.reason)) throw outcome.reason;
          return [];
        });
      } else {
        const updated = await Promise.allSettled(current.map((job) => jobs.update(job, { step: 2 })));
        current = updated.flatMap((outcome) => {
          if (outcome.status === 'fulfilled') return [outcome.value];
          if (!isHalt(outcome.reason)) throw outcome.reason;
          return [];
        });
      }
      if (rand() < 0.5) {
        const outcomes = await jobs.finishMany(current.map((job) => ({ job, data: { done: true } })));
        outcomes.forEach((outcome, i) => {
          if (outcome.status === 'fulfilled') recordFinish(current[i] as Job);
          else if (!isHalt(outcome.reason)) throw outcome.reason;
        });
      } else {
        await Promise.all(
          current.map(async (job) => {
            try {
              if (rand() < 0.3) {
                await database.doTransaction((tx) => jobs.in(tx).finish(job, { done: 'in tx' }));
              } else {
                await jobs.finish(job, { done: true });
              }
              recordFinish(job);
            } catch (error) {
              if (!isHalt(error)) throw error;
            }
          }),
        );
      }
    }
  };

  const chaos = async () => {
    for (let round = 0; round < 60; round++) {
      const action = rand();
      if (action < 0.3) await jobs.remove(T1, pick());
      else if (action < 0.6) await jobs.addMany(T1, [{ id: pick() }, { id: pick(), priority: 1 }]);
      else if (action < 0.8) await jobs.add(T1, pick(), { again: round });
      else {
        const stamp = await jobs.getActivityVersionstamp(T1);
        if (stamp) await jobs.reEnqueueInactive(T1, stamp);
      }
    }
    chaosOn = false;
  };

  await Promise.all([chaos(), ...Array.from({ length: 6 }, (_, i) => worker(i))]);
  t.is(doubleFinish, 0, 'no lock finished twice');
  t.true(finishedLocks.size >= 200, `${finishedLocks.size} finishes`);
  t.is(await jobs.pendingCount(T1), 0, 'drained');
  t.deepEqual(await jobs.getActiveJobIds(T1), []);

  // Indexes: every job is finished, and no queue entry or activity row is left.
  const root = new JobKeys();
  const keys = root.forType(T1);
  const { records, pending, activity } = await database.doTransaction(async (tx) => ({
    records: await tx.getRange(keys.data.range().begin, keys.data.range().end),
    pending: await tx.getRange(keys.pending.range().begin, keys.pending.range().end),
    activity: await tx.getRange(keys.activity.range().begin, keys.activity.range().end),
  }));
  t.deepEqual(new Set(records.map((row) => decodeJobRecord(row.value).state)), new Set(['finished']));
  t.is(pending.length, 0);
  t.is(activity.length, 0);
});
