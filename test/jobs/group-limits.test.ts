// Groups of a job type (the `group` job option): limits that hold for each
// group on its own across every handle on the store (`setTypeLimits(type,
// { group: { concurrency, rate } })`), slots that come back with every way a
// job stops running (the activity monitor's re-enqueue of a dead worker's
// jobs included), and fair turns: a group's backlog keeps no other group's
// job waiting for more than one turn of the groups with jobs waiting.

import test from 'ava';
import { checkJobsConsistency, JobsError, LocalQueue, openJobs } from '@jobtree/core';
import type { Job, Jobs } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

/** Takes and finishes jobs `batch` at a time until none is left (or `upTo` started); returns the groups in the order their jobs started. */
async function drain(jobs: Jobs, batch: number, upTo = Number.POSITIVE_INFINITY): Promise<string[]> {
  const started: string[] = [];
  while (started.length < upTo) {
    const taken = await jobs.acceptMany(T1, batch, { timeout: 0 });
    if (taken.length === 0) return started;
    for (const job of taken) started.push(job.group ?? '(none)');
    await jobs.finishMany(taken.map((job) => ({ job })));
  }
  return started;
}

async function addBacklogAndSingles(jobs: Jobs, backlog: number, singles: number): Promise<void> {
  await jobs.addMany(T1, Array.from({ length: backlog }, (_, i) => ({ id: `big-${i}`, group: 'big' })));
  await jobs.addMany(T1, Array.from({ length: singles }, (_, i) => ({ id: `single-${i}`, group: `g${i}` })));
}

/** The index (from 1) of the start by which every single-job group had started. */
function lastSingleStart(started: string[], singles: number): number {
  let last = 0;
  for (let i = 0; i < singles; i++) last = Math.max(last, started.indexOf(`g${i}`) + 1);
  return last;
}

test('with group concurrency 1, a backlog of 2,000 in one group keeps none of 50 single-job groups out of the first 51 starts', async (t) => {
  t.timeout(120_000);
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { group: { concurrency: 1 } });
  await addBacklogAndSingles(jobs, 2_000, 50);
  // 8 at a time, as 8 handlers take them: the first 100 starts or so, then the rest waits.
  const started = await drain(jobs, 8, 100);
  t.true(lastSingleStart(started, 50) <= 51, `the last single-job group started at start ${lastSingleStart(started, 50)}`);
  t.is(await jobs.pendingCount(T1), 2_050 - started.length, 'the backlog waits in its group');
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('without group limits, groups still take turns: one job per group and turn', async (t) => {
  const { jobs } = await openTempJobs(t);
  await addBacklogAndSingles(jobs, 500, 20);
  const started = await drain(jobs, 4);
  t.is(started.length, 520);
  t.true(lastSingleStart(started, 20) <= 21, `the last single-job group started at start ${lastSingleStart(started, 20)}`);
  // The backlog runs on alone once the others are done.
  t.deepEqual(started.slice(21), Array(499).fill('big'));
});

test('jobs without a group take their turns as one more group beside the groups', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, Array.from({ length: 100 }, (_, i) => ({ id: `plain-${i}` })));
  await addBacklogAndSingles(jobs, 100, 5);
  const started = await drain(jobs, 1);
  t.is(started.length, 205);
  t.true(lastSingleStart(started, 5) <= 7, started.slice(0, 10).join(','));
  t.true(started.slice(0, 7).includes('(none)'), 'the ungrouped queue had its turn');
  t.true(started.slice(0, 7).includes('big'));
});

