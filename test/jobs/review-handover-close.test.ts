// close() of a handle that owns its database, while an add that took a job
// for a parked accept waits to commit: the database closes under the add.
// Whatever the commit's fate, the add's answer, the accept's answer and the
// store agree: the job is delivered to the accept, or it was never written,
// or (the add having committed) it waits pending. It is never running under
// a lock that no accept returned.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { checkJobsConsistency, Jobs, openDatabase, openJobs } from '@jobtree/core';
import type { Job } from '@jobtree/core';
import { RecordingDatabase } from './recording-database.js';
import { ADD_AND_HANDOVER_WRITES } from './review-handover-setup.js';
import { T1 } from './temp-jobs.js';
import { deferred } from '../deferred.js';

test('close() of a handle that owns its database while a claimed accept\'s add commits leaves no job running unowned', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-review-close-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  let arm = false;
  let holding = false;
  const { promise: atCommit, resolve: reached } = deferred();
  const { promise: hold, resolve: release } = deferred();
  const db = new RecordingDatabase(await openDatabase({ path: dir }), {
    inject: (stats) => {
      if (arm && stats.writes >= ADD_AND_HANDOVER_WRITES) {
        arm = false;
        holding = true;
      }
      return undefined;
    },
    afterBody: () => {
      if (!holding) return undefined;
      holding = false;
      reached();
      return hold;
    },
  });
  const jobs = new Jobs(db, { ownsDatabase: true });
  await jobs.setTypeTimeout(T1, 600);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 }).then(
    (job) => ({ job, error: undefined }),
    (error: unknown) => ({ job: undefined as Job | undefined, error }),
  );
  while (db.calls.watches === watches) await new Promise((resolve) => setTimeout(resolve, 5));
  await new Promise((resolve) => setTimeout(resolve, 20));
  arm = true;
  const adding = jobs.add(T1, 'closing', {}).then(
    (state) => ({ state, error: undefined }),
    (error: unknown) => ({ state: undefined, error }),
  );
  await atCommit;
  const closing = jobs.close();
  release();
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
