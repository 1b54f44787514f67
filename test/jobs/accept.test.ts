// accept under pressure: the batcher that shares one transaction among
// concurrent accepts must neither lose nor double-assign a job when its
// transaction conflicts, fails, or races close(); and accepts from two
// handles on one database (two batchers) still take each job once.

import test from 'ava';
import { FdbError, FdbErrorCode, Jobs, openJobs } from '@jobtree/core';
import type { Database, Job } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { enqueuePending } from '../../packages/core/src/jobs/pending-queue.js';
import { RecordingDatabase } from './recording-database.js';
import { openTempJobs, T1 } from './temp-jobs.js';

/** A one-shot switch: once armed, the next attempt that writes fails with `error`. */
function failNextWrite(error: () => FdbError) {
  const state = { armed: false, fired: 0 };
  return {
    state,
    wrap: (db: Database) =>
      new RecordingDatabase(db, {
        inject: (stats) => {
          if (!state.armed || stats.writes === 0) return undefined;
          state.armed = false;
          state.fired += 1;
          return error();
        },
      }),
  };
}

/** Holds the next transaction before it reaches the database until `release()`. */
function holdNextTransaction() {
  let armed = false;
  let release: () => void = () => {};
  let entered: () => void = () => {};
  const inFlight = new Promise<void>((resolve) => {
    entered = resolve;
  });
  return {
    arm: () => {
      armed = true;
    },
    inFlight,
    release: () => release(),
    beforeTransaction: (): Promise<void> | undefined => {
      if (!armed) return undefined;
      armed = false;
      entered();
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    },
  };
}

test('a batch whose transaction fails rejects its accepts and loses no job', async (t) => {
  const failure = failNextWrite(() => new FdbError(FdbErrorCode.operation_failed, 'injected'));
  const { jobs } = await openTempJobs(t, failure.wrap);
  const ids = Array.from({ length: 10 }, (_, i) => `j${i}`);
  for (const id of ids) await jobs.add(T1, id, { id });
  failure.state.armed = true;
  const results = await Promise.allSettled(ids.map(() => jobs.accept(T1)));
  t.is(failure.state.fired, 1);
  const rejected = results.filter((result) => result.status === 'rejected');
  const handles = results.flatMap((result) => (result.status === 'fulfilled' && result.value ? [result.value] : []));
  t.true(rejected.length >= 1, 'the accepts of the failed batch were rejected');
  for (const result of rejected) t.true(FdbError.is((result as PromiseRejectedResult).reason, 'operation_failed'));
  t.is(handles.length + rejected.length, ids.length);
  t.is(new Set(handles.map((job) => job.id)).size, handles.length, 'no job handed out twice');
  t.deepEqual((await jobs.getActiveJobIds(T1)).sort(), handles.map((job) => job.id).sort(), 'only handed-out jobs run');
  t.is(await jobs.pendingCount(T1), rejected.length, 'the failed batch left its jobs pending');
  const rest: Job[] = [];
  for (let job = await jobs.accept(T1); job; job = await jobs.accept(T1)) rest.push(job);
  t.deepEqual([...handles, ...rest].map((job) => job.id).sort(), [...ids].sort());
});

test('a batch retried after a conflict hands out the locks of the attempt that committed', async (t) => {
  const failure = failNextWrite(() => new FdbError(FdbErrorCode.not_committed, 'injected conflict'));
  const { jobs } = await openTempJobs(t, failure.wrap);
  for (let i = 0; i < 12; i++) await jobs.add(T1, `j${i}`, { i });
  failure.state.armed = true;
  const accepted = await Promise.all(Array.from({ length: 12 }, () => jobs.accept(T1)));
  t.is(failure.state.fired, 1, 'one attempt failed and was retried');
  t.is(new Set(accepted.map((job) => job?.id)).size, 12);
  t.is((await jobs.getActiveJobIds(T1)).length, 12, 'one activity row per job, none from the failed attempt');
  // A handle carrying the lock of the failed attempt would get halt here.
  const finished = await Promise.all(accepted.map((job) => jobs.finish(job!)));
  t.deepEqual(new Set(finished), new Set(['finished']));
});

test('a queue entry that does not match its job record is dropped, and the job is handed out once', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.add(T1, 'j', { v: 1 }, { scheduledTime: 10 });
  // A stray entry for the same job, ahead of its real one: after a crash of
  // some future writer, or a bug. One batch of two accepts reaches both.
  const keys = new JobKeys().forType(T1);
  await database.doTransaction((tx) => enqueuePending(tx, keys, 'j', 0, 5));
  // The first of three concurrent accepts runs alone and takes `first`; the
  // other two share the next transaction, which reaches both entries of j.
  await jobs.add(T1, 'first', {}, { scheduledTime: 1 });
  t.is(await jobs.pendingCount(T1), 3, 'three entries, two jobs');
  const accepted = await Promise.all([jobs.accept(T1), jobs.accept(T1), jobs.accept(T1)]);
  t.is(accepted[0]?.id, 'first');
  const handles = accepted.filter((job) => job?.id === 'j');
  t.is(handles.length, 1, 'j is handed out once');
  t.deepEqual((await jobs.getActiveJobIds(T1)).sort(), ['first', 'j'], 'one activity row each');
  t.is(await jobs.pendingCount(T1), 0, 'the stray entry was cleared');
  t.is(await jobs.finish(handles[0]!), 'finished');
});

