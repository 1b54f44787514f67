// Group limits with two jobs handles on one store (as an app's processors
// and its other handles open them): accepts that a full group holds back
// wait for a slot and never fail with a storage conflict, however many
// finishes and takes of the other handle commit meanwhile, and two takes
// can never both fill a group's last slot.

import test from 'ava';
import { openJobs } from '@jobtree/core';
import type { Jobs } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

test('16 accept loops over two handles drain 1,000 jobs of one group under group concurrency 4, and no accept fails', async (t) => {
  t.timeout(120_000);
  const { jobs, database } = await openTempJobs(t);
  const other = await openJobs({ database });
  t.teardown(() => other.close());
  await jobs.setTypeLimits(T1, { group: { concurrency: 4 } });
  const count = 1_000;
  await jobs.addMany(
    T1,
    Array.from({ length: count }, (_, i) => ({ id: `j${i}`, group: 'g' })),
  );
  const handles = [jobs, other];
  let finished = 0;
  // Counted from an accept's return to its finish's call: never more than the store holds running.
  let running = 0;
  let most = 0;
  await Promise.all(
    Array.from({ length: 16 }, async (_, loop) => {
      const handle = handles[loop % 2] as Jobs;
      while (finished < count) {
        const [job] = await handle.acceptMany(T1, 1, { timeout: 200 });
        if (job === undefined) continue;
        running += 1;
        most = Math.max(most, running);
        // The handler's work: a turn in which the other loops run.
        await new Promise(setImmediate);
        running -= 1;
        await handle.finish(job);
        finished += 1;
      }
    }),
  );
  t.is(finished, count);
  t.true(most <= 4, `${most} jobs of the group ran at once`);
  t.deepEqual(await jobs.acceptMany(T1, 10, { timeout: 0 }), []);
});

test("two handles racing for a group's last slot: one of them takes it, the other gets nothing", async (t) => {
  const { jobs, database } = await openTempJobs(t);
  const other = await openJobs({ database });
  t.teardown(() => other.close());
  await jobs.setTypeLimits(T1, { group: { concurrency: 2 } });
  const rounds = 20;
  await jobs.addMany(
    T1,
    Array.from({ length: rounds * 2 + 1 }, (_, i) => ({ id: `j${i}`, group: 'g' })),
  );
  const [first] = await jobs.acceptMany(T1, 1, { timeout: 0 });
  t.not(first, undefined);
  for (let round = 0; round < rounds; round++) {
    // Both takes start in one turn: they read the same version, one slot free.
    const [mine, theirs] = await Promise.all([jobs.accept(T1, { timeout: 0 }), other.accept(T1, { timeout: 0 })]);
    const taken = [mine, theirs].filter((job) => job !== undefined);
    t.is(taken.length, 1, `round ${round}: ${taken.length} takes filled the last slot`);
    t.is((await jobs.getActiveJobIds(T1)).length, 2);
    if (mine !== undefined) await jobs.finish(mine);
    if (theirs !== undefined) await other.finish(theirs);
  }
});
