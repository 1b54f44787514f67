// An owner that is stopped (SIGSTOP) or hung still holds the directory lock,
// and the kernel still accepts connections on its socket, but it never
// answers a hello. A process opening the store next to it gets a typed
// error once its wait for an owner is over, instead of waiting for ever.

import { DatabaseLockedError, openJobs } from '@jobtree/core';
import test from 'ava';
import { Peer, bounded, tempDataDir } from './fixtures/peers.js';

test('opening a store whose owner is stopped fails with database_locked once the wait for an owner is over, saying the owner does not answer', async (t) => {
  const dir = await tempDataDir(t, 'stopped-owner');
  const owner = await Peer.start(t, { kind: 'jobs', path: dir });
  t.is(owner.role, 'owner');
  process.kill(owner.pid, 'SIGSTOP');
  // Resumed before the peer is killed at the test's end (teardowns run last registered first).
  t.teardown(() => {
    process.kill(owner.pid, 'SIGCONT');
  });

  const opening = openJobs({ path: dir, ownerWaitMs: 1_500 });
  const error = await t.throwsAsync(bounded(opening, 30_000, 'openJobs next to a stopped owner'));
  t.true(error instanceof DatabaseLockedError, `${error?.name}: ${error?.message}`);
  t.is((error as DatabaseLockedError).ownerPid, owner.pid);
  t.regex(error?.message ?? '', /does not answer on the store's socket/);
});