test('a batch started while another commits passes over its picks, and accepts short behind them wait for it', async (t) => {
  let holdCommit: (() => Promise<void> | undefined) | undefined;
  let recorder: RecordingDatabase | undefined;
  const { jobs } = await openTempJobs(t, (db) => {
    recorder = new RecordingDatabase(db, { afterBody: () => holdCommit?.() });
    return recorder;
  });
  for (let i = 0; i < 12; i++) await jobs.add(T1, `j${i}`, { i });
  let release: () => void = () => {};
  let committing: () => void = () => {};
  const firstCommitting = new Promise<void>((resolve) => {
    committing = resolve;
  });
  holdCommit = () => {
    holdCommit = undefined; // only the first batch
    committing();
    return new Promise<void>((resolve) => {
      release = resolve;
    });
  };
  const attemptsBefore = recorder!.attempts;
  const transactionsBefore = recorder!.transactions;
  const first = jobs.accept(T1);
  await firstCommitting;
  // The first batch has picked one job and is held before its commit. A
  // pipelined batch serves these at once from the other eleven.
  let settledWhileHeld = 0;
  const others = Array.from({ length: 12 }, () =>
    jobs.accept(T1).then((job) => {
      settledWhileHeld += 1;
      return job;
    }),
  );
  const served = others.slice();
  const eleven: Array<Job | undefined> = [];
  while (eleven.length < 11) {
    const index = await Promise.race(served.map((promise, i) => promise.then(() => i)));
    eleven.push(await served[index]);
    served.splice(index, 1);
  }
  t.is(settledWhileHeld, 11, 'eleven accepts were served while the first batch was still committing');
  t.true(
    eleven.every((job) => job !== undefined),
    'none was told "no job" while the last pending job was only claimed',
  );
  release();
  const firstJob = await first;
  const last = await served[0];
  t.truthy(firstJob);
  t.is(last, undefined, 'the twelfth accept was answered after the first batch committed: the queue is empty');
  const ids = [firstJob, ...eleven].map((job) => job?.id);
  t.is(new Set(ids).size, 12, 'twelve different jobs');
  t.is(recorder!.attempts - attemptsBefore, recorder!.transactions - transactionsBefore, 'no attempt conflicted and was retried');
});

test('close() while an accept transaction is in flight ends the accept with closed, not a wait', async (t) => {
  const hold = holdNextTransaction();
  const { jobs } = await openTempJobs(t, (db) => new RecordingDatabase(db, { beforeTransaction: hold.beforeTransaction }));
  hold.arm();
  const blocked = jobs.accept(T1, { timeout: Number.POSITIVE_INFINITY });
  await hold.inFlight;
  await jobs.close();
  hold.release();
  // The database stays open (the handle shares it), so nothing else would end the wait.
  await t.throwsAsync(blocked, { code: 'closed' });
});

test('close() hands out no job to accepts still queued behind an in-flight batch', async (t) => {
  const hold = holdNextTransaction();
  let recorder: RecordingDatabase | undefined;
  const { jobs, database } = await openTempJobs(t, (db) => {
    recorder = new RecordingDatabase(db, { beforeTransaction: hold.beforeTransaction });
    return recorder;
  });
  await jobs.add(T1, 'a', {});
  await jobs.add(T1, 'b', {});
  hold.arm();
  const first = jobs.accept(T1);
  await hold.inFlight;
  const queued = jobs.accept(T1);
  await jobs.close();
  const transactionsAtClose = recorder!.transactions;
  hold.release();
  // The batch in flight committed its job: it is delivered, not dropped.
  t.truthy(await first);
  await t.throwsAsync(queued, { code: 'closed' });
  t.is(recorder!.transactions, transactionsAtClose, 'no transaction started after close()');
  const reader = await openJobs({ database });
  t.teardown(() => reader.close());
  t.is(await reader.pendingCount(T1), 1, 'the queued accept took nothing');
});

test('close() of a handle that owns its database turns the in-flight accept into closed', async (t) => {
  const { database } = await openTempJobs(t);
  const hold = holdNextTransaction();
  // A view of the shared database that this handle owns: closing it makes
  // later transactions fail the way a closed engine's do.
  let closed = false;
  const view: Database = {
    kind: database.kind,
    doTransaction: (body, options) =>
      closed
        ? Promise.reject(new FdbError(FdbErrorCode.client_invalid_operation, 'the database is closed'))
        : database.doTransaction(body, options),
    close: async () => {
      closed = true;
    },
  };
  const owning = new Jobs(new RecordingDatabase(view, { beforeTransaction: hold.beforeTransaction }), {
    ownsDatabase: true,
  });
  hold.arm();
  const blocked = owning.accept(T1, { timeout: 10_000 });
  await hold.inFlight;
  await owning.close();
  hold.release();
  await t.throwsAsync(blocked, { code: 'closed' });
});

test('two handles on one database (two batchers) still take each job exactly once', async (t) => {
  t.timeout(60_000);
  const { jobs, database } = await openTempJobs(t);
  const other = await openJobs({ database });
  t.teardown(() => other.close());
  const total = 400;
  await Promise.all(Array.from({ length: total }, (_, i) => jobs.add(T1, `j${i}`, { i })));
  const finishedBy = new Map<string, number>();
  const worker = async (handle: Jobs) => {
    for (let job = await handle.accept(T1); job; job = await handle.accept(T1)) {
      await handle.finish(job);
      finishedBy.set(job.id, (finishedBy.get(job.id) ?? 0) + 1);
    }
  };
  await Promise.all([...Array.from({ length: 4 }, () => worker(jobs)), ...Array.from({ length: 4 }, () => worker(other))]);
  t.is(finishedBy.size, total);
  t.true([...finishedBy.values()].every((times) => times === 1));
  t.is(await jobs.pendingCount(T1), 0);
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});
