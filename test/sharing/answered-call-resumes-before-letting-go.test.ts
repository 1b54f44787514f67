// A client's call that carries an abort signal (a waiting accept's, as a
// local queue's) listens to it while the owner works on it. When the
// owner's answer comes, the caller resumes first and the listener is let go
// after it, in the same turn: for an idle worker in another process that
// answer is the job it waits for, and its handler starts with nothing else
// on the way. A late abort finds the call answered and sends nothing.

import { getEventListeners } from 'node:events';
import test from 'ava';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { CALL } from '../../packages/core/src/sharing/wire-protocol.js';
import { fakeOwner } from './fixtures/fake-owner.js';

test('an answered call resumes its caller before it lets go of its abort listener, and a late abort sends nothing', async (t) => {
  const { path, read } = await fakeOwner(t, () => [{ id: 'j1' }]);
  const connection = await OwnerConnection.open(path);
  t.teardown(() => connection.close());
  const controller = new AbortController();
  let listenersAtResume: number | undefined;
  const answered = await connection.call('acceptMany', ['t1', 1, {}], controller.signal).then((value) => {
    listenersAtResume = getEventListeners(controller.signal, 'abort').length;
    return value;
  });
  t.deepEqual(answered, [{ id: 'j1' }]);
  t.is(listenersAtResume, 1, 'the caller resumed before the listener was let go');
  await new Promise((resolve) => setImmediate(resolve));
  t.is(getEventListeners(controller.signal, 'abort').length, 0, 'and it is let go in the same turn');
  controller.abort();
  // A call after the abort, answered, shows that nothing else was sent in between.
  await connection.call('pendingCount', ['t1']);
  t.deepEqual(
    read.map((message) => (message as unknown[])[0]),
    [CALL, CALL],
  );
});
