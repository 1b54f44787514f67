// Job flows in the jobs API: a parent added with its children in one
// transaction waits (never taken) until they have ended, then is pending;
// it reads their outcomes; a child that fails applies its parent's policy;
// cancelling or removing a flow job ends its unfinished children; bad
// flows are refused with typed errors and write nothing.

import test from 'ava';
import { checkJobsConsistency, JobsError, openJobs, Subspace } from '@jobtree/core';
import type { Job, Jobs } from '@jobtree/core';
import { openTempJobs, T1, T2 } from './temp-jobs.js';

async function takeId(jobs: Jobs, type: string, id: string): Promise<Job> {
  const taken: Job[] = [];
  for (let job = await jobs.accept(type); job !== undefined; job = await jobs.accept(type)) {
    if (job.id === id) {
      for (const other of taken) await jobs.resubmit(other);
      for (const other of taken) await jobs.finish(other);
      return job;
    }
    taken.push(job);
  }
  throw new Error(`no job ${id} of type ${type} to take`);
}

async function anomalies(jobs: Jobs): Promise<unknown[]> {
  return (await checkJobsConsistency(jobs.database)).anomalies;
}

test('a parent waits, never taken, until every child succeeded; then it is pending and reads their results', async (t) => {
  const { jobs } = await openTempJobs(t);
  const added = await jobs.addFlow({
    type: T1,
    id: 'report',
    data: { month: 5 },
    children: [
      { type: T2, id: 'a', data: { part: 1 } },
      { type: T2, id: 'b', data: { part: 2 } },
    ],
  });
  t.is(added, 'waiting');
  t.like(await jobs.getJob(T1, 'report'), { state: 'waiting', data: { month: 5 }, inFlow: true });
  t.like(await jobs.getJob(T2, 'a'), { state: 'pending', inFlow: true });
  await jobs.add(T2, 'alone');
  t.false('inFlow' in ((await jobs.getJob(T2, 'alone')) ?? {}));
  t.is(await jobs.accept(T1), undefined);
  t.is(await jobs.pendingCount(T2), 3);

  const a = await takeId(jobs, T2, 'a');
  t.is(await jobs.complete(a, { rows: 10 }), 'finished');
  t.is(await jobs.getJobState(T1, 'report'), 'waiting');
  t.is(await jobs.accept(T1), undefined);

  const b = await takeId(jobs, T2, 'b');
  t.is(await jobs.complete(b, { rows: 20 }), 'finished');
  t.is(await jobs.getJobState(T1, 'report'), 'pending');
  const parent = await jobs.accept(T1);
  t.like(parent, { id: 'report', data: { month: 5 } });
  t.deepEqual(await jobs.getChildren(T1, 'report'), [
    { type: T2, id: 'a', state: 'finished', outcome: 'succeeded', result: { rows: 10 } },
    { type: T2, id: 'b', state: 'finished', outcome: 'succeeded', result: { rows: 20 } },
  ]);
  t.deepEqual(await jobs.getChildren(T2, 'a'), []);
  t.deepEqual(await anomalies(jobs), []);
});

test('children finished together in one write batch count exactly once each', async (t) => {
  const { jobs } = await openTempJobs(t);
  const ids = Array.from({ length: 40 }, (_, index) => `c${index}`);
  await jobs.addFlow({ type: T1, id: 'p', children: ids.map((id) => ({ type: T2, id })) });
  const taken = await jobs.acceptMany(T2, 40);
  t.is(taken.length, 40);
  // All but the last in one go: the batch shares a transaction, and the parent must still wait.
  const results = await Promise.all(taken.slice(0, -1).map((job) => jobs.complete(job, job.id)));
  t.true(results.every((state) => state === 'finished'));
  t.like(await jobs.getFlow(T1, 'p'), { state: 'waiting', unfinished: 1 });
  await jobs.complete(taken.at(-1) as Job);
  t.like(await jobs.getFlow(T1, 'p'), { state: 'pending', unfinished: 0 });
});

