// When the frames between the processes of one store leave: a frame written
// on a connection that has written nothing yet in this tick goes to the
// kernel at once (a job handed to an idle worker in another process waits
// for nothing), and the frames written after it in the same tick go
// together on the next tick, in order (a burst of replies costs one system
// call, not one each).

import { mkdtemp, rm } from 'node:fs/promises';
import { type Server, type Socket, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { FrameReader, FrameWriter } from '../../packages/core/src/sharing/wire-frames.js';

/** A connected pair over a unix socket: the writing end, and the frames the other end has read so far. */
async function connectedPair(t: ExecutionContext): Promise<{ socket: Socket; received: unknown[]; arrived(count: number): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-frames-'));
  const path = join(dir, 'frames.sock');
  const received: unknown[] = [];
  const waiters: (() => void)[] = [];
  const reader = new FrameReader();
  let accepted: Socket | undefined;
  const server: Server = createServer((socket) => {
    accepted = socket;
    socket.on('data', (chunk: Buffer) => {
      received.push(...reader.push(chunk));
      for (const wake of waiters.splice(0)) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const socket = connect({ path });
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  t.teardown(async () => {
    socket.destroy();
    accepted?.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });
  const arrived = async (count: number): Promise<void> => {
    while (received.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  return { socket, received, arrived };
}

test('a frame written on an idle connection goes to the kernel before the tick ends', async (t) => {
  const { socket, received, arrived } = await connectedPair(t);
  const writer = new FrameWriter(socket);
  t.true(writer.write([2, 1, { id: 'job-1' }]));
  // Nothing left in the socket's own buffer: the bytes were handed over in the write itself.
  t.is(socket.writableLength, 0);
  t.is(socket.writableCorked, 1, 'writes after it in this tick wait for the next one');
  await arrived(1);
  t.deepEqual(received, [[2, 1, { id: 'job-1' }]]);
});

test('frames written after the first in one tick go out together on the next tick, in order', async (t) => {
  const { socket, received, arrived } = await connectedPair(t);
  const writer = new FrameWriter(socket);
  writer.write([2, 1, 'result 1']);
  t.is(socket.writableLength, 0, 'the first frame of the tick left at once');
  for (let id = 2; id <= 4; id++) writer.write([2, id, `result ${id}`]);
  // The rest wait in the socket's buffer for the end of the tick.
  t.true(socket.writableLength > 0);
  await new Promise<void>((resolve) => process.nextTick(resolve));
  t.is(socket.writableCorked, 0);
  await arrived(4);
  t.deepEqual(
    received,
    [1, 2, 3, 4].map((id) => [2, id, `result ${id}`]),
  );
  // A later tick's first frame leaves at once again.
  await new Promise<void>((resolve) => setImmediate(resolve));
  writer.write([2, 5, 'result 5']);
  t.is(socket.writableLength, 0);
  await arrived(5);
  t.deepEqual(received[4], [2, 5, 'result 5']);
});

test('a frame goes to the socket as one write of one buffer, its header and body together', async (t) => {
  const { socket, received, arrived } = await connectedPair(t);
  const writes: number[][] = [];
  // What the socket's stream hands to its handle: one entry per write call, the lengths of its buffers.
  const write = socket._write.bind(socket);
  const writev = socket._writev?.bind(socket);
  socket._write = (chunk, encoding, callback) => {
    writes.push([(chunk as Buffer).length]);
    write(chunk, encoding, callback);
  };
  socket._writev = (chunks, callback) => {
    writes.push(chunks.map(({ chunk }) => (chunk as Buffer).length));
    writev?.(chunks, callback);
  };
  const writer = new FrameWriter(socket);
  writer.write([2, 1, { id: 'job-1', data: 'x'.repeat(100) }]);
  t.is(writes.length, 1);
  t.is(writes[0]?.length, 1, 'one buffer');
  await arrived(1);
  t.deepEqual(received, [[2, 1, { id: 'job-1', data: 'x'.repeat(100) }]]);
});
