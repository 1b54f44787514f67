// The processors' scheduler waits for jobs in an acceptMany with a timeout:
// an add of the scheduler's own jobs handle serves that accept, so the job
// starts on a handler once the add's one commit is readable (before its
// sync, with the default durability), with no accept transaction of the
// scheduler's in between, and finishes as usual.

import test from 'ava';
import { startScheduler } from '../../../packages/jobtree/src/processors/index.js';
import { fixture } from '../../processors/scheduler-harness.js';
import { openHandoverJobs } from './handover-setup.js';

const TYPE = 'scheduled';

test('an idle scheduler\'s waiting accept is served by the add: the job starts after that one commit', async (t) => {
  const { jobs, db, parked, durableCommits } = await openHandoverJobs(t);
  await jobs.setTypeTimeout(TYPE, 60);
  const watches = db.calls.watches;
  // A wait long enough not to end and re-arm between the checks below, and
  // short enough for stop(), which waits for the scheduler's blocking accept.
  const scheduler = await startScheduler({ jobs, type: TYPE, handler: fixture('noop'), threads: 1, acceptWaitMs: 5_000 });
  t.teardown(() => scheduler.stop({ graceMs: 100 }));
  await parked(watches);
  const transactions = db.transactions;
  const commits = durableCommits();
  let startedAfter: number | undefined;
  const started = new Promise<void>((resolve) => {
    scheduler.events.once('job:started', () => {
      startedAfter = db.transactions - transactions;
      resolve();
    });
  });
  const finished = new Promise<void>((resolve) => scheduler.events.once('job:finished', () => resolve()));
  await jobs.add(TYPE, 's1', { n: 1 });
  t.is(durableCommits() - commits, 1, 'the add is one commit');
  await started;
  // Its sync may still have been running then: a take need not be durable.
  t.is(startedAfter, 1, 'the add alone, before the job started');
  await finished;
  const check = async () => (await jobs.getJobState(TYPE, 's1')) === 'finished';
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  t.is(await jobs.getJobState(TYPE, 's1'), 'finished');
});