test('levels nest: a child with children waits for them, and its parent for it', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({
    type: T1,
    id: 'root',
    children: [{ type: T1, id: 'middle', children: [{ type: T2, id: 'leaf' }] }, { type: T2, id: 'side' }],
  });
  t.is(await jobs.getJobState(T1, 'middle'), 'waiting');
  t.is(await jobs.getJobState(T2, 'leaf'), 'pending');
  await jobs.complete(await takeId(jobs, T2, 'side'));
  await jobs.complete(await takeId(jobs, T2, 'leaf'), 'leaf done');
  t.is(await jobs.getJobState(T1, 'root'), 'waiting');
  const middle = await takeId(jobs, T1, 'middle');
  t.deepEqual(await jobs.getChildren(T1, 'middle'), [{ type: T2, id: 'leaf', state: 'finished', outcome: 'succeeded', result: 'leaf done' }]);
  await jobs.complete(middle, 'middle done');
  t.is(await jobs.getJobState(T1, 'root'), 'pending');
  const flow = await jobs.getFlow(T1, 'root');
  t.like(flow, {
    type: T1,
    id: 'root',
    state: 'pending',
    children: [
      { id: 'middle', outcome: 'succeeded', result: 'middle done', children: [{ id: 'leaf', outcome: 'succeeded' }] },
      { id: 'side', outcome: 'succeeded', children: [] },
    ],
  });
  t.like(await jobs.getFlow(T2, 'leaf'), { id: 'leaf', parent: { type: T1, id: 'middle' }, children: [] });
  t.is(await jobs.getFlow(T2, 'nope'), undefined);
});

test("onChildFailure 'fail' (the default): a child that fails ends its parent as failed, naming the child, and that goes up the levels", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({
    type: T1,
    id: 'top',
    children: [{ type: T1, id: 'mid', children: [{ type: T2, id: 'bad' }, { type: T2, id: 'slow' }] }],
  });
  await jobs.fail(await takeId(jobs, T2, 'bad'), new TypeError('disk full'));
  const mid = await jobs.getJob(T1, 'mid');
  t.like(mid, { state: 'finished', outcome: 'failed', error: { name: 'ChildFailedError' } });
  t.regex(mid?.error?.message ?? '', /"bad".*failed: disk full/);
  t.like(await jobs.getJob(T1, 'top'), { state: 'finished', outcome: 'failed', error: { name: 'ChildFailedError' } });
  t.regex((await jobs.getJob(T1, 'top'))?.error?.message ?? '', /"mid".*failed: child job "bad"/);
  // The other child goes on; its end no longer changes the parent.
  await jobs.complete(await takeId(jobs, T2, 'slow'));
  t.like(await jobs.getJob(T1, 'mid'), { outcome: 'failed' });
  t.deepEqual(await anomalies(jobs), []);
});

test("onChildFailure 'ignore': a failed or cancelled child counts as ended; the parent runs once all have, and sees how each ended", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({
    type: T1,
    id: 'p',
    onChildFailure: 'ignore',
    children: [{ type: T2, id: 'bad' }, { type: T2, id: 'gone' }, { type: T2, id: 'good' }],
  });
  await jobs.fail(await takeId(jobs, T2, 'bad'), { message: 'nope' });
  t.true(await jobs.cancel(T2, 'gone'));
  t.is(await jobs.getJobState(T1, 'p'), 'waiting');
  await jobs.complete(await takeId(jobs, T2, 'good'), 1);
  t.is(await jobs.getJobState(T1, 'p'), 'pending');
  t.deepEqual(await jobs.getChildren(T1, 'p'), [
    { type: T2, id: 'bad', state: 'finished', outcome: 'failed', error: { name: 'Error', message: 'nope' } },
    { type: T2, id: 'gone', state: 'finished', outcome: 'cancelled' },
    { type: T2, id: 'good', state: 'finished', outcome: 'succeeded', result: 1 },
  ]);
});

test("onChildFailure 'continue': the first child that fails makes the parent pending at once, the others going on", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', onChildFailure: 'continue', children: [{ type: T2, id: 'bad' }, { type: T2, id: 'other' }] });
  await jobs.fail(await takeId(jobs, T2, 'bad'), { message: 'nope' });
  t.is(await jobs.getJobState(T1, 'p'), 'pending');
  t.like(await jobs.getChildren(T1, 'p'), [
    { id: 'bad', outcome: 'failed' },
    { id: 'other', state: 'pending' },
  ]);
  // The parent runs and ends before its other child; that child's end changes nothing.
  await jobs.complete(await takeId(jobs, T1, 'p'));
  await jobs.complete(await takeId(jobs, T2, 'other'));
  t.like(await jobs.getJob(T1, 'p'), { state: 'finished', outcome: 'succeeded' });
});

