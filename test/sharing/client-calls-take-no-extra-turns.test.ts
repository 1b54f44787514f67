// A client's call goes out on its owner connection in the caller's own
// turn, and the answer resumes the caller in the turn after it settles the
// connection's call: for an idle worker in another process that answer is
// its next job, and every turn of the microtask queue between the two is on
// the way to its handler's start. An `add` takes one turn more, for the
// check it is made again on the next owner when its own went away.

import test, { type ExecutionContext } from 'ava';
import type { Job } from '../../packages/core/src/jobs/interfaces.js';
import { openJobs } from '../../packages/core/src/jobs/open-jobs.js';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import type { SharedJobs } from '../../packages/core/src/sharing/shared-jobs.js';
import { storeSocket } from '../../packages/core/src/sharing/socket-path.js';
import { type ServedMethod, StoreServer } from '../../packages/core/src/sharing/store-server.js';
import { tempDataDir } from './fixtures/peers.js';

const job = { type: 't1', id: 'j1', lock: 'l1', data: null, priority: 0, scheduledTime: 0, resubmit: false, continuous: false, attempts: 0 } as unknown as Job;

/** An owner that answers from fixed values, and a client of it. */
async function clientOfServer(t: ExecutionContext): Promise<SharedJobs> {
  const dir = await tempDataDir(t, 'call-turns');
  const methods = new Map<string, ServedMethod>([
    ['acceptMany', () => [job]],
    ['accept', () => job],
    ['finish', () => 'finished'],
    ['add', () => 'pending'],
  ]);
  const server = await StoreServer.listen(storeSocket(dir), methods);
  server.openGate();
  t.teardown(() => server.close());
  const jobs = (await openJobs({ path: dir, role: 'client' })) as SharedJobs;
  t.teardown(() => jobs.close());
  return jobs;
}

interface CallTurns {
  /** Whether the connection's call was made before `make` returned. */
  sentInCallerTurn: boolean;
  /** Turns of the microtask queue from the settling of the connection's call to the caller's resumption. */
  turns: number;
}

/** Watches the one connection call that `make` makes. */
async function watchCall(t: ExecutionContext, make: () => Promise<unknown>): Promise<CallTurns> {
  const call = OwnerConnection.prototype.call;
  let counting: Promise<number> | undefined;
  let settled = false;
  OwnerConnection.prototype.call = function (this: OwnerConnection, ...args: Parameters<typeof call>) {
    const answer = call.apply(this, args);
    // The first reaction to the answer: it runs before any of the client's own.
    counting = answer.then(async () => {
      let turns = 0;
      while (!settled && turns < 20) {
        await null;
        turns++;
      }
      return turns;
    });
    return answer;
  };
  t.teardown(() => {
    OwnerConnection.prototype.call = call;
  });
  const caller = make();
  const sentInCallerTurn = counting !== undefined;
  void caller.then(() => {
    settled = true;
  });
  await caller;
  OwnerConnection.prototype.call = call;
  return { sentInCallerTurn, turns: await (counting as Promise<number>) };
}

test.serial("a client's acceptMany goes out in its caller's turn and resumes it in the turn its answer arrives", async (t) => {
  const jobs = await clientOfServer(t);
  const signal = new AbortController().signal;
  t.deepEqual(await watchCall(t, () => jobs.acceptMany('t1', 10, { timeout: 1000, signal })), { sentInCallerTurn: true, turns: 1 });
});

test.serial("a client's accept goes out in its caller's turn and resumes it in the turn its answer arrives", async (t) => {
  const jobs = await clientOfServer(t);
  t.deepEqual(await watchCall(t, () => jobs.accept('t1', { timeout: 1000 })), { sentInCallerTurn: true, turns: 1 });
});

test.serial("a client's finish goes out in its caller's turn and resumes it in the turn its answer arrives", async (t) => {
  const jobs = await clientOfServer(t);
  t.deepEqual(await watchCall(t, () => jobs.finish(job)), { sentInCallerTurn: true, turns: 1 });
});

test.serial("a client's add goes out in its caller's turn and resumes it one turn after its answer arrives", async (t) => {
  const jobs = await clientOfServer(t);
  t.deepEqual(await watchCall(t, () => jobs.add('t1', 'j2')), { sentInCallerTurn: true, turns: 2 });
});
