// An accept that parks on an idle type found its queue empty; the store
// remembers that in the snapshot it read, and in the snapshots of the small
// commits that enqueue nothing to the type (see store-snapshot.ts). So the
// add that hands its job over reads the queue (its own new entry, and
// nothing older) without an lmdb cursor. A job that reaches the queue any
// other way, by another handle's add or in an application's transaction,
// is still found by the parked accept when its watch fires.

import test from 'ava';
import type { Job } from '@jobtree/core';
import { countCursors } from '../../storage/cursor-count.js';
import { T1, T2 } from '../temp-jobs.js';
import { openHandoverJobs } from './handover-setup.js';

test('an add handed over to an accept parked on an idle type opens no lmdb cursor', async (t) => {
  const { jobs, db, dir, parked } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  // A commit that enqueues to another type only: the type's queue stays known to be empty.
  await jobs.add(T2, 'elsewhere', {});
  const cursors = countCursors(t, dir);
  await jobs.add(T1, 'handed', {});
  t.is(cursors.opened, 0, 'the add read the queue without a cursor');
  t.is((await accepting)?.id, 'handed');
  t.is(await jobs.getJobState(T1, 'handed'), 'running');
});

test('an accept parked on an empty queue gets the job another handle adds', async (t) => {
  const { jobs, db, parked, openOther } = await openHandoverJobs(t);
  const other = await openOther();
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 10_000 });
  await parked(watches);
  await jobs.add(T2, 'elsewhere', {});
  await other.add(T1, 'from-other', {});
  const job: Job | undefined = await accepting;
  t.is(job?.id, 'from-other');
});

test('an accept parked on an empty queue gets the job an application\'s transaction adds', async (t) => {
  const { jobs, db, parked, database } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 10_000 });
  await parked(watches);
  await jobs.add(T2, 'elsewhere', {});
  await database.doTransaction(async (tx) => {
    tx.set(Buffer.from('app/row'), Buffer.from('x'));
    await jobs.in(tx).add(T1, 'in-app-tx', {});
  });
  const job: Job | undefined = await accepting;
  t.is(job?.id, 'in-app-tx');
});
