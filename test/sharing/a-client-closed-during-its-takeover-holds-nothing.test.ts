// A client that closes while it takes the store over (its owner just died,
// and the lock is free) or connects to the next owner: what that attempt
// gets once the close has begun (the lock and the socket of an owner, or a
// connection) is given up, and the close resolves only then. Otherwise the
// closed process keeps the store's lock and serves nothing any handle of it
// could answer, and the listening socket keeps it from exiting.

import { StoreSharing } from '@jobtree/core';
import test from 'ava';
import { Peer, tempDataDir } from './fixtures/peers.js';

test('a client that closes as its owner dies gives up the store it was taking over', async (t) => {
  const dir = await tempDataDir(t, 'close-during-takeover');
  const owner = await Peer.start(t, { kind: 'jobs', path: dir });
  t.is(owner.role, 'owner');
  const sharing = await StoreSharing.open({ path: dir });
  t.teardown(() => sharing.close());
  t.is(sharing.role, 'client');
  const roles: string[] = [];
  sharing.onRoleChange((change) => roles.push(change.role));
  const connection = sharing.openConnection;
  if (connection === undefined) throw new Error('a client has an open connection');
  // Told after the sharing itself, which starts taking the store over at once: the close comes during that takeover.
  const closed = connection.lost.then(() => sharing.close());
  await owner.kill('SIGKILL');
  await closed;
  t.is(sharing.database, undefined);
  t.deepEqual(roles, []);
  // The lock is free: another opener owns the store.
  const next = await StoreSharing.open({ path: dir, role: 'owner' });
  t.teardown(() => next.close());
  t.is(next.role, 'owner');
});
