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

type HandoverSetup = Awaited<ReturnType<typeof openHandoverJobs>>;

/**
 * Parks an accept of T1 on its empty queue, then commits an add of T2 only:
 * the accept's snapshot found the queue empty, and the commit's snapshot
 * keeps that. Resolves once both are done, with the accept still waiting.
 */
async function parkOnIdleType({ jobs, db, parked }: HandoverSetup, timeout: number): Promise<{ accepting: Promise<Job | undefined> }> {
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout });
  await parked(watches);
  await jobs.add(T2, 'elsewhere', {});
  return { accepting };
}

test('an add handed over to an accept parked on an idle type opens no lmdb cursor', async (t) => {
  const setup = await openHandoverJobs(t);
  const { jobs, dir } = setup;
  const { accepting } = await parkOnIdleType(setup, 60_000);
  const cursors = countCursors(t, dir);
  await jobs.add(T1, 'handed', {});
  t.is(cursors.opened, 0, 'the add read the queue without a cursor');
  t.is((await accepting)?.id, 'handed');
  t.is(await jobs.getJobState(T1, 'handed'), 'running');
});

test('an accept parked on an empty queue gets the job another handle adds', async (t) => {
  const setup = await openHandoverJobs(t);
  const other = await setup.openOther();
  const { accepting } = await parkOnIdleType(setup, 10_000);
  await other.add(T1, 'from-other', {});
  const job: Job | undefined = await accepting;
  t.is(job?.id, 'from-other');
});

test('an accept parked on an empty queue gets the job an application\'s transaction adds', async (t) => {
  const setup = await openHandoverJobs(t);
  const { jobs, database } = setup;
  const { accepting } = await parkOnIdleType(setup, 10_000);
  await database.doTransaction(async (tx) => {
    tx.set(Buffer.from('app/row'), Buffer.from('x'));
    await jobs.in(tx).add(T1, 'in-app-tx', {});
  });
  const job: Job | undefined = await accepting;
  t.is(job?.id, 'in-app-tx');
});
