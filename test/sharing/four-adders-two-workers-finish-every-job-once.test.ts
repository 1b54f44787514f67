// Four adder processes (workers of Node's cluster module, as a web server in
// cluster mode) and two worker processes (app.process) on one embedded
// store: every job added is run once and finished once. One of the six owns
// the store and the others are its clients. 10,000 jobs by default, so that
// the suite stays fast; SHARING_FLEET_JOBS=100000 runs the size the feature
// is specified at.

import { join } from 'node:path';
import { openJobs } from '@jobtree/core';
import test from 'ava';
import { LoadProcess, exactlyOnceProblems, readRecords } from './fixtures/load-fleet.js';
import { bounded, tempDataDir } from './fixtures/peers.js';

const JOBS = Number(process.env.SHARING_FLEET_JOBS ?? 10_000);
const ADDERS = 4;
const WORKERS = 2;

test(`four adder processes and two worker processes on one store: each of ${JOBS} jobs is run once and finished once`, async (t) => {
  t.timeout(Math.max(120_000, JOBS * 6));
  const dir = await tempDataDir(t, 'four-adders');
  const path = join(dir, 'store');
  const recordDir = join(dir, 'records');
  const perAdder = Math.ceil(JOBS / ADDERS);

  const workers = await Promise.all(Array.from({ length: WORKERS }, () => LoadProcess.start(t, { mode: 'worker', path, recordDir })));
  const adders = await Promise.all(
    Array.from({ length: ADDERS }, (_, a) =>
      LoadProcess.start(t, { mode: 'adder', path, recordDir, cluster: true, args: ['--prefix', `a${a}-`, '--count', String(perAdder), '--window', '16'] }),
    ),
  );
  const roles = [...workers, ...adders].map((member) => member.role);
  t.is(roles.filter((role) => role === 'owner').length, 1, `roles: ${roles.join(', ')}`);

  for (const adder of adders) adder.send('go');
  const added = await Promise.all(adders.map((adder) => adder.next('added', Math.max(90_000, JOBS * 4))));
  t.deepEqual(
    added.map((report) => [report.acked, report.failed]),
    adders.map(() => [perAdder, 0]),
  );

  // Drained: nothing pending or running (read through a client, which never takes the store over).
  const observer = await openJobs({ path, role: 'client', ownerWaitMs: 30_000 });
  t.teardown(() => observer.close());
  const drainDeadline = Date.now() + Math.max(60_000, JOBS * 3);
  while ((await observer.pendingCount('load')) + (await observer.getActiveJobIds('load')).length > 0) {
    if (Date.now() > drainDeadline) throw new Error(`not drained: ${await observer.pendingCount('load')} pending`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await observer.close();
  await bounded(Promise.all([...adders, ...workers].map((member) => member.stop())), 60_000, 'the processes to stop');

  const jobs = await openJobs({ path });
  const infos = await jobs.getJobs('load').finally(() => jobs.close());
  const records = readRecords(recordDir);
  t.is(records.acked.size, ADDERS * perAdder);
  t.is(infos.length, ADDERS * perAdder);
  t.is([...records.runs.values()].reduce((sum, runs) => sum + runs.length, 0), ADDERS * perAdder, 'one run per job');
  t.deepEqual(exactlyOnceProblems(records, infos).slice(0, 20), []);
});
