// A client reads its owner's frames straight off the socket's handle, into
// one buffer it reuses (`onread`), with no stream buffering or 'data' event
// between an answer and the call it settles: for an idle worker in another
// process that answer is the job it waits for. Answers split over many
// reads, many in one read, and binary values all come out whole.

import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import test, { type ExecutionContext } from 'ava';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { fakeOwner } from './fixtures/fake-owner.js';

/** A fake owner that answers each call with its arguments. */
const echoingOwner = (t: ExecutionContext) => fakeOwner(t, (_method, args) => args);

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