test('group concurrency 2 holds across two handles on one store, per group, and every job finishes', async (t) => {
  t.timeout(60_000);
  const { jobs, database } = await openTempJobs(t);
  // A second handle on the same store stands for a second process.
  const other = await openJobs({ database });
  t.teardown(() => other.close());
  await jobs.setTypeLimits(T1, { group: { concurrency: 2 } });
  const groups = ['a', 'b', 'c'];
  await jobs.addMany(
    T1,
    groups.flatMap((group) => Array.from({ length: 10 }, (_, i) => ({ id: `${group}${i}`, group }))),
  );
  const most = new Map<string, number>();
  let runs = 0;
  const queues = [new LocalQueue(jobs, T1, { size: 4 }), new LocalQueue(other, T1, { size: 4 })];
  const work = async (queue: LocalQueue<typeof T1>) => {
    for (let job = await queue.take(); job !== undefined; job = await queue.take()) {
      // Running jobs of each group as the store holds them (ids start with their group).
      const active = await jobs.getActiveJobIds(T1);
      for (const group of groups) most.set(group, Math.max(most.get(group) ?? 0, active.filter((id) => id.startsWith(group)).length));
      await new Promise((resolve) => setTimeout(resolve, 3));
      await queue.finish(job);
      runs += 1;
      if (runs === 30) for (const each of queues) void each.stop();
    }
  };
  await Promise.all([work(queues[0]!), work(queues[0]!), work(queues[0]!), work(queues[1]!), work(queues[1]!), work(queues[1]!)]);
  await Promise.all(queues.map((queue) => queue.stop()));
  t.is(runs, 30);
  for (const group of groups) t.true((most.get(group) ?? 0) <= 2, `group ${group} had ${most.get(group)} running at once`);
  t.true([...most.values()].some((count) => count === 2), 'some group used both its slots');
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('a take held by group concurrency takes from other groups, and a held group waits for its finish', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { group: { concurrency: 1 } });
  await jobs.addMany(T1, [
    { id: 'a1', group: 'a' },
    { id: 'a2', group: 'a' },
    { id: 'b1', group: 'b' },
  ]);
  const first = await jobs.acceptMany(T1, 10, { timeout: 0 });
  t.deepEqual(first.map((job) => job.id).sort(), ['a1', 'b1'].filter((id) => first.some((job) => job.id === id)).sort());
  t.is(first.length, 2, 'one job of each group');
  t.deepEqual(await jobs.acceptMany(T1, 10, { timeout: 0 }), [], "a2 waits for its group's slot");
  const waiting = jobs.accept(T1, { timeout: 20_000 });
  await new Promise((resolve) => setTimeout(resolve, 50));
  await jobs.finish(first.find((job) => job.group === 'a') as Job);
  t.is((await waiting)?.id, 'a2', 'the finish woke the waiting take');
});

test("a dead holder's group slots come back when the activity monitor re-enqueues its jobs", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { group: { concurrency: 1 } });
  await jobs.addMany(T1, [
    { id: 'a1', group: 'a' },
    { id: 'a2', group: 'a' },
    { id: 'b1', group: 'b' },
  ]);
  // Taken by a worker that then goes away without finishing them.
  const held = await jobs.acceptMany(T1, 10, { timeout: 0 });
  t.is(held.length, 2);
  t.deepEqual(await jobs.acceptMany(T1, 10, { timeout: 0 }), []);
  const since = await jobs.getActivityVersionstamp(T1);
  t.deepEqual((await jobs.reEnqueueInactive(T1, since!)).sort(), held.map((job) => job.id).sort());
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, [], 'counters and turns are exact after the re-enqueue');
  const again = await jobs.acceptMany(T1, 10, { timeout: 0 });
  t.is(again.length, 2, "both groups' slots are free again");
  t.deepEqual(new Set(again.map((job) => job.group)), new Set(['a', 'b']));
});

test('every way a grouped job stops running gives its group slot back, and a group survives a reopen', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { group: { concurrency: 1 } });
  await jobs.addMany(T1, Array.from({ length: 6 }, (_, i) => ({ id: `a${i}`, group: 'a' })));
  const one = async (): Promise<Job> => {
    const job = await jobs.accept(T1, { timeout: 0 });
    t.truthy(job);
    t.is(await jobs.accept(T1, { timeout: 0 }), undefined);
    return job as Job;
  };
  await jobs.fail(await one(), { message: 'no' });
  await jobs.cancel(T1, (await one()).id);
  await jobs.remove(T1, (await one()).id);
  await jobs.failAttempt(await one(), { scheduledTime: 0 });
  await jobs.complete(await one());
  // Another handle (a restarted process) finds the group and its limit in the store.
  const reopened = await openJobs({ database });
  t.teardown(() => reopened.close());
  const rest: Job[] = [];
  for (let job = await reopened.accept(T1, { timeout: 0 }); job !== undefined; job = await reopened.accept(T1, { timeout: 0 })) {
    t.is(job.group, 'a');
    rest.push(job);
    await reopened.finish(job);
  }
  t.is(rest.length, 2, 'the retried job and the last one');
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('a group rate lets no group start more than its max in a window, while other groups start', async (t) => {
  const { jobs } = await openTempJobs(t);
  // A day-long window (aligned on the epoch): the test ends well within one.
  await jobs.setTypeLimits(T1, { group: { rate: { max: 2, perMs: 86_400_000 } } });
  await jobs.addMany(T1, [
    ...Array.from({ length: 5 }, (_, i) => ({ id: `a${i}`, group: 'a' })),
    ...Array.from({ length: 5 }, (_, i) => ({ id: `b${i}`, group: 'b' })),
  ]);
  const taken = await jobs.acceptMany(T1, 10, { timeout: 0 });
  t.is(taken.length, 4);
  await jobs.finishMany(taken.map((job) => ({ job })));
  t.deepEqual(await jobs.acceptMany(T1, 10, { timeout: 0 }), [], 'both groups used their starts for this window');
  t.deepEqual(
    taken.map((job) => job.group).sort(),
    ['a', 'a', 'b', 'b'],
  );
});

