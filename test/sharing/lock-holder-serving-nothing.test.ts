// A process that holds the store's lock but serves no other process (it
// opened the store with a plain openDatabase, which belongs to one
// process): a process opening the store waits ownerWaitMs for it to serve,
// then fails with DatabaseLockedError saying so, naming the holder.

import { DatabaseLockedError, openJobs } from '@jobtree/core';
import test from 'ava';
import { startJobs } from 'jobtree';
import { Peer, tempDataDir } from './fixtures/peers.js';

test('a store held by a process that serves nothing fails after ownerWaitMs with DatabaseLockedError saying the holder serves no other processes', async (t) => {
  const dir = await tempDataDir(t, 'holder-serves-nothing');
  const holder = await Peer.start(t, { kind: 'database', path: dir });
  const ownerWaitMs = 400;

  const started = performance.now();
  const error = await t.throwsAsync(openJobs({ path: dir, ownerWaitMs }), { instanceOf: DatabaseLockedError });
  t.true(performance.now() - started >= ownerWaitMs, 'it waited for the holder to serve');
  t.is(error?.ownerPid, holder.pid);
  t.regex(error?.message ?? '', new RegExp(`in use by process ${holder.pid} and serves no other processes`));

  const app = await t.throwsAsync(startJobs({ path: dir, ownerWaitMs, threads: 1, logLevel: 'silent' }), { instanceOf: DatabaseLockedError });
  t.regex(app?.message ?? '', /serves no other processes/);

  // Once the holder lets go, the store opens.
  await holder.closeAndExit();
  const jobs = await openJobs({ path: dir, ownerWaitMs });
  t.teardown(() => jobs.close());
  t.is(jobs.role, 'owner');
});
