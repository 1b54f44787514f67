// The `jobtree` command on job flows: `jobs <type> --state waiting` lists
// the parents that wait for their children, on a closed store; `flow <type>
// <id>` prints the tree under a job, from the store or a running app.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openJobs } from '@jobtree/core';
import { startJobs } from 'jobtree';
import { json, jobtreeHere } from './fixtures/run-cli.js';

test('jobs --state waiting lists the parents of flows that wait for their children', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-flows-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeTimeout('report', 30);
  await jobs.addFlow({ type: 'report', id: 'q2', children: [{ type: 'report', id: 'q2-north' }] });
  await jobs.close();
  const run = await jobtreeHere('jobs', 'report', '--state', 'waiting', '--json', '--path', dir);
  t.is(run.code, 0, run.stderr);
  const listed = json<{ state: string; jobs: { id: string; state: string }[] }>(run);
  t.deepEqual(
    listed.jobs.map((job) => `${job.id}:${job.state}`),
    ['q2:waiting'],
  );
});

test('flow prints the tree under a job, each job with its state and outcome, on a closed store and against a running app', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-flow-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeTimeout('report', 30);
  await jobs.setTypeTimeout('part', 30);
  await jobs.addFlow({
    type: 'report',
    id: 'q2',
    onChildFailure: 'ignore',
    children: [
      // Taken first: its priority is higher.
      { type: 'part', id: 'q2-north', priority: 5 },
      { type: 'report', id: 'q2-south', children: [{ type: 'part', id: 'q2-south-coast' }] },
    ],
  });
  const north = await jobs.accept('part');
  await jobs.fail(north!, { name: 'Error', message: 'no such region' });
  await jobs.add('part', 'alone');
  await jobs.close();

  const expected = [
    'report/q2  waiting  (ignore: 1 of 2 children unfinished)',
    '├─ part/q2-north  finished  failed: no such region',
    '└─ report/q2-south  waiting  (fail: 1 of 1 children unfinished)',
    '   └─ part/q2-south-coast  pending',
  ].join('\n');
  const text = await jobtreeHere('flow', 'report', 'q2', '--path', dir);
  t.is(text.code, 0, text.stderr);
  t.is(text.stdout, `${expected}\n`);
  // A child's own tree names its parent.
  t.regex((await jobtreeHere('flow', 'report', 'q2-south', '--path', dir)).stdout, /^report\/q2-south {2}waiting {2}\(fail: 1 of 1 children unfinished\) {2}under report\/q2$/m);
  const tree = json<{ id: string; children: { id: string; outcome?: string }[] }>(await jobtreeHere('flow', 'report', 'q2', '--json', '--path', dir));
  t.like(tree, { id: 'q2', state: 'waiting', unfinished: 1, children: [{ id: 'q2-north', outcome: 'failed' }, { id: 'q2-south' }] });
  const alone = await jobtreeHere('flow', 'part', 'alone', '--path', dir);
  t.is(alone.code, 1);
  t.regex(alone.stderr, /not_found: job alone of type part is in no flow/);

  const app = await startJobs({ path: dir, threads: 1, typeMonitorHoldoffMs: 0, logLevel: 'silent', admin: { port: 0 } });
  t.teardown(() => app.close());
  const live = await jobtreeHere('flow', 'report', 'q2', '--path', dir);
  t.is(live.code, 0, live.stderr);
  t.is(live.stdout, `${expected}\n`);
  const aloneLive = await jobtreeHere('flow', 'part', 'alone', '--path', dir);
  t.is(aloneLive.code, 1);
  t.regex(aloneLive.stderr, /not_found: job alone of type part is in no flow/);
});