test('a pending job added again with another group moves to it; a running one keeps its group', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { group: { concurrency: 1 } });
  await jobs.addMany(T1, [
    { id: 'x', group: 'a' },
    { id: 'y', group: 'a' },
  ]);
  const x = await jobs.accept(T1, { timeout: 0 });
  t.is(x?.id, 'x');
  await jobs.add(T1, 'y', null, { group: 'b' });
  await jobs.add(T1, 'x', null, { group: 'b' });
  const y = await jobs.accept(T1, { timeout: 0 });
  t.is(y?.id, 'y', 'y left the full group a');
  t.is(y?.group, 'b');
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
  t.is(await jobs.finish(x as Job), 'pending', 'x was added again while it ran');
  t.is(await jobs.finish(y as Job), 'finished');
  const again = await jobs.accept(T1, { timeout: 0 });
  t.is(again?.id, 'x');
  t.is(again?.group, 'a', 'x kept the group it ran in');
  t.like(await jobs.getJob(T1, 'y'), { state: 'finished', group: 'b' });
});

test('bad groups and bad group limits are typed errors', async (t) => {
  const { jobs } = await openTempJobs(t);
  for (const group of ['', 5, null, 'x'.repeat(257), '\ud800', { name: 'a' }]) {
    await t.throwsAsync(jobs.add(T1, 'j', null, { group } as never), { instanceOf: JobsError, code: 'invalid_group' }, String(group));
    await t.throwsAsync(jobs.addMany(T1, [{ id: 'j', group } as never]), { instanceOf: JobsError, code: 'invalid_group' });
  }
  t.is(await jobs.getJob(T1, 'j'), undefined, 'nothing was added');
  const bad: unknown[] = [{ group: {} }, { group: 2 }, { group: { concurrency: 0 } }, { group: { rate: { max: 1 } } }, { group: { burst: 1 } }];
  for (const limits of bad) {
    await t.throwsAsync(jobs.setTypeLimits(T1, limits as never), { instanceOf: JobsError, code: 'invalid_limits' }, JSON.stringify(limits));
  }
  await jobs.setTypeLimits(T1, { group: { concurrency: 3, rate: { max: 10, perMs: 1_000 } } });
  t.deepEqual(await jobs.getTypeLimits(T1), { group: { concurrency: 3, rate: { max: 10, perMs: 1_000 } } });
});

test('a grouped job scheduled later waits for its time while due jobs of its group and others start', async (t) => {
  const { jobs } = await openTempJobs(t);
  const inAnHour = Date.now() / 1000 + 3_600;
  await jobs.addMany(T1, [
    { id: 'later', group: 'a', scheduledTime: inAnHour, priority: 5 },
    { id: 'now-a', group: 'a' },
    { id: 'now-b', group: 'b' },
  ]);
  const taken = await jobs.acceptMany(T1, 10, { timeout: 0 });
  t.deepEqual(taken.map((job) => job.id).sort(), ['now-a', 'now-b']);
  t.deepEqual(await jobs.acceptMany(T1, 10, { timeout: 0 }), []);
  t.is(await jobs.pendingCount(T1), 1);
  t.is(await jobs.pendingCount(T1, { maxSchedTime: Date.now() / 1000 }), 0);
  const late = await jobs.accept(T1, { maxSchedTime: inAnHour + 1 });
  t.is(late?.id, 'later');
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});

test('with group concurrency 1 and many groups with a backlog, 8 accepts at once fill 8 slots from 8 groups', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T1, { group: { concurrency: 1 } });
  await jobs.addMany(
    T1,
    Array.from({ length: 20 }, (_, g) => Array.from({ length: 5 }, (_, i) => ({ id: `g${g}-${i}`, group: `g${g}` }))).flat(),
  );
  // As 8 handlers ask, each for one job: the takes in flight at once serve different groups.
  const taken = await Promise.all(Array.from({ length: 8 }, () => jobs.accept(T1, { timeout: 0 })));
  const groups = taken.map((job) => job?.group);
  t.false(groups.includes(undefined), `every accept got a job: ${groups.join(',')}`);
  t.is(new Set(groups).size, 8, 'one job of each of 8 groups');
  t.is((await jobs.acceptMany(T1, 20, { timeout: 0 })).length, 12, 'the other 12 groups fill 12 more slots');
});
