// A rate limit holds in every window: at most `max` starts in any `perMs`
// milliseconds, not only in windows aligned on the epoch, for the type's
// rate and for each group's. Time comes from the clock the handle is opened
// with (`openJobs({ clock })`), so these tests move it by hand; a take held
// back by the rate wakes when starts leave the window; a store whose rate
// rows were written in the earlier form (an epoch-aligned window and its
// starts) opens and its limits keep working.

import test from 'ava';
import { JobsError, openJobs } from '@jobtree/core';
import type { Database, Jobs, JobsClock } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { openTempJobs, T1 } from './temp-jobs.js';

/** A clock a test moves by hand, from a whole second. */
class HandClock implements JobsClock {
  at = 1_800_000_000_000;
  now(): number {
    return this.at;
  }
}

async function withClock(t: Parameters<typeof openTempJobs>[0], clock: JobsClock): Promise<{ jobs: Jobs; database: Database }> {
  const { database } = await openTempJobs(t);
  const jobs = await openJobs({ database, clock });
  t.teardown(() => jobs.close());
  return { jobs, database };
}

async function addJobs(jobs: Jobs, count: number, group?: string): Promise<void> {
  const prefix = group ?? 'j';
  await jobs.addMany(
    T1,
    Array.from({ length: count }, (_, i) => ({ id: `${prefix}-${i}`, data: { i }, ...(group === undefined ? {} : { group }) })),
  );
}

