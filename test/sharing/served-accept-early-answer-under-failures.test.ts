// A client's waiting accept is answered as the write that takes its job for
// it becomes readable. Whatever happens while that write commits, the
// client gets the jobs of the attempt that committed, under their locks, or
// none, and then the jobs are pending again: an attempt that fails or is
// retried after it took the job, a cancel or a lost connection.

import test, { type ExecutionContext } from 'ava';
import { checkJobsConsistency, FdbError, FdbErrorCode } from '@jobtree/core';
import type { Job } from '../../packages/core/src/jobs/interfaces.js';
import { ParkedAccepts } from '../../packages/core/src/jobs/parked-accepts.js';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { servedJobsCalls } from '../../packages/core/src/sharing/served-jobs-calls.js';
import { storeSocket } from '../../packages/core/src/sharing/socket-path.js';
import { StoreServer } from '../../packages/core/src/sharing/store-server.js';
import { ADD_AND_HANDOVER_WRITES, type HandoverSetup, openHandoverJobs, settledYet } from '../jobs/handover/handover-setup.js';
import { T1 } from '../jobs/temp-jobs.js';
import { bounded } from './fixtures/peers.js';

const tooLarge = () => new FdbError(FdbErrorCode.transaction_too_large, 'injected failure at commit');
const conflict = () => new FdbError(FdbErrorCode.not_committed, 'injected conflict at commit');

interface Served extends HandoverSetup {
  connection: OwnerConnection;
  /** A client's accept of T1, parked in the owner. */
  accepting(signal?: AbortSignal): Promise<{ call: Promise<Job | undefined> }>;
}

async function served(t: ExecutionContext): Promise<Served> {
  const setup = await openHandoverJobs(t);
  const server = await StoreServer.listen(storeSocket(setup.dir), servedJobsCalls(() => setup.jobs));
  server.openGate();
  const connection = await OwnerConnection.open(storeSocket(setup.dir).path);
  t.teardown(async () => {
    connection.close();
    await server.close();
  });
  return {
    ...setup,
    connection,
    async accepting(signal) {
      let parked = false;
      const park = ParkedAccepts.prototype.park;
      ParkedAccepts.prototype.park = function (this: ParkedAccepts, ...args: Parameters<typeof park>) {
        parked = true;
        return park.apply(this, args);
      };
      try {
        const call = connection.call('accept', [T1, { timeout: 60_000 }], signal) as Promise<Job | undefined>;
        while (!parked) await new Promise((resolve) => setTimeout(resolve, 2));
        // Parked as its transaction returned: let that turn end, so the next write starts at once.
        await new Promise((resolve) => setImmediate(resolve));
        return { call };
      } finally {
        ParkedAccepts.prototype.park = park;
      }
    },
  };
}

test.serial('an attempt that failed after it took the job answers nothing; the next add answers with its own job', async (t) => {
  const { jobs, accepting, holdAttemptAt } = await served(t);
  const { call: accept } = await accepting();
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'lost', {});
  await held.reached;
  held.release(tooLarge());
  await t.throwsAsync(adding);
  t.false(await settledYet(accept), 'the failed attempt answered nothing');
  t.is(await jobs.add(T1, 'next', {}), 'pending');
  const job = await bounded(accept, 5_000, 'the accept');
  t.is(job?.id, 'next');
  t.is(await jobs.getJobState(T1, 'lost'), undefined);
  // The lock the client got is the job's: its finish is accepted.
  await jobs.finish(job as Job);
  t.is(await jobs.getJobState(T1, 'next'), 'finished');
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test.serial('an attempt retried after it took the job answers with the lock of the attempt that committed', async (t) => {
  const { jobs, accepting, holdAttemptAt, db } = await served(t);
  const { call: accept } = await accepting();
  const attempts = db.attempts;
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'again', {});
  await held.reached;
  held.release(conflict());
  t.is(await adding, 'pending');
  t.is(db.attempts - attempts, 2);
  const job = await bounded(accept, 5_000, 'the accept');
  t.is(job?.id, 'again');
  await jobs.finish(job as Job);
  t.is(await jobs.getJobState(T1, 'again'), 'finished');
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test.serial('a client that cancels while the write taking its job commits gets none, and the job is pending again', async (t) => {
  const { jobs, accepting, holdAttemptAt } = await served(t);
  const controller = new AbortController();
  const { call: accept } = await accepting(controller.signal);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'back', {});
  await held.reached;
  controller.abort();
  // The cancel crosses the socket before the commit does.
  await new Promise((resolve) => setTimeout(resolve, 50));
  held.release();
  t.is(await adding, 'pending');
  t.is(await bounded(accept, 5_000, 'the accept'), undefined);
  await bounded(
    (async () => {
      while ((await jobs.getJobState(T1, 'back')) !== 'pending') await new Promise((resolve) => setTimeout(resolve, 5));
    })(),
    5_000,
    'the job given back',
  );
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});

test.serial('a client whose connection drops while the write taking its job commits leaves the job pending', async (t) => {
  const { jobs, accepting, holdAttemptAt, connection } = await served(t);
  const { call: accept } = await accepting();
  accept.catch(() => {});
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'orphan', {});
  await held.reached;
  connection.close();
  await t.throwsAsync(accept, { message: /owner_lost/ });
  // The owner sees the connection close before the commit.
  await new Promise((resolve) => setTimeout(resolve, 50));
  held.release();
  t.is(await adding, 'pending');
  await bounded(
    (async () => {
      while ((await jobs.getJobState(T1, 'orphan')) !== 'pending') await new Promise((resolve) => setTimeout(resolve, 5));
    })(),
    5_000,
    'the job given back',
  );
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});
