// A client's accept that waits in the owner for a job is answered the
// moment the write that hands it the job becomes readable, from the store's
// own callback, and not once the owner's accept has resolved some turns of
// the microtask queue later: for an idle worker in another process those
// turns are on the way from an add to the start of its handler. A call
// answered early is answered once: what its method resolves with later is
// not sent.

import test, { type ExecutionContext } from 'ava';
import type { Job } from '../../packages/core/src/jobs/interfaces.js';
import { JobsHandle } from '../../packages/core/src/jobs/jobs.js';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { servedJobsCalls } from '../../packages/core/src/sharing/served-jobs-calls.js';
import { storeSocket } from '../../packages/core/src/sharing/socket-path.js';
import { type ServedMethod, StoreServer } from '../../packages/core/src/sharing/store-server.js';
import { FrameReader } from '../../packages/core/src/sharing/wire-frames.js';
import { NotedAnswer, RESULT } from '../../packages/core/src/sharing/wire-protocol.js';
import { openDatabase } from '../../packages/core/src/storage/open-database.js';
import { countParks } from './fixtures/parks.js';
import { tempDataDir } from './fixtures/peers.js';
import { recordedCall } from './fixtures/recorded-call.js';

async function ownerHandle(t: ExecutionContext): Promise<JobsHandle> {
  const database = await openDatabase({ path: await tempDataDir(t, 'answer-when-readable') });
  const jobs = new JobsHandle(database);
  t.teardown(async () => {
    await jobs.close();
    await database.close();
  });
  await jobs.setTypeTimeout('mail', 30);
  return jobs;
}

for (const method of ['acceptMany', 'accept'] as const) {
  test.serial(`a served ${method} handed its job by an add is answered before the owner's accept resolves, with the bytes it encoded`, async (t) => {
    const jobs = await ownerHandle(t);
    const served = servedJobsCalls(() => jobs).get(method)!;
    const log = recordedCall();
    const args = method === 'acceptMany' ? ['mail', 10, { timeout: 10_000 }] : ['mail', { timeout: 10_000 }];
    const parks = countParks(t);
    const settled = Promise.resolve(served(args, log.call)).then((value) => log.events.push({ what: 'settled', value }));
    await parks.untilParked();
    await jobs.add('mail', 'm1');
    await settled;
    t.deepEqual(
      log.events.map(({ what }) => what),
      ['prepare', 'answer', 'settled'],
    );
    const [prepared, answered, resolved] = log.events;
    // The very value prepared is answered: its bytes go out as they were encoded.
    t.is(answered!.value, prepared!.value);
    const value = answered!.value;
    if (method === 'acceptMany') {
      t.true(value instanceof NotedAnswer, 'the answer notes that the accept emptied the queue');
      t.deepEqual(
        ((value as NotedAnswer).value as Job[]).map((job) => job.id),
        ['m1'],
      );
    } else t.is((value as Job).id, 'm1');
    t.is(resolved!.value, undefined, 'nothing more to answer once the accept resolves');
  });
}

test.serial('a call answered early is answered once on the wire, with the bytes it prepared', async (t) => {
  const dir = await tempDataDir(t, 'answered-once');
  const methods = new Map<string, ServedMethod>([
    [
      'early',
      (_args, call) => {
        call.prepare('first');
        call.answer('first');
        return new Promise((resolve) => setTimeout(() => resolve('second'), 5));
      },
    ],
    ['late', () => 'late'],
  ]);
  const server = await StoreServer.listen(storeSocket(dir), methods);
  server.openGate();
  t.teardown(() => server.close());
  const results: unknown[] = [];
  const push = FrameReader.prototype.push;
  FrameReader.prototype.push = function (this: FrameReader, chunk: Buffer) {
    const messages = push.call(this, chunk);
    for (const message of messages) if (Array.isArray(message) && message[0] === RESULT) results.push(message[2]);
    return messages;
  };
  t.teardown(() => {
    FrameReader.prototype.push = push;
  });
  const connection = await OwnerConnection.open(storeSocket(dir).path);
  t.teardown(() => connection.close());
  t.is(await connection.call('early', []), 'first');
  // Past the method's own result, then one more call: had 'second' been sent, it would be read before this answer.
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.is(await connection.call('late', []), 'late');
  t.deepEqual(results, ['first', 'late']);
});