test('a child retried while its parent waits counts as unfinished again', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', onChildFailure: 'ignore', children: [{ type: T2, id: 'flaky' }, { type: T2, id: 'slow' }] });
  await jobs.fail(await takeId(jobs, T2, 'flaky'), { message: 'try again' });
  await jobs.retry(T2, 'flaky');
  await jobs.complete(await takeId(jobs, T2, 'slow'));
  t.like(await jobs.getFlow(T1, 'p'), { state: 'waiting', unfinished: 1 });
  await jobs.complete(await takeId(jobs, T2, 'flaky'), 'second try');
  t.is(await jobs.getJobState(T1, 'p'), 'pending');
  t.like(await jobs.getChildren(T1, 'p'), [{ id: 'flaky', outcome: 'succeeded', result: 'second try' }, { id: 'slow' }]);
});

test('cancelling a parent cancels its children that have not ended, down the levels; ended ones stay as they are', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({
    type: T1,
    id: 'p',
    children: [{ type: T2, id: 'done' }, { type: T2, id: 'running' }, { type: T1, id: 'mid', children: [{ type: T2, id: 'deep' }] }],
  });
  await jobs.complete(await takeId(jobs, T2, 'done'), 'kept');
  const running = await takeId(jobs, T2, 'running');
  t.true(await jobs.cancel(T1, 'p'));
  t.like(await jobs.getJob(T1, 'p'), { state: 'finished', outcome: 'cancelled' });
  t.like(await jobs.getJob(T2, 'done'), { outcome: 'succeeded', result: 'kept' });
  t.like(await jobs.getJob(T2, 'running'), { state: 'finished', outcome: 'cancelled' });
  t.like(await jobs.getJob(T1, 'mid'), { state: 'finished', outcome: 'cancelled' });
  t.like(await jobs.getJob(T2, 'deep'), { state: 'finished', outcome: 'cancelled' });
  await t.throwsAsync(jobs.complete(running), { instanceOf: JobsError, code: 'halt' });
  t.deepEqual(await anomalies(jobs), []);
});

test('removing a parent removes its children that have not ended, down the levels; ended ones stay, in no flow', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'done' }, { type: T1, id: 'mid', children: [{ type: T2, id: 'deep' }] }] });
  await jobs.complete(await takeId(jobs, T2, 'done'));
  t.true(await jobs.remove(T1, 'p'));
  t.is(await jobs.getJobState(T1, 'p'), undefined);
  t.is(await jobs.getJobState(T1, 'mid'), undefined);
  t.is(await jobs.getJobState(T2, 'deep'), undefined);
  t.is(await jobs.getJobState(T2, 'done'), 'finished');
  t.is(await jobs.getFlow(T2, 'done'), undefined);
  t.deepEqual(await anomalies(jobs), []);
});

test("removing a child that has not ended counts as cancelling it for its parent; its links go", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'strict', children: [{ type: T2, id: 's1' }, { type: T2, id: 's2' }] });
  await jobs.addFlow({ type: T1, id: 'lenient', onChildFailure: 'ignore', children: [{ type: T2, id: 'l1' }, { type: T2, id: 'l2' }] });
  t.true(await jobs.remove(T2, 's1'));
  t.like(await jobs.getJob(T1, 'strict'), { outcome: 'failed', error: { name: 'ChildFailedError' } });
  t.regex((await jobs.getJob(T1, 'strict'))?.error?.message ?? '', /"s1".*removed/);
  t.true(await jobs.remove(T2, 'l1'));
  t.is(await jobs.getJobState(T1, 'lenient'), 'waiting');
  await jobs.complete(await takeId(jobs, T2, 'l2'));
  t.is(await jobs.getJobState(T1, 'lenient'), 'pending');
  t.deepEqual(await jobs.getChildren(T1, 'lenient'), [{ type: T2, id: 'l2', state: 'finished', outcome: 'succeeded' }]);
});

