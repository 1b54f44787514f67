// What the store's socket does with a process that does not speak its
// protocol: a client of another version gets a refusal that names both
// versions, bytes that are not frames (or frames that are not a hello) get a
// refusal too, and the owner serves on. On the client's side, an owner that
// refuses it, or speaks another version, is JobsError `protocol_mismatch`.

import { mkdir } from 'node:fs/promises';
import { type Server, createServer } from 'node:net';
import { join } from 'node:path';
import { JobsError, openJobs } from '@jobtree/core';
import test, { type ExecutionContext } from 'ava';
import { Peer, bounded, tempDataDir } from './fixtures/peers.js';
import { RawConnection, frame, withLength } from './fixtures/raw-frames.js';

const HELLO = { protocol: 'jobtree-store', version: 1, pid: process.pid };

test('a client of another protocol version, and bytes that are not the protocol, get a refusal, and the owner serves on', async (t) => {
  const dir = await tempDataDir(t, 'wire-refusals');
  const owner = await Peer.start(t, { kind: 'jobs', path: dir });
  await owner.run(`await jobs.setTypeTimeout('mail', 30)`);
  const socket = join(dir, 'run', 'owner.sock');
  const refusalOf = async (bytes: Buffer): Promise<unknown> => {
    const raw = await RawConnection.open(socket);
    t.teardown(() => raw.close());
    raw.send(bytes);
    const answer = await raw.next();
    await bounded(raw.closed, 10_000, 'the owner to close a refused connection');
    return answer;
  };

  t.like(await refusalOf(frame({ protocol: 'jobtree-store', version: 999, pid: process.pid })), {
    refused: `the store's owner (pid ${owner.pid}) speaks version 1 of jobtree-store, the client version 999`,
    version: 1,
  });
  t.like(await refusalOf(Buffer.from('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n')), { refused: 'the bytes received are not frames of this protocol', version: 1 });
  // 0xc1 is the one byte msgpack never uses.
  t.like(await refusalOf(withLength(Buffer.from([0xc1, 0xc1]))), { refused: 'the bytes received are not frames of this protocol' });
  t.like(await refusalOf(frame([0, 1, 'getTypes', []])), { refused: "this socket serves jobtree-store and the first message was not its hello" });
  t.like(await refusalOf(frame({ protocol: 'http', version: 1 })), { refused: "this socket serves jobtree-store and the first message was not its hello" });

  // Once greeted: an unknown method is a failed call; a message that is not one ends the connection.
  const raw = await RawConnection.open(socket);
  t.teardown(() => raw.close());
  raw.send(frame(HELLO));
  t.like(await raw.next(), { protocol: 'jobtree-store', version: 1, pid: owner.pid });
  raw.send(Buffer.concat([frame([0, 7, 'getTypes', []]), frame([0, 8, 'dropDatabase', []]), frame([0, 9, 'getTypes', 'not a list'])]));
  // Answers come as calls complete, not in order: by call id.
  const answers = new Map(((await Promise.all([raw.next(), raw.next(), raw.next()])) as [number, number, unknown][]).map((answer) => [answer[1], answer]));
  t.deepEqual(answers.get(7), [2, 7, ['mail']]);
  t.like(answers.get(8), [3, 8, { name: 'JobsError', code: 'unavailable' }]);
  t.like(answers.get(9), [3, 9, { name: 'JobsError', code: 'unavailable' }]);
  raw.send(frame('not a message'));
  t.is(await raw.next(), undefined);
  // Half a frame, then gone.
  const half = await RawConnection.open(socket);
  half.send(frame(HELLO).subarray(0, 6));
  half.close();

  t.true(owner.running);
  const client = await openJobs({ path: dir, role: 'client', ownerWaitMs: 5_000 });
  t.teardown(() => client.close());
  t.deepEqual(await client.getTypes(), ['mail']);
  t.deepEqual(await owner.run(`return jobs.getTypes()`), ['mail']);
});

/** A stand-in for an owner at `<dir>/run/owner.sock` that answers every connection with `answer`. */
async function fakeOwner(t: ExecutionContext, dir: string, answer: Buffer): Promise<Server> {
  await mkdir(join(dir, 'run'), { mode: 0o700 });
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => socket.end(answer));
  });
  await new Promise<void>((resolve) => server.listen(join(dir, 'run', 'owner.sock'), resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return server;
}

test('a client refused by the owner, or welcomed in another version, fails with JobsError protocol_mismatch', async (t) => {
  const refusing = await tempDataDir(t, 'wire-refused');
  await fakeOwner(t, refusing, frame({ refused: "the store's owner (pid 1) speaks version 2 of jobtree-store, the client version 1", version: 2 }));
  const refused = await t.throwsAsync(openJobs({ path: refusing, role: 'client', ownerWaitMs: 5_000 }), { instanceOf: JobsError, code: 'protocol_mismatch' });
  t.regex(refused?.message ?? '', /version 1\b.*speaks version 2 of jobtree-store/);

  const newer = await tempDataDir(t, 'wire-newer');
  await fakeOwner(t, newer, frame({ protocol: 'jobtree-store', version: 999, pid: 1 }));
  const welcomed = await t.throwsAsync(openJobs({ path: newer, role: 'client', ownerWaitMs: 5_000 }), { instanceOf: JobsError, code: 'protocol_mismatch' });
  t.regex(welcomed?.message ?? '', /version 1\b.*it speaks version 999/);

  const garbled = await tempDataDir(t, 'wire-garbled');
  await fakeOwner(t, garbled, Buffer.from('HTTP/1.1 400 Bad Request\r\n\r\n'));
  await t.throwsAsync(openJobs({ path: garbled, role: 'client', ownerWaitMs: 5_000 }), { instanceOf: JobsError, code: 'protocol_mismatch' });
});
