// An owner that closes drops its clients' connections first (withdraw), and
// their waiting accepts are aborted: jobs a write took for one of them go back
// to the queue (served-jobs-calls.ts, keptFor). The owner then closes its
// jobs handle (SharedJobs.close: withdraw, then the handle, then the store).
// When the write that took the job commits while the owner closes, the give
// back must still reach the store: nobody would run the job otherwise before
// the activity timeout, on the next owner.

import test from 'ava';
import type { Job } from '../../packages/core/src/jobs/interfaces.js';
import { ParkedAccepts } from '../../packages/core/src/jobs/parked-accepts.js';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { servedJobsCalls } from '../../packages/core/src/sharing/served-jobs-calls.js';
import { storeSocket } from '../../packages/core/src/sharing/socket-path.js';
import { StoreServer } from '../../packages/core/src/sharing/store-server.js';
import { ADD_AND_HANDOVER_WRITES, openHandoverJobs } from '../jobs/handover/handover-setup.js';
import { T1 } from '../jobs/temp-jobs.js';

test.serial('a job taken for a dropped accept while the owner closes is pending again once it has closed', async (t) => {
  const setup = await openHandoverJobs(t);
  const { jobs, holdAttemptAt } = setup;
  const server = await StoreServer.listen(storeSocket(setup.dir), servedJobsCalls(() => jobs));
  server.openGate();
  const connection = await OwnerConnection.open(storeSocket(setup.dir).path);
  t.teardown(async () => {
    connection.close();
    await server.close();
  });
  let parked = false;
  const park = ParkedAccepts.prototype.park;
  ParkedAccepts.prototype.park = function (this: ParkedAccepts, ...args: Parameters<typeof park>) {
    parked = true;
    return park.apply(this, args);
  };
  const accept = connection.call('accept', [T1, { timeout: 60_000 }]) as Promise<Job | undefined>;
  accept.catch(() => {});
  while (!parked) await new Promise((resolve) => setTimeout(resolve, 2));
  ParkedAccepts.prototype.park = park;
  await new Promise((resolve) => setImmediate(resolve));

  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'orphan', {});
  adding.catch(() => {});
  await held.reached;
  // SharedJobs.close with the write that takes the job for the client in flight.
  const withdrawing = server.close();
  held.release();
  await withdrawing;
  await jobs.close();
  await adding.catch(() => {});

  const after = await setup.openOther();
  t.not(await after.getJobState(T1, 'orphan'), 'running', 'taken for a process the owner dropped, and not given back');
});