async function take(jobs: Jobs, count: number): Promise<number> {
  const batch = await jobs.acceptMany(T1, count, { timeout: 0 });
  await Promise.all(batch.map((job) => jobs.finish(job)));
  return batch.length;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

test('a rate lets no more than its max start in a window that spans a boundary of epoch-aligned windows (system clock)', async (t) => {
  t.timeout(30_000);
  const { jobs } = await openTempJobs(t);
  const perMs = 500;
  await jobs.setTypeLimits(T1, { rate: { max: 5, perMs } });
  await addJobs(jobs, 20);
  // Late in an epoch-aligned window, then just after the next begins.
  while (Date.now() % perMs < 350 || Date.now() % perMs > 400) await sleep(5);
  const before = Date.now();
  t.is(await take(jobs, 10), 5);
  while (Date.now() % perMs > 100) await sleep(5);
  const second = await take(jobs, 10);
  if (Date.now() - before < perMs) t.is(second, 0, `${5 + second} starts within ${Date.now() - before} ms`);
  else t.pass('the run was too slow to cross the boundary within one window');
});

test('a rate counts starts in the window that ends now, on the clock the handle was opened with', async (t) => {
  const clock = new HandClock();
  const { jobs } = await withClock(t, clock);
  await jobs.setTypeLimits(T1, { rate: { max: 3, perMs: 1_000 } });
  await addJobs(jobs, 20);
  const start = clock.at;
  t.is(await take(jobs, 1), 1);
  clock.at = start + 400;
  t.is(await take(jobs, 10), 2);
  clock.at = start + 999;
  t.is(await take(jobs, 10), 0, 'three starts in the last second');
  // From here the epoch-aligned windows would have let 3 more start at once.
  clock.at = start + 1_000;
  t.is(await take(jobs, 10), 1, "the first start left the window; the other two have not");
  clock.at = start + 1_399;
  t.is(await take(jobs, 10), 0);
  clock.at = start + 1_400;
  t.is(await take(jobs, 10), 2);
  clock.at = start + 10_000;
  t.is(await take(jobs, 10), 3);
});

test('across a boundary of epoch-aligned windows, at most max start (hand clock)', async (t) => {
  const clock = new HandClock();
  const { jobs } = await withClock(t, clock);
  await jobs.setTypeLimits(T1, { rate: { max: 4, perMs: 1_000 } });
  await addJobs(jobs, 20);
  clock.at += 990;
  t.is(await take(jobs, 10), 4);
  clock.at += 20;
  t.is(await take(jobs, 10), 0, 'a new epoch-aligned window, but 4 starts in the last 20 ms');
  clock.at += 980;
  t.is(await take(jobs, 10), 4);
});

test("a take held back by the rate wakes once starts leave the window, by the clock's real time", async (t) => {
  t.timeout(30_000);
  // Runs 100 times faster than real time: a 10-second window lasts 100 real ms.
  const origin = Date.now();
  const clock: JobsClock = { now: () => origin + (Date.now() - origin) * 100, realMs: (ms) => ms / 100 };
  const { jobs } = await withClock(t, clock);
  const perMs = 10_000;
  await jobs.setTypeLimits(T1, { rate: { max: 2, perMs } });
  await addJobs(jobs, 3);
  const first = clock.now();
  t.is((await jobs.acceptMany(T1, 5, { timeout: 0 })).length, 2);
  const third = await jobs.accept(T1, { timeout: 20_000 });
  t.truthy(third, 'woken when the window let a start through');
  t.true(clock.now() - first >= perMs, `woken ${clock.now() - first} clock ms after the first starts`);
});

test('a group rate holds in every window, while other groups start', async (t) => {
  const clock = new HandClock();
  const { jobs } = await withClock(t, clock);
  await jobs.setTypeLimits(T1, { group: { rate: { max: 2, perMs: 1_000 } } });
  await addJobs(jobs, 6, 'busy');
  const start = clock.at;
  clock.at = start + 900;
  t.is(await take(jobs, 10), 2);
  await addJobs(jobs, 1, 'quiet');
  clock.at = start + 1_100;
  // Epoch-aligned windows would have let two more of `busy` start here.
  t.is(await take(jobs, 10), 1, "only the quiet group's job");
  clock.at = start + 1_899;
  t.is(await take(jobs, 10), 0);
  clock.at = start + 1_900;
  t.is(await take(jobs, 10), 2);
});

/** A rate row in the form stored before: an epoch-aligned window's start and its starts, two float64s. */
function windowRow(start: number, used: number): Buffer {
  const bytes = Buffer.alloc(16);
  bytes.writeDoubleLE(start, 0);
  bytes.writeDoubleLE(used, 8);
  return bytes;
}

test("a type's rate row in the earlier stored form is read as starts at the latest time they may have happened", async (t) => {
  const clock = new HandClock();
  const { jobs, database } = await withClock(t, clock);
  await jobs.setTypeLimits(T1, { rate: { max: 3, perMs: 1_000 } });
  await addJobs(jobs, 20);
  const keys = new JobKeys().forType(T1);
  // The window [at, at + 1000) had 2 starts; read at at + 500.
  const windowStart = clock.at;
  await database.doTransaction((tx) => tx.set(keys.rateWindow, windowRow(windowStart, 2)));
  clock.at = windowStart + 500;
  t.is(await take(jobs, 10), 1, 'the two starts count');
  clock.at = windowStart + 1_499;
  t.is(await take(jobs, 10), 0, 'the earlier starts are counted up to now, the latest they may have been');
  clock.at = windowStart + 1_500;
  t.is(await take(jobs, 10), 3);
  clock.at = windowStart + 2_499;
  t.is(await take(jobs, 10), 0, 'the row was rewritten in the current form and works on');
  clock.at = windowStart + 2_500;
  t.is(await take(jobs, 10), 3);
});

test("a group's rate row in the earlier stored form keeps its group's limit", async (t) => {
  const clock = new HandClock();
  const { jobs, database } = await withClock(t, clock);
  await jobs.setTypeLimits(T1, { group: { rate: { max: 2, perMs: 1_000 } } });
  await addJobs(jobs, 6, 'g');
  const keys = new JobKeys().forType(T1);
  const windowStart = clock.at;
  await database.doTransaction((tx) => tx.set(keys.groups.rateWindowKey('g'), windowRow(windowStart, 2)));
  clock.at = windowStart + 200;
  t.is(await take(jobs, 10), 0, 'the group used its rate in the stored window');
  clock.at = windowStart + 1_999;
  t.is(await take(jobs, 10), 0, 'the stored starts count up to the end of their window, the latest they may have been');
  clock.at = windowStart + 2_000;
  t.is(await take(jobs, 10), 2);
  // A stale row of a long-gone window holds nothing back.
  await database.doTransaction((tx) => tx.set(keys.groups.rateWindowKey('g'), windowRow(windowStart - 60_000, 2)));
  clock.at = windowStart + 5_000;
  t.is(await take(jobs, 10), 2);
});

test('a clock that is not { now(), realMs?() } is a typed error', async (t) => {
  const { database } = await openTempJobs(t);
  for (const clock of [5, {}, { now: 1 }, { now: () => 1, realMs: 2 }]) {
    await t.throwsAsync(openJobs({ database, clock: clock as never }), { instanceOf: JobsError, code: 'invalid_option' }, JSON.stringify(clock));
  }
});
