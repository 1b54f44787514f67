// When the owner drops a client's connection (it closes, or the client broke
// the protocol), the calls in flight on it end at once: their signals abort
// before anything else runs. An answer written after the drop and before the
// socket's 'close' event would go to a socket that is gone; for a waiting
// accept that answer would hold its jobs from the queue, with nobody to run
// them, until the activity timeout. With the signal aborted first, the served
// accept gives its jobs back instead.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { storeSocket } from '../../packages/core/src/sharing/socket-path.js';
import { type ServedCall, StoreServer } from '../../packages/core/src/sharing/store-server.js';

test('a call in flight is aborted as the owner drops its connection, before an answer could be lost', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-dropped-calls-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  let arrive!: (call: ServedCall) => void;
  const arrived = new Promise<ServedCall>((resolve) => {
    arrive = resolve;
  });
  // A method that never answers by itself: what a waiting accept is until a write hands it jobs (or its call aborts).
  const hold = (_args: unknown[], call: ServedCall) => {
    arrive(call);
    return new Promise<never>((_resolve, reject) => call.signal.addEventListener('abort', () => reject(new Error('aborted'))));
  };
  const server = await StoreServer.listen(storeSocket(dir), new Map([['hold', hold]]));
  server.openGate();
  const connection = await OwnerConnection.open(storeSocket(dir).path);
  t.teardown(() => connection.close());
  const calling = connection.call('hold', []);
  calling.catch(() => {});
  const call = await arrived;
  t.false(call.signal.aborted);
  const closing = server.close();
  t.true(call.signal.aborted, 'aborted in the very turn the connection was dropped');
  t.false(call.connection.open);
  // What the method would do with an answer that came too late: nothing reaches the client.
  call.answer('too late');
  await closing;
  const error = await t.throwsAsync(calling);
  t.not(error?.message, 'too late');
});
