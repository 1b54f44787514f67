// Job flows in the app: app.addFlow adds a parent with its children; the
// parent's handler runs once they have succeeded and reads their results
// with ctx.childResults(), on the main thread and in handler threads; a
// subscriber to the parent sees it waiting, then finished; a flow added
// before a restart finishes after it; the JSON API serves a flow as a tree
// and counts the jobs a flow added pending.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { type HandlerContext, type HandlerJob, JobsError, startJobs } from 'jobtree';
import { request, startAdminApp } from '../admin/fixtures/admin-app.js';
import { T1, T2, startTempApp } from './fixtures/temp-app.js';

const flowParent = new URL('./fixtures/flow-parent-handler.ts', import.meta.url);

async function double(job: HandlerJob<{ n: number }>): Promise<{ doubled: number }> {
  return { doubled: job.data.n * 2 };
}

test('a parent on the main thread runs once its children have succeeded, and reads their results', async (t) => {
  const { app } = await startTempApp(t);
  const ran: string[] = [];
  await app.process(T2, async (job: HandlerJob<{ n: number }>) => {
    ran.push(job.id);
    return double(job);
  });
  await app.process(T1, async (job: HandlerJob, ctx: HandlerContext) => {
    ran.push(job.id);
    const children = await ctx.childResults();
    return { sum: children.reduce((sum, child) => sum + (child.result as { doubled: number }).doubled, 0), count: children.length };
  });
  t.is(
    await app.addFlow({ type: T1, id: 'sum', data: { what: 'sum' }, children: [1, 2, 3].map((n) => ({ type: T2, id: `n${n}`, data: { n } })) }),
    'waiting',
  );
  const sub = await app.subscribe(T1, 'sum');
  t.true(sub.state === 'waiting' || sub.state === 'pending' || sub.state === 'running');
  t.like(await app.wait(sub, 'finished', 30_000), { state: 'finished' });
  t.like(await app.getJob(T1, 'sum'), { outcome: 'succeeded', data: { what: 'sum' }, result: { sum: 12, count: 3 } });
  // The parent ran after every child.
  t.is(ran.at(-1), 'sum');
  t.is(ran.length, 4);
});

test('a parent in a handler thread reads its children (nested: a child waits for its own children first)', async (t) => {
  const { app } = await startTempApp(t);
  await app.process(T2, double, {});
  await app.process(T1, flowParent, { threads: 1 });
  await app.addFlow({
    type: T1,
    id: 'top',
    data: { level: 0 },
    children: [{ type: T1, id: 'middle', data: { level: 1 }, children: [{ type: T2, id: 'leaf', data: { n: 5 } }] }, { type: T2, id: 'side', data: { n: 1 } }],
  });
  const sub = await app.subscribe(T1, 'top');
  await app.wait(sub, 'finished', 30_000);
  t.like(await app.getJob(T1, 'middle'), { outcome: 'succeeded', result: { input: { level: 1 }, children: [{ id: 'leaf', result: { doubled: 10 } }] } });
  t.like(await app.getJob(T1, 'top'), {
    outcome: 'succeeded',
    result: {
      input: { level: 0 },
      children: [
        { type: T1, id: 'middle', outcome: 'succeeded', result: { input: { level: 1 } } },
        { type: T2, id: 'side', outcome: 'succeeded', result: { doubled: 2 } },
      ],
    },
  });
  t.like(await app.getFlow(T1, 'top'), { state: 'finished', children: [{ id: 'middle', children: [{ id: 'leaf', state: 'finished' }] }, { id: 'side' }] });
});

test('a child that fails under the default policy fails its parent, whose handler never runs', async (t) => {
  const { app } = await startTempApp(t);
  let parentRuns = 0;
  await app.process(T2, () => {
    throw new Error('no such file');
  }, { attempts: 1 });
  await app.process(T1, () => {
    parentRuns += 1;
  });
  await app.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c' }] });
  const sub = await app.subscribe(T1, 'p');
  await app.wait(sub, 'finished', 30_000);
  const parent = await app.getJob(T1, 'p');
  t.like(parent, { outcome: 'failed', error: { name: 'ChildFailedError' } });
  t.regex(parent?.error?.message ?? '', /"c".*failed: no such file/);
  t.is(parentRuns, 0);
});

test('cancelling a waiting parent from the app cancels its children', async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'a' }, { type: T2, id: 'b' }] });
  t.true(await app.cancel(T1, 'p'));
  t.like(await app.getChildren(T1, 'p'), [
    { id: 'a', outcome: 'cancelled' },
    { id: 'b', outcome: 'cancelled' },
  ]);
  await t.throwsAsync(app.addFlow({ type: T1, id: 'q', children: [{ type: T2, id: 'a' }] }), { instanceOf: JobsError, code: 'flow_job_exists' });
});

test('a flow added before a restart: the app reopened runs its children, then its parent', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-app-flows-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const first = await startJobs({ path: dir, threads: 1, logLevel: 'silent' });
  await first.setTypeTimeout(T1, 30);
  await first.setTypeTimeout(T2, 30);
  await first.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c1', data: { n: 1 } }, { type: T2, id: 'c2', data: { n: 2 } }] });
  await first.close();

  const second = await startJobs({ path: dir, threads: 1, logLevel: 'silent' });
  t.teardown(() => second.close());
  t.is(await second.getJobState(T1, 'p'), 'waiting');
  await second.process(T2, double);
  await second.process(T1, async (_job: HandlerJob, ctx: HandlerContext) => (await ctx.childResults()).map((child) => child.result));
  const sub = await second.subscribe(T1, 'p');
  await second.wait(sub, 'finished', 30_000);
  t.like(await second.getJob(T1, 'p'), { outcome: 'succeeded', result: [{ doubled: 2 }, { doubled: 4 }] });
});

test('GET /api/flows/:type/:id serves a flow as one tree; 404 for a job in no flow', async (t) => {
  const { app, admin } = await startAdminApp(t);
  await app.setTypeTimeout('report', 30);
  await app.setTypeTimeout('part', 30);
  await app.addFlow({ type: 'report', id: 'r', onChildFailure: 'ignore', children: [{ type: 'part', id: 'p1' }, { type: 'part', id: 'p2' }] });
  await app.cancel('part', 'p1');
  await app.add('part', 'alone', {});
  const flow = await request(`${admin.url}/api/flows/report/r`);
  t.is(flow.status, 200);
  t.deepEqual(flow.body, {
    type: 'report',
    id: 'r',
    state: 'waiting',
    onChildFailure: 'ignore',
    unfinished: 1,
    children: [
      { type: 'part', id: 'p1', state: 'finished', outcome: 'cancelled', children: [] },
      { type: 'part', id: 'p2', state: 'pending', children: [] },
    ],
  });
  t.like((await request(`${admin.url}/api/flows/part/p2`)).body, { id: 'p2', parent: { type: 'report', id: 'r' } });
  t.like(await request(`${admin.url}/api/flows/part/alone`), { status: 404, body: { error: { code: 'not_found' } } });
  t.like((await request(`${admin.url}/api/jobs/report?state=waiting`)).body, { jobs: [{ id: 'r', state: 'waiting' }] });
  // The flow's jobs without children were added pending, and count as added; its waiting parent not yet.
  const types = (await request(`${admin.url}/api/types`)).body as { types: { type: string; totals: { added: number } | null }[] };
  const added = Object.fromEntries(types.types.map((entry) => [entry.type, entry.totals?.added ?? 0]));
  t.is(added.part, 3);
  t.is(added.report, 0);
});
