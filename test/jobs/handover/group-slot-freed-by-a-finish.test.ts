// With a limit on each group's concurrency, a group with a backlog runs one
// job after the other: each start waits for the finish before it. A finish
// that frees a slot of its group serves an accept parked in this process in
// the finish's own transaction, as a write that enqueues a job does: the
// group's next job goes running in the commit that ended the previous one,
// not in a commit of its own after a watch woke the accept.

import test from 'ava';
import { checkJobsConsistency } from '@jobtree/core';
import { T1 } from '../temp-jobs.js';
import { openHandoverJobs } from './handover-setup.js';

test("with group concurrency 1, a finish hands its group's next job to a parked accept in the finish's own commit", async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  await jobs.setTypeLimits(T1, { group: { concurrency: 1 } });
  await jobs.addMany(T1, Array.from({ length: 3 }, (_, i) => ({ id: `a${i}`, group: 'a' })));
  const first = await jobs.accept(T1, { timeout: 0 });
  t.is(first?.group, 'a');
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const commits = durableCommits();
  const transactions = db.transactions;
  t.is(await jobs.finish(first!), 'finished');
  const next = await accepting;
  t.is(next?.group, 'a');
  t.is(durableCommits() - commits, 1, 'the finish and the next start share one commit');
  t.is(db.transactions - transactions, 1, 'the accept ran no transaction of its own');
  // The group's slot is in use again: nothing else of it may start.
  t.is(await jobs.accept(T1, { timeout: 0 }), undefined);
  t.deepEqual(await jobs.getActiveJobIds(T1), [next!.id]);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
  t.is(await jobs.finish(next!), 'finished');
});
