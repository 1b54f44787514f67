// A client reads its owner's frames straight off the socket's handle, into
// one buffer it reuses (`onread`), with no stream buffering or 'data' event
// between an answer and the call it settles: for an idle worker in another
// process that answer is the job it waits for. Answers split over many
// reads, many in one read, and binary values all come out whole.

import { mkdtemp, rm } from 'node:fs/promises';
import { type Server, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import test, { type ExecutionContext } from 'ava';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { FrameReader, FrameWriter } from '../../packages/core/src/sharing/wire-frames.js';
import { CALL, PROTOCOL_NAME, PROTOCOL_VERSION, RESULT } from '../../packages/core/src/sharing/wire-protocol.js';

/** An owner that welcomes the client and answers each call with its arguments; the sockets it accepted. */
async function echoingOwner(t: ExecutionContext): Promise<{ path: string; accepted: Set<Socket> }> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-reads-'));
  const path = join(dir, 'owner.sock');
  const accepted = new Set<Socket>();
  const server: Server = createServer((socket) => {
    accepted.add(socket);
    const reader = new FrameReader();
    const writer = new FrameWriter(socket);
    let welcomed = false;
    socket.on('data', (chunk: Buffer) => {
      for (const message of reader.push(chunk)) {
        if (!welcomed) {
          welcomed = true;
          writer.write({ protocol: PROTOCOL_NAME, version: PROTOCOL_VERSION, pid: process.pid });
          continue;
        }
        const [kind, id, , args] = message as [number, number, string, unknown[]];
        if (kind === CALL) writer.write([RESULT, id, args]);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  t.teardown(async () => {
    for (const socket of accepted) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });
  return { path, accepted };
}

test.serial("an answer reaches its call without passing through the client socket's stream buffer", async (t) => {
  const { path, accepted } = await echoingOwner(t);
  const pushedBy = new Set<Readable>();
  const push = Readable.prototype.push;
  Readable.prototype.push = function (this: Readable, chunk: unknown, encoding?: BufferEncoding) {
    if (chunk !== null) pushedBy.add(this);
    return push.call(this, chunk, encoding);
  };
  t.teardown(() => {
    Readable.prototype.push = push;
  });
  const connection = await OwnerConnection.open(path);
  t.teardown(() => connection.close());
  t.deepEqual(await connection.call('getJob', ['t1', 'j1']), ['t1', 'j1']);
  const clientPushes = [...pushedBy].filter((stream) => !accepted.has(stream as Socket));
  t.is(clientPushes.length, 0, 'no bytes went through a readable buffer on the client side');
});

test.serial('answers split over many reads, and many in one read, come out whole', async (t) => {
  const { path } = await echoingOwner(t);
  const connection = await OwnerConnection.open(path);
  t.teardown(() => connection.close());
  const calls = Array.from({ length: 50 }, (_, n) => {
    const sent = { id: `job-${n}`, data: 'x'.repeat(n % 5 === 0 ? 200_000 + n : n), bytes: new Uint8Array([n, n + 1, n + 2]) };
    return { sent, answer: connection.call('getJob', [sent.id, sent.data, sent.bytes]) };
  });
  for (const { sent, answer } of calls) {
    const [id, data, bytes] = (await answer) as [string, string, Uint8Array];
    t.is(id, sent.id);
    t.is(data, sent.data);
    t.deepEqual([...bytes], [...sent.bytes]);
  }
});
