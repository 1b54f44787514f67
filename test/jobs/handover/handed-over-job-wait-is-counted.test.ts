// The app's counting handle measures each job's wait from its add to its
// accept. A parked accept that an add serves gets its job as soon as the
// add's commit is readable, before the add itself answers (its sync is
// still running): the wait of that job is still measured, once, and no add
// time is left behind for a job already taken.

import test from 'ava';
import type { Job } from '@jobtree/core';
import { JobActivity } from '../../../packages/jobtree/src/admin/job-activity.js';
import { observedJobs } from '../../../packages/jobtree/src/admin/observed-jobs.js';
import { T1 } from '../temp-jobs.js';
import { openHandoverJobs } from './handover-setup.js';
import { holdNextWrite } from '../../storage/held-write.js';

test.serial('a job handed to a parked accept before its add answers has its wait counted once', async (t) => {
  t.timeout(20_000);
  const { database, db, parked } = await openHandoverJobs(t);
  const activity = new JobActivity();
  const jobs = observedJobs(database, activity);
  t.teardown(() => jobs.close());
  const waits: number[] = [];
  const order: string[] = [];
  activity.events.on('accepted', (_type, _count, seen) => {
    order.push('accepted');
    waits.push(...seen);
  });
  activity.events.on('added', () => order.push('added'));
  const accepting = jobs.acceptMany(T1, 1, { timeout: 60_000 });
  await parked(db.calls.watches);
  const held = holdNextWrite(t);
  const adding = jobs.add(T1, 'waited', {});
  t.deepEqual((await accepting).map((job) => job.id), ['waited']);
  held.release();
  t.is(await adding, 'pending');
  t.deepEqual(order, ['accepted', 'added'], 'the accept returned first');
  t.is(waits.length, 1, 'its wait was measured');
  t.true((waits[0] as number) >= 0);
  // Run again through a creator's resubmit, which is no add: no add time of this job is left to give a second sample.
  const [taken] = await accepting;
  await jobs.finish(taken as Job);
  const before = waits.length;
  t.is(await jobs.resubmit(T1, 'waited'), 'pending');
  const job = await jobs.accept(T1, { timeout: 5_000 });
  t.is(job?.id, 'waited');
  t.is(waits.length - before, 0, 'no stale add time measured a second wait');
});