test("removing a parent whose children were all removed first clears its flow row: a job added later under its id is no parent", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', onChildFailure: 'ignore', children: [{ type: T2, id: 'a' }] });
  t.true(await jobs.remove(T2, 'a'));
  t.is(await jobs.getJobState(T1, 'p'), 'pending');
  t.true(await jobs.remove(T1, 'p'));
  t.deepEqual(await anomalies(jobs), []);
  await jobs.addFlow({ type: T2, id: 'q', children: [{ type: T1, id: 'p' }] });
  const flow = await jobs.getFlow(T1, 'p');
  t.like(flow, { state: 'pending', parent: { type: T2, id: 'q' }, children: [] });
  t.false('onChildFailure' in (flow ?? {}));
  t.deepEqual(await anomalies(jobs), []);
});

test('a flow outlives its handle: reopened, its children finish and its parent becomes pending', async (t) => {
  const { dir } = await openTempJobs(t);
  const first = await openJobs({ path: `${dir}/store` });
  await first.setTypeTimeout(T1, 30);
  await first.setTypeTimeout(T2, 30);
  await first.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c' }] });
  await first.close();
  const second = await openJobs({ path: `${dir}/store` });
  t.teardown(() => second.close());
  t.is(await second.getJobState(T1, 'p'), 'waiting');
  await second.complete(await takeId(second, T2, 'c'), 'after the restart');
  t.like(await second.accept(T1), { id: 'p' });
  t.like(await second.getChildren(T1, 'p'), [{ id: 'c', result: 'after the restart' }]);
});

test("a child's end in the application's transaction releases its parent in that transaction", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c' }] });
  const child = await takeId(jobs, T2, 'c');
  const state = await jobs.database.doTransaction(async (tx) => {
    await jobs.in(tx).complete(child, 'in tx');
    return jobs.in(tx).getJobState(T1, 'p');
  });
  t.is(state, 'pending');
});

test('bad flows are refused with typed errors and add nothing', async (t) => {
  const { jobs } = await openTempJobs(t);
  const invalid = { instanceOf: JobsError, code: 'invalid_flow' } as const;
  await t.throwsAsync(jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'x' }, { type: T2, id: 'x' }] }), invalid);
  await t.throwsAsync(jobs.addFlow({ type: T1, id: 'p', children: [{ type: T1, id: 'p' }] }), invalid);
  const looped: { type: string; id: string; children: unknown[] } = { type: T1, id: 'loop', children: [] };
  looped.children.push({ type: T2, id: 'inner', children: [looped] });
  await t.throwsAsync(jobs.addFlow(looped as never), { ...invalid, message: /own ancestors/ });
  await t.throwsAsync(jobs.addFlow({ type: T1, id: 'p' }), { ...invalid, message: /has children/ });
  await t.throwsAsync(jobs.addFlow({ type: T1, id: 'p', children: [] }), invalid);
  await t.throwsAsync(jobs.addFlow({ type: T1, id: 'p', onChildFailure: 'retry' as never, children: [{ type: T2, id: 'x' }] }), invalid);
  await t.throwsAsync(jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'x', parent: 'p' } as never] }), invalid);
  await t.throwsAsync(jobs.addFlow({ type: T1, id: 'p', children: 'x' as never }), invalid);
  await t.throwsAsync(jobs.addFlow({ type: T1, id: '', children: [{ type: T2, id: 'x' }] }), { instanceOf: JobsError, code: 'invalid_job_id' });
  await t.throwsAsync(jobs.addFlow({ type: T1, id: 'p', children: [{ type: 'untimed', id: 'x' }] }), { instanceOf: JobsError, code: 'no_type_timeout' });
  await jobs.add(T2, 'exists', { old: true });
  await t.throwsAsync(jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'new' }, { type: T2, id: 'exists' }] }), {
    instanceOf: JobsError,
    code: 'flow_job_exists',
    message: /"exists"/,
  });
  t.is(await jobs.getJobState(T1, 'p'), undefined);
  t.is(await jobs.getJobState(T2, 'new'), undefined);
  t.like(await jobs.getJob(T2, 'exists'), { state: 'pending', data: { old: true } });
  t.deepEqual(await anomalies(jobs), []);
});

