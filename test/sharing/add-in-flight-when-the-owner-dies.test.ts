// An add whose owner dies with it in flight may have been committed, and its
// job may even have run since (a worker of another process can take it
// before the adder hears back). The client makes such an add again on the
// next owner, but an add of a job that exists resubmits it: the job would
// run a second time though its one run was never cut off. So the job of an
// add made again is left as it is when it exists, and the add answers its
// state; only jobs that are absent are added again.

import { openJobs } from '@jobtree/core';
import test from 'ava';
import { startDyingOwner } from './fixtures/dying-owner.js';
import { Peer, tempDataDir } from './fixtures/peers.js';

test('an add committed by an owner that died before answering is not made again: its job, run and finished meanwhile, stays finished', async (t) => {
  const dir = await tempDataDir(t, 'add-in-flight');
  await startDyingOwner(t, dir);
  const jobs = await openJobs({ path: dir });
  t.teardown(() => jobs.close());
  t.is(jobs.role, 'client');

  // The owner dies with this add in flight; this process takes the store over and carries on.
  const state = await jobs.add('mail', 'welcome', { to: 'ann' });

  t.is(jobs.role, 'owner');
  t.is(state, 'finished');
  t.deepEqual(await jobs.getJob('mail', 'welcome').then((job) => [job?.state, job?.data]), ['finished', { ranBy: 'the first owner' }]);
  t.is(await jobs.pendingCount('mail'), 0);
});

test('an addMany committed by an owner that died before answering leaves its finished jobs as they are when another process takes over', async (t) => {
  const dir = await tempDataDir(t, 'add-many-in-flight');
  await startDyingOwner(t, dir);
  // The next owner: a process that is a client now and takes the store over.
  const standby = await Peer.start(t, { kind: 'jobs', path: dir });
  t.is(standby.role, 'client');
  const jobs = await openJobs({ path: dir, role: 'client' });
  t.teardown(() => jobs.close());

  const states = await jobs.addMany('mail', [
    { id: 'a', data: { to: 'ann' } },
    { id: 'b', data: { to: 'bob' } },
  ]);

  t.is(jobs.ownerPid, standby.pid);
  t.deepEqual(states, ['finished', 'finished']);
  t.deepEqual(
    (await jobs.getJobStates('mail', ['a', 'b'])).map((entry) => entry.state),
    ['finished', 'finished'],
  );
  t.is(await jobs.pendingCount('mail'), 0);
});
