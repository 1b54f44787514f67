// Once a write attempt has taken jobs for a parked accept, that accept
// belongs to the attempt until its commit's outcome is known: its signal,
// its timeout, close() or a failed watch arriving meanwhile do not end it
// empty-handed, as they do not end an accept whose own transaction is
// running. Otherwise the job would be running in the store under a lock
// nobody holds. A handle that owns its database closes it under the write:
// then the add's answer, the accept's answer and the store still agree. And
// while one write holds a claimed accept, another write serves the next.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { checkJobsConsistency, FdbError, FdbErrorCode, Jobs, JobsError, openDatabase, openJobs } from '@jobtree/core';
import type { Job } from '@jobtree/core';
import { T1 } from '../temp-jobs.js';
import { FailingWatches } from './failing-watches.js';
import { ADD_AND_HANDOVER_WRITES, openHandoverJobs, recordHandovers, settledYet } from './handover-setup.js';

test('an accept whose signal aborts after the add took its job still gets the job', async (t) => {
  const { jobs, db, parked, duringAttempt } = await openHandoverJobs(t);
  const controller = new AbortController();
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000, signal: controller.signal });
  await parked(watches);
  duringAttempt(ADD_AND_HANDOVER_WRITES, () => controller.abort());
  await jobs.add(T1, 'mine', {});
  t.true(controller.signal.aborted);
  const job = await accepting;
  t.is(job?.id, 'mine');
  t.is(await jobs.finish(job!), 'finished', 'the lock it got is the one in the store');
});

// Serial, with a timeout of a second: the accept must not time out before the add takes its job, even on a loaded machine.
test.serial('an accept whose timeout passes while the add that took its job commits still gets the job', async (t) => {
  const { jobs, db, parked, duringAttempt } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 1_000 });
  await parked(watches);
  duringAttempt(ADD_AND_HANDOVER_WRITES, () => {
    const until = performance.now() + 1_100;
    while (performance.now() < until);
  });
  await jobs.add(T1, 'mine', {});
  const job = await accepting;
  t.is(job?.id, 'mine');
  t.deepEqual(await jobs.getActiveJobIds(T1), ['mine']);
  t.is(await jobs.finish(job!), 'finished');
});

test('close() while the add that took a job for a parked accept commits delivers the job', async (t) => {
  const { jobs, db, parked, duringAttempt } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  const other = jobs.accept('other', { timeout: 60_000 });
  await parked(watches);
  let closing: Promise<void> | undefined;
  duringAttempt(ADD_AND_HANDOVER_WRITES, () => {
    closing = jobs.close();
  });
  t.is(await jobs.add(T1, 'mine', {}), 'pending');
  t.is((await accepting)?.id, 'mine', 'committed: delivered, as by an accept already in its transaction');
  t.true(JobsError.is(await t.throwsAsync(other), 'closed'), 'an accept nobody served ends with closed');
  await closing;
  t.deepEqual((await checkJobsConsistency(db)).anomalies, []);
});

test('while one add holds a claimed accept, a second add serves the next parked accept; each gets its own job', async (t) => {
  const { jobs, db, parked, holdAttemptAt, durableCommits } = await openHandoverJobs(t);
  let watches = db.calls.watches;
  const first = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  watches = db.calls.watches;
  const second = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'one', {});
  await held.reached;
  const commits = durableCommits();
  t.is(await jobs.add(T1, 'two', {}), 'pending');
  t.is((await second)?.id, 'two', 'served by the second add, in its commit');
  t.is(durableCommits() - commits, 1);
  t.false(await settledYet(first), 'the first still waits for the add that claimed it');
  held.release();
  t.is(await adding, 'pending');
  t.is((await first)?.id, 'one');
  t.deepEqual((await jobs.getActiveJobIds(T1)).sort(), ['one', 'two']);
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('close() of a handle that owns its database while a claimed accept\'s add commits leaves no job running unowned', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-handover-close-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { database, db, parked, holdAttemptAt } = recordHandovers(await openDatabase({ path: dir }));
  const jobs = new Jobs(database, { ownsDatabase: true });
  await jobs.setTypeTimeout(T1, 600);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 }).then(
    (job) => ({ job, error: undefined }),
    (error: unknown) => ({ job: undefined as Job | undefined, error }),
  );
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'closing', {}).then(
    (state) => ({ state, error: undefined }),
    (error: unknown) => ({ state: undefined, error }),
  );
  await held.reached;
  const closing = jobs.close();
  held.release();
  const added = await adding;
  const accepted = await accepting;
  await closing;

  const reopened = await openJobs({ path: dir });
  t.teardown(() => reopened.close());
  const state = await reopened.getJobState(T1, 'closing');
  t.log(`add: ${String(added.state ?? added.error)}, accept: ${accepted.job?.id ?? String(accepted.error)}, store: ${String(state)}`);
  if (accepted.job !== undefined) {
    t.is(state, 'running', 'delivered: running under the lock the accept returned');
    t.is(await reopened.finish(accepted.job), 'finished');
  } else {
    t.not(state, 'running', 'no accept returned the job: it must not be running');
  }
  if (added.error !== undefined) t.is(state, undefined, 'an add that failed wrote nothing');
  t.deepEqual((await checkJobsConsistency(reopened.database)).anomalies, []);
});

test('an accept whose watch fails while the add that claimed it commits still returns the job', async (t) => {
  let failing: FailingWatches | undefined;
  const { jobs, db, parked, holdAttemptAt } = await openHandoverJobs(t, (inner) => {
    failing = new FailingWatches(inner);
    return failing;
  });
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 }).then(
    (job) => ({ job, error: undefined as unknown }),
    (error: unknown) => ({ job: undefined, error }),
  );
  await parked(watches);
  const held = holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = jobs.add(T1, 'claimed', {});
  await held.reached;
  // The add took the job for the accept and waits to commit; the accept's watch fails now.
  (failing as FailingWatches).failers.at(-1)?.(new FdbError(FdbErrorCode.operation_failed, 'injected watch failure (FoundationDB: too_many_watches, 1032)'));
  held.release();
  t.is(await adding, 'pending');
  const accepted = await accepting;
  const active = await jobs.getActiveJobIds(T1);
  t.log(`accept: ${accepted.job?.id ?? String(accepted.error)}, running: ${active.join() || 'none'}`);
  if (accepted.job === undefined) {
    t.deepEqual(active, [], 'the accept returned no job: none may be running under a lock nobody holds');
  } else {
    t.is(accepted.job.id, 'claimed');
    t.is(await jobs.finish(accepted.job), 'finished');
  }
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});
