// A job whose data the owner stores but the wire cannot carry (JSON nested
// deeper than msgpackr packs) taken for a client's waiting accept: the
// write that takes the job is the adder's and must not fail for it; the
// client's call is answered with an error, never left waiting, and the job
// goes back to the queue, where a worker of the owner's process can run
// it. Any other call whose answer cannot cross fails likewise.

import test, { type ExecutionContext } from 'ava';
import type { JobsError } from '../../packages/core/src/errors.js';
import { JobsHandle } from '../../packages/core/src/jobs/jobs.js';
import { OwnerConnection } from '../../packages/core/src/sharing/owner-connection.js';
import { servedJobsCalls } from '../../packages/core/src/sharing/served-jobs-calls.js';
import { storeSocket } from '../../packages/core/src/sharing/socket-path.js';
import { StoreServer } from '../../packages/core/src/sharing/store-server.js';
import { openDatabase } from '../../packages/core/src/storage/open-database.js';
import { countParks } from './fixtures/parks.js';
import { bounded, tempDataDir } from './fixtures/peers.js';

/** JSON that stores and reads back, but nests deeper than msgpackr's recursive pack goes. */
/** An owner's handle serving its store's socket, and a client's connection to it. */
async function servedOwner(t: ExecutionContext): Promise<{ jobs: JobsHandle; connection: OwnerConnection }> {
  const dir = await tempDataDir(t, 'answer-cannot-cross');
  const database = await openDatabase({ path: dir });
  const jobs = new JobsHandle(database);
  await jobs.setTypeTimeout('mail', 30);
  const server = await StoreServer.listen(storeSocket(dir), servedJobsCalls(() => jobs));
  server.openGate();
  const connection = await OwnerConnection.open(storeSocket(dir).path);
  t.teardown(async () => {
    connection.close();
    await server.close();
    await jobs.close();
    await database.close();
  });
  return { jobs, connection };
}

function tooDeepForTheWire(): unknown {
  return JSON.parse(`${'['.repeat(1_800)}${']'.repeat(1_800)}`);
}

for (const method of ['accept', 'acceptMany'] as const) {
  test.serial(`an add whose job a client's waiting ${method} cannot be sent commits, and the client's call fails`, async (t) => {
    const { jobs, connection } = await servedOwner(t);
    const parks = countParks(t);
    const args = method === 'acceptMany' ? ['mail', 10, { timeout: 10_000 }] : ['mail', { timeout: 10_000 }];
    const accepting = connection.call(method, args);
    await parks.untilParked();
    t.is(await jobs.add('mail', 'deep', tooDeepForTheWire() as never), 'pending', 'the add is not the accept answer');
    const error = await t.throwsAsync(bounded(accepting, 5_000, `the client's ${method}`));
    t.is((error as JobsError).code, 'invalid_job_data');
    t.is(await jobs.getJobState('mail', 'deep'), 'pending', 'the job went back, held by nobody otherwise');
  });
}

test.serial('a call whose answer the wire cannot carry fails, rather than leaving its caller waiting', async (t) => {
  const { jobs, connection } = await servedOwner(t);
  t.is(await jobs.add('mail', 'deep', tooDeepForTheWire() as never), 'pending');
  await t.throwsAsync(bounded(connection.call('getJobData', ['mail', 'deep']), 5_000, 'getJobData'), { message: /call stack/ });
  t.is(await connection.call('getJobState', ['mail', 'deep']), 'pending', 'the connection still serves');
});
