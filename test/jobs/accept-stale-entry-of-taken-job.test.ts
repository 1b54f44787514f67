// A job can have a stale queue entry behind its own (an entry at a rank
// its record does not have). An accept that takes the job from its own
// entry and then, on a later pick of the same transaction, comes to the
// stale one must clear that entry like any other stale one: the record it
// would read was rewritten by this very transaction with a versionstamped
// value, which the store cannot read back before the commit
// (accessed_unreadable).

import test from 'ava';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { enqueuePending } from '../../packages/core/src/jobs/pending-queue.js';
import { openTempJobs, T1 } from './temp-jobs.js';

test('an accept that took a job clears a stale entry of that job it picks later in the same transaction', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.add(T1, 'y', { n: 1 });
  await jobs.add(T1, 'x', { n: 2 }, { priority: 8, scheduledTime: 0 });
  const keys = new JobKeys().forType(T1);
  await database.doTransaction((tx) => {
    // In front of everything: a stale entry of y, so the first pick comes up a job short.
    enqueuePending(tx, keys, 'y', 9, 0);
    // Behind x's own entry and in front of y's: picked on the second pass, after x was taken.
    enqueuePending(tx, keys, 'x', 7, 0);
  });
  const taken = await jobs.acceptMany(T1, 2, { timeout: 0 });
  t.deepEqual(taken.map((job) => job.id).sort(), ['x', 'y']);
  const rows = await database.doTransaction((tx) => tx.getRange(keys.pending.range().begin, keys.pending.range().end));
  t.is(rows.length, 0, 'every entry of the two jobs is gone: the stale ones cleared, the own ones taken');
});

test('an accept of one job at a time clears a stale entry of a job an earlier accept of the same batch took', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.add(T1, 'x', { n: 2 }, { priority: 8, scheduledTime: 0 });
  await jobs.add(T1, 'y', { n: 1 });
  const keys = new JobKeys().forType(T1);
  await database.doTransaction((tx) => enqueuePending(tx, keys, 'x', 7, 0));
  // Concurrent accepts share one transaction: the first takes x, the second
  // picks x's stale entry first (claims pass over taken entries, not stale ones).
  const taken = await Promise.all([jobs.accept(T1, { timeout: 0 }), jobs.accept(T1, { timeout: 0 })]);
  t.deepEqual(taken.map((job) => job?.id).sort(), ['x', 'y']);
});
