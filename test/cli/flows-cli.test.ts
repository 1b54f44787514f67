// The `jobtree` command on job flows: `jobs <type> --state waiting` lists
// the parents that wait for their children, on a closed store.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openJobs } from '@jobtree/core';
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
