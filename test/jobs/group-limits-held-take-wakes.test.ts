// A take of several accepts that a full group holds back, after taking
// jobs of other groups: a finish of the full group that commits between the
// take's read and its commit frees a slot the take did not see. The take
// either runs again and takes that slot, or leaves a watch that fires for
// it; the accepts left waiting never sleep through a free slot.

import test from 'ava';
import type { Transaction } from '@jobtree/core';
import type { AcceptBatch } from '../../packages/core/src/jobs/accept-batcher.js';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { acceptJobs } from '../../packages/core/src/jobs/job-transitions.js';
import { openTempJobs, T1 } from './temp-jobs.js';

/** Whether `promise` resolves `true` within `ms`. */
async function firesWithin(promise: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

test('a take held by a full group, whose slot a finish frees before the take commits, takes the slot or wakes for it', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { group: { concurrency: 1 } });
  await jobs.add(T1, 'g1', {}, { group: 'g' });
  const running = await jobs.accept(T1, { timeout: 0 });
  t.is(running?.id, 'g1');
  await jobs.add(T1, 'g2', {}, { group: 'g' });
  await jobs.add(T1, 'h1', {}, { group: 'h' });
  const keys = new JobKeys().forType(T1);
  let finished = false;
  // Two accepts in one take, as the accept batcher runs them: each asks for a job and waits for one.
  const batch = await database.doTransaction(async (tx: Transaction): Promise<{ batch: AcceptBatch }> => {
    const taken = await acceptJobs(tx, keys, undefined, 2, 2, Date.now());
    if (!finished && running !== undefined) {
      finished = true;
      await jobs.finish(running);
    }
    return { batch: taken };
  });
  const ids = batch.batch.jobs.map((job) => job.id).sort();
  if (ids.includes('g2')) {
    t.deepEqual(ids, ['g2', 'h1']);
    t.is(batch.batch.watch, undefined);
  } else {
    t.deepEqual(ids, ['h1']);
    const watch = batch.batch.watch;
    t.not(watch, undefined);
    t.true(await firesWithin(watch?.promise ?? Promise.resolve(false), 2_000), "the waiting accept's watch did not fire for the freed slot");
    watch?.cancel();
  }
});