test('add of a waiting parent changes its data but leaves it waiting', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', data: { v: 1 }, children: [{ type: T2, id: 'c' }] });
  t.is(await jobs.add(T1, 'p', { v: 2 }, { priority: 3 }), 'waiting');
  t.like(await jobs.getJob(T1, 'p'), { state: 'waiting', data: { v: 2 }, priority: 3 });
  t.is(await jobs.accept(T1), undefined);
  await jobs.complete(await takeId(jobs, T2, 'c'));
  t.like(await jobs.accept(T1), { id: 'p', data: { v: 2 }, priority: 3 });
});

test('add of a waiting parent with a group moves it to that group, which it takes once released', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c' }] });
  t.is(await jobs.add(T1, 'p', { v: 2 }, { group: 'tenant-a' }), 'waiting');
  t.like(await jobs.getJob(T1, 'p'), { state: 'waiting', group: 'tenant-a' });
  await jobs.complete(await takeId(jobs, T2, 'c'));
  t.like(await jobs.accept(T1), { id: 'p', group: 'tenant-a' });
  t.deepEqual(await anomalies(jobs), []);
});

test('a job added alone under the id of a child that retention pruned is not that child: its old parent reads it as gone and its cancel leaves it alone', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', onChildFailure: 'ignore', children: [{ type: T2, id: 'a' }, { type: T2, id: 'b' }] });
  await jobs.complete(await takeId(jobs, T2, 'a'), 'first');
  t.like(await jobs.pruneFinished(T2, 'succeeded', { maxCount: 0 }), { removed: 1 });
  await jobs.add(T2, 'a', { unrelated: true });
  t.deepEqual(await jobs.getChildren(T1, 'p'), [
    { type: T2, id: 'a', state: undefined },
    { type: T2, id: 'b', state: 'pending' },
  ]);
  t.like(await jobs.getFlow(T1, 'p'), { unfinished: 1, children: [{ id: 'a', state: undefined, children: [] }, { id: 'b' }] });
  t.deepEqual(await anomalies(jobs), []);
  t.true(await jobs.cancel(T1, 'p'));
  t.is(await jobs.getJobState(T2, 'a'), 'pending');
  t.like(await jobs.getJob(T2, 'b'), { outcome: 'cancelled' });
  t.deepEqual(await anomalies(jobs), []);
});

test("a job added in another flow under the id of a child that retention pruned is not that child: its old parent's removal leaves it in its own flow", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'a' }, { type: T2, id: 'b' }] });
  await jobs.complete(await takeId(jobs, T2, 'a'));
  await jobs.pruneFinished(T2, 'succeeded', { maxCount: 0 });
  await jobs.addFlow({ type: T1, id: 'q', children: [{ type: T2, id: 'a', children: [{ type: T2, id: 'a-part' }] }] });
  t.like(await jobs.getFlow(T1, 'p'), { children: [{ id: 'a', state: undefined, children: [] }, { id: 'b', state: 'pending' }] });
  t.true(await jobs.remove(T1, 'p'));
  t.is(await jobs.getJobState(T2, 'b'), undefined);
  t.like(await jobs.getFlow(T1, 'q'), { state: 'waiting', unfinished: 1, children: [{ id: 'a', state: 'waiting', children: [{ id: 'a-part' }] }] });
  await jobs.complete(await takeId(jobs, T2, 'a-part'));
  await jobs.complete(await takeId(jobs, T2, 'a'));
  t.is(await jobs.getJobState(T1, 'q'), 'pending');
  t.deepEqual(await anomalies(jobs), []);
});

test("retention's prune of a flow's finished jobs leaves none of their flow rows behind", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'a' }, { type: T2, id: 'b' }] });
  await jobs.complete(await takeId(jobs, T2, 'a'));
  await jobs.complete(await takeId(jobs, T2, 'b'));
  await jobs.complete(await takeId(jobs, T1, 'p'));
  // The children pruned first: their parent sees them gone.
  t.like(await jobs.pruneFinished(T2, 'succeeded', { maxCount: 0 }), { removed: 2 });
  t.deepEqual(await jobs.getChildren(T1, 'p'), [
    { type: T2, id: 'a', state: undefined },
    { type: T2, id: 'b', state: undefined },
  ]);
  t.like(await jobs.pruneFinished(T1, 'succeeded', { maxCount: 0 }), { removed: 1 });
  const flowRows = await jobs.database.doTransaction(async (tx) => {
    const rows = [];
    for (const name of ['flows', 'flow_children', 'flow_parents']) {
      const { begin, end } = Subspace.of('jobs', name).range();
      rows.push(...(await tx.getRange(begin, end)));
    }
    return rows.length;
  });
  t.is(flowRows, 0);
});

