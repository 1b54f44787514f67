// An accept held back by a full group waits for a run of that group to end.
// A commit that ends such a run and, in the same commit, starts a job of
// another group (a parked accept served by the finish) leaves the type's
// running count as it was: the held accept of the other handle must wake
// for the slot all the same. The groups' rate (on a clock moved by hand)
// keeps the other group's job from starting before that commit, and its
// timer is far off, so only a wake can let the held accept through.

import test from 'ava';
import { openJobs } from '@jobtree/core';
import type { Database, Job, JobsClock } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { openTempJobs, T1 } from './temp-jobs.js';
import { ACCEPT_TIMEOUT_MS, heldAccept, woken } from './held-accept.js';

/** The groups' rate window: a take held by it waits this long by its timer. */
const WINDOW_MS = 600_000;

test('a finish that frees a group slot while a parked accept of its commit starts a job of another group wakes the held accepts of other handles', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  let now = 1_000_000;
  const clock: JobsClock = { now: () => now };
  const finisher = await openJobs({ database, clock });
  const waiter = await openJobs({ database, clock });
  t.teardown(async () => {
    await finisher.close();
    await waiter.close();
  });
  await jobs.setTypeLimits(T1, { group: { concurrency: 1, rate: { max: 2, perMs: WINDOW_MS } } });
  await jobs.add(T1, 'a0', {}, { group: 'a' });
  await jobs.add(T1, 'b1', {}, { group: 'b' });
  const started = await finisher.acceptMany(T1, 2, { timeout: 0 });
  t.deepEqual(started.map((job) => job.id).sort(), ['a0', 'b1']);
  const [a0, b1] = (['a0', 'b1'] as const).map((id) => started.find((job) => job.id === id) as Job);
  await finisher.finish(a0 as Job);
  await jobs.add(T1, 'a2', {}, { group: 'a' });
  const a2 = await finisher.accept(T1, { timeout: 0 });
  t.is(a2?.id, 'a2');
  await finisher.finish(a2 as Job);
  // Group a is held by its rate (two starts in the window), group b by its concurrency alone (b1 runs).
  await jobs.add(T1, 'a1', {}, { group: 'a' });
  await jobs.add(T1, 'b2', {}, { group: 'b' });
  const held = await heldAccept(t, waiter);
  const parked = await heldAccept(t, finisher);
  now += WINDOW_MS + 1;
  // Ends b1's run; the finisher's parked accept takes one of a1 and b2 in the same commit.
  await finisher.finish(b1 as Job);
  const [byParked, byHeld] = await Promise.all([woken(parked.taken), woken(held.taken)]);
  t.not(byParked, 'not woken');
  t.not(byHeld, 'not woken', "the other handle's held accept slept through the slot the finish freed");
  if (byParked !== 'not woken' && byHeld !== 'not woken') t.deepEqual([...byParked, ...byHeld].sort(), ['a1', 'b2']);
});

async function endedRuns(database: Database): Promise<bigint> {
  const value = await database.doTransaction((tx) => tx.get(new JobKeys().forType(T1).groups.endedRuns));
  return value === undefined ? 0n : value.readBigInt64LE(0);
}

test("a finish whose parked accept takes its group's next job in the same commit frees no slot; a finish that leaves the slot free counts one", async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { group: { concurrency: 1 } });
  await jobs.add(T1, 'g1', {}, { group: 'g' });
  await jobs.add(T1, 'g2', {}, { group: 'g' });
  const first = await jobs.accept(T1, { timeout: 0 });
  t.is(first?.id, 'g1');
  const waiting = jobs.acceptMany(T1, 1, { timeout: ACCEPT_TIMEOUT_MS });
  t.deepEqual(await jobs.acceptMany(T1, 1, { timeout: 0 }), []);
  const before = await endedRuns(database);
  await jobs.finish(first as Job);
  const [second] = await waiting;
  t.is(second?.id, 'g2');
  t.is(await endedRuns(database), before, 'the slot the finish freed was taken in its own commit');
  await jobs.finish(second as Job);
  t.is(await endedRuns(database), before + 1n);
});
