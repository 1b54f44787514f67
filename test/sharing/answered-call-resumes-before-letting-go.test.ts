// A client's call that carries an abort signal (a waiting accept's, as a
// local queue's) listens to it while the owner works on it. When the
// owner's answer comes, the caller resumes first and the listener is let go
// after it, in the same turn: for an idle worker in another process that
// answer is the job it waits for, and its handler starts with nothing else
// on the way. A late abort finds the call answered and sends nothing.

import { getEventListeners } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { type Server, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { FrameReader, FrameWriter } from '../../packages/core/src/sharing/wire-frames.js';
import { CALL, type Hello, PROTOCOL_NAME, PROTOCOL_VERSION, RESULT } from '../../packages/core/src/sharing/wire-protocol.js';

/** An owner that welcomes the client and answers each call with `answer(method)`; the frames it read after the hello. */
async function fakeOwner(t: ExecutionContext, answer: (method: string) => unknown): Promise<{ path: string; read: unknown[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-call-'));
  const path = join(dir, 'owner.sock');
  const read: unknown[] = [];
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => {
    sockets.push(socket);
    const reader = new FrameReader();
    const writer = new FrameWriter(socket);
    let welcomed = false;
    socket.on('data', (chunk: Buffer) => {
      for (const message of reader.push(chunk)) {
        if (!welcomed) {
          welcomed = true;
          t.is((message as Hello).protocol, PROTOCOL_NAME);
          writer.write({ protocol: PROTOCOL_NAME, version: PROTOCOL_VERSION, pid: process.pid });
          continue;
        }
        read.push(message);
        const [kind, id, method] = message as [number, number, string];
        if (kind === CALL) writer.write([RESULT, id, answer(method)]);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });
  return { path, read };
}

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