test("a flow's jobs carry a group: children wait under their group's limit, a released parent takes its group's turn", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeLimits(T2, { group: { concurrency: 1 } });
  await jobs.addFlow({
    type: T1,
    id: 'report',
    group: 'tenant-a',
    retry: { attempts: 3 },
    priority: 2,
    children: [
      { type: T2, id: 'a1', group: 'tenant-a' },
      { type: T2, id: 'a2', group: 'tenant-a' },
      { type: T2, id: 'b1', group: 'tenant-b' },
    ],
  });
  t.like(await jobs.getJob(T1, 'report'), { state: 'waiting', group: 'tenant-a', priority: 2, retry: { attempts: 3 } });
  t.like(await jobs.getJob(T2, 'a1'), { group: 'tenant-a' });
  // One at a time per group: a1 and b1 run, a2 waits for a1's slot.
  const first = await jobs.acceptMany(T2, 3, { timeout: 0 });
  t.deepEqual(first.map((job) => `${job.id}:${job.group}`).sort(), ['a1:tenant-a', 'b1:tenant-b']);
  await jobs.finishMany(first.map((job) => ({ job })));
  const [a2] = await jobs.acceptMany(T2, 3, { timeout: 0 });
  t.like(a2, { id: 'a2', group: 'tenant-a' });
  await jobs.finish(a2 as Job);
  const parent = await jobs.accept(T1);
  t.like(parent, { id: 'report', group: 'tenant-a' });
  t.deepEqual(await anomalies(jobs), []);
});

test('a flow job with a bad group is refused whole with invalid_group', async (t) => {
  const { jobs } = await openTempJobs(t);
  await t.throwsAsync(jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c', group: '' }] }), { instanceOf: JobsError, code: 'invalid_group' });
  t.is(await jobs.getJobState(T1, 'p'), undefined);
});

test('a child whose parent was pruned reads as in no flow, and names no parent, even once a new flow has that parent id', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'a' }, { type: T2, id: 'b' }, { type: T2, id: 'c', children: [{ type: T2, id: 'c1' }] }] });
  await jobs.cancel(T2, 'a');
  t.like(await jobs.pruneFinished(T1, 'failed', { maxCount: 0 }), { removed: 1 });
  t.is(await jobs.getFlow(T2, 'b'), undefined);
  t.like(await jobs.getFlow(T2, 'c'), { id: 'c', parent: undefined, children: [{ id: 'c1' }] });
  t.false('parent' in ((await jobs.getFlow(T2, 'c')) ?? {}));
  await jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'new' }] });
  t.is(await jobs.getFlow(T2, 'b'), undefined);
  t.false('parent' in ((await jobs.getFlow(T2, 'c')) ?? {}));
  t.like(await jobs.getFlow(T2, 'new'), { parent: { type: T1, id: 'p' } });
});

test('a child whose parent was pruned leaves a new flow under the same parent id alone when it ends', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'a' }, { type: T2, id: 'b' }] });
  await jobs.cancel(T2, 'a');
  t.is(await jobs.getJobState(T1, 'p'), 'finished');
  // Retention prunes the failed parent while its child b still waits to run: b keeps its link to "p".
  t.like(await jobs.pruneFinished(T1, 'failed', { maxCount: 0 }), { removed: 1 });
  await jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c' }] });
  await jobs.complete(await takeId(jobs, T2, 'b'));
  // b was never a child of the new p: its end does not count there.
  t.like(await jobs.getFlow(T1, 'p'), { state: 'waiting', unfinished: 1, children: [{ id: 'c', state: 'pending' }] });
  await jobs.complete(await takeId(jobs, T2, 'c'));
  t.is(await jobs.getJobState(T1, 'p'), 'pending');
  t.deepEqual(await anomalies(jobs), []);
});
