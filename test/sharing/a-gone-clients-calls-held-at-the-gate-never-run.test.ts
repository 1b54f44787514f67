// Calls that arrive before the owner opens its gate wait for it. When their
// process goes away (or the owner drops it) before the gate opens, they must
// not run once it does: nothing would abort them any more (the connection's
// end has been handled), so a waiting accept would take the next job for a
// process that is gone and hold it until the activity timeout.

import test from 'ava';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { servedJobsCalls } from '../../packages/core/src/sharing/served-jobs-calls.js';
import { storeSocket } from '../../packages/core/src/sharing/socket-path.js';
import { StoreServer } from '../../packages/core/src/sharing/store-server.js';
import { T1, openTempJobs } from '../jobs/temp-jobs.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('an accept sent before the gate opened, by a client gone since, takes no job once it opens', async (t) => {
  const { jobs, dir } = await openTempJobs(t);
  const server = await StoreServer.listen(storeSocket(dir), servedJobsCalls(() => jobs));
  t.teardown(() => server.close());
  const connection = await OwnerConnection.open(storeSocket(dir).path);
  const accepting = connection.call('accept', [T1, { timeout: 60_000 }]);
  accepting.catch(() => {});
  await sleep(50); // the call has reached the owner and waits at its gate
  connection.close();
  while (server.connections > 0) await sleep(5);
  server.openGate();
  await sleep(50);
  t.is(await jobs.add(T1, 'after', {}), 'pending');
  await sleep(100);
  t.is(await jobs.getJobState(T1, 'after'), 'pending', 'no process is there to run it');
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});
