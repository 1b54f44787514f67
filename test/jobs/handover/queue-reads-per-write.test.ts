// What serving parked accepts costs the write that serves them. A parked
// accept found no job under its bound when it read; a fixed bound
// (`maxSchedTime`) never takes in more with time, so the only jobs it can
// take since are those of commits after its read: this write's, or others'
// whose commits fire its watch anyway. So once the jobs this write enqueued
// are taken, the write has nothing more to hand over, and many workers
// waiting with their own `maxSchedTime` must not make every add read the
// queue once per worker.

import test from 'ava';
import type { Job } from '@jobtree/core';
import { nowSeconds, T1 } from '../temp-jobs.js';
import { ADD_AND_HANDOVER_WRITES, openHandoverJobs } from './handover-setup.js';

const WORKERS = 20;

test('an add with many parked accepts reads the queue once for the job it brings, not once per accept', async (t) => {
  const { jobs, db, parked, rangeReadsAfterBody } = await openHandoverJobs(t);
  const now = nowSeconds();
  const accepting: Promise<unknown>[] = [];
  // Each its own bound (no two share a batcher), each due for the added job.
  for (let i = 0; i < 12; i++) {
    const watches = db.calls.watches;
    accepting.push(jobs.accept(T1, { timeout: 60_000, maxSchedTime: now + 3_600 + i }));
    await parked(watches);
  }
  const before = db.calls.rangeReads;
  const afterBody = rangeReadsAfterBody(ADD_AND_HANDOVER_WRITES);
  await jobs.add(T1, 'one', {});
  t.is((await afterBody) - before, 1, 'one read of the queue in the add\'s transaction');
  const first = await Promise.race(accepting);
  t.is((first as Job | undefined)?.id, 'one');
});

test('an add with many parked accepts of distinct maxSchedTime reads the queue a bounded number of times', async (t) => {
  const { jobs, db, parked, holdAttemptAt } = await openHandoverJobs(t);
  const now = nowSeconds();
  const accepting: Promise<unknown>[] = [];
  // Bounds in the future: the added job is due for every one of them.
  for (let i = 0; i < WORKERS; i++) {
    const watches = db.calls.watches;
    accepting.push(jobs.accept(T1, { timeout: 60_000, maxSchedTime: now + 3_600 + i }));
    await parked(watches);
  }
  // Held before its commit: no watch has fired, so the only reads since are the add's.
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const before = db.calls.rangeReads;
  const adding = jobs.add(T1, 'one', {});
  await held.reached;
  const reads = db.calls.rangeReads - before;
  held.release();
  await adding;
  await Promise.race(accepting);
  t.log(`range reads in the add's transaction with ${WORKERS} parked accepts: ${reads}`);
  // One accept takes the only job the add enqueued; one more may look and
  // come up short; the others need no read.
  t.true(reads <= 3, `the add read the queue ${reads} times`);
});
