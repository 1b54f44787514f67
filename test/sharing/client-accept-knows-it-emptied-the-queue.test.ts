// An owner's answer to a client's acceptMany says what the owner knows of
// it: that the accept waited and was handed every job the write that served
// it brought, so it most likely left the type's queue empty. A local queue
// in the client then waits for the next job, as one in the owner does,
// instead of first looking again at once (a round trip and a take in the
// owner that find nothing, for every job an idle worker gets).

import test, { type ExecutionContext } from 'ava';
import { acceptEmptiedQueue } from '../../packages/core/src/jobs/accept-calls.js';
import type { Jobs } from '../../packages/core/src/jobs/jobs.js';
import { LocalQueue } from '../../packages/core/src/jobs/local-queue.js';
import { openJobs } from '../../packages/core/src/jobs/open-jobs.js';
import { ParkedAccepts } from '../../packages/core/src/jobs/parked-accepts.js';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { tempDataDir } from './fixtures/peers.js';

/** The store's owner and a client of it, both in this process. */
async function ownerAndClient(t: ExecutionContext): Promise<{ owner: Jobs; client: Jobs }> {
  const dir = await tempDataDir(t, 'emptied-queue');
  const owner = await openJobs({ path: dir });
  const client = await openJobs({ path: dir, role: 'client' });
  t.teardown(async () => {
    await client.close();
    await owner.close();
  });
  t.is(client.role, 'client');
  await owner.setTypeTimeout('mail', 30);
  return { owner, client };
}

/** Waits until `list` has `count` entries. */
async function untilCount(list: readonly unknown[], count: number): Promise<void> {
  while (list.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Records each accept parked in this process (the owner's, for a client's call), from now until the test ends. */
function recordParks(t: ExecutionContext): unknown[] {
  const parks: unknown[] = [];
  const park = ParkedAccepts.prototype.park;
  ParkedAccepts.prototype.park = function (this: ParkedAccepts, ...args: Parameters<typeof park>) {
    const parked = park.apply(this, args);
    parks.push(parked);
    return parked;
  };
  t.teardown(() => {
    ParkedAccepts.prototype.park = park;
  });
  return parks;
}

test.serial("a client's waiting acceptMany that an add served says, as in the owner, that it emptied the queue", async (t) => {
  const { owner, client } = await ownerAndClient(t);
  const parks = recordParks(t);
  const waiting = client.acceptMany('mail', 10, { timeout: 10_000 });
  // The call reaches the owner and parks there before the add comes.
  await untilCount(parks, 1);
  await owner.add('mail', 'm1');
  const served = await waiting;
  t.deepEqual(
    served.map((job) => job.id),
    ['m1'],
  );
  t.true(acceptEmptiedQueue(served));
  // An accept that found jobs due without waiting says nothing of what is left.
  await owner.add('mail', 'm2');
  const found = await client.acceptMany('mail', 1);
  t.is(found.length, 1);
  t.false(acceptEmptiedQueue(found));
});

test.serial("a client's local queue asks the owner once per job an idle worker gets, and that ask waits", async (t) => {
  const { owner, client } = await ownerAndClient(t);
  const parks = recordParks(t);
  const accepts: { timeout: number }[] = [];
  const call = OwnerConnection.prototype.call;
  OwnerConnection.prototype.call = function (this: OwnerConnection, method, args, signal) {
    if (method === 'acceptMany') accepts.push(args[2] as { timeout: number });
    return call.call(this, method, args, signal);
  };
  t.teardown(() => {
    OwnerConnection.prototype.call = call;
  });
  // Size 2: each take asks for one job, so a take that brings one is a full take.
  const queue = new LocalQueue(client, 'mail', { size: 2 });
  t.teardown(() => queue.stop());
  for (let n = 1; n <= 3; n++) {
    const taking = queue.take();
    await untilCount(accepts, n);
    // The ask reaches the owner and parks there.
    await untilCount(parks, n);
    await owner.add('mail', `m${n}`);
    const job = await taking;
    t.is(job?.id, `m${n}`);
    await queue.finish(job!);
  }
  // Time for a look the queue would take at once after a full take.
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.is(accepts.length, 3, 'one ask per job');
  t.true(
    accepts.every((options) => options.timeout > 0),
    'each ask waits for a job',
  );
});
