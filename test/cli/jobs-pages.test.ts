// `jobtree jobs --offset`: a long list read page by page, from a closed store
// and from a running app (whose GET /api/jobs/:type takes the same offset).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { openJobs } from '@jobtree/core';
import { startJobs } from 'jobtree';
import { json, jobtreeHere } from './fixtures/run-cli.js';

async function tempDir(t: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-pages-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function checkPages(t: ExecutionContext, where: string[]): Promise<void> {
  const page = async (...args: string[]) => {
    const run = await jobtreeHere('jobs', 'email', ...args, ...where);
    t.is(run.code, 0, run.stderr);
    return run;
  };
  const all = json<{ jobs: { id: string }[] }>(await page('--json')).jobs.map((job) => job.id);
  t.is(all.length, 5);
  const second = json<{ offset: number; limit: number; total: number; jobs: { id: string }[] }>(await page('--limit', '2', '--offset', '2', '--json'));
  t.like(second, { offset: 2, limit: 2, total: 5 });
  t.deepEqual(
    second.jobs.map((job) => job.id),
    all.slice(2, 4),
  );
  const first = await page('--limit', '2');
  t.regex(first.stdout, /\n\(1-2 of 5; --offset 2 for the next 2\)\n$/);
  const last = await page('--limit', '2', '--offset', '4');
  t.regex(last.stdout, /\n\(5-5 of 5\)\n$/);
  t.true(last.stdout.includes(all[4] ?? '?'));
  const past = await page('--limit', '2', '--offset', '7');
  t.is(past.stdout, 'no jobs of type email at offset 7: there are 5 (the last page starts at --offset 4)\n');
  const pastPending = await page('--state', 'pending', '--offset', '5');
  t.is(pastPending.stdout, 'no pending jobs of type email at offset 5: there are 5 (the last page starts at --offset 0)\n');
}

test.serial('jobs --offset reads the next page of a closed store', async (t) => {
  const dir = await tempDir(t);
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeTimeout('email', 30);
  for (let i = 0; i < 5; i++) await jobs.add('email', `e${i}`, { n: i });
  await jobs.close();
  await checkPages(t, ['--path', dir]);
});

test.serial('jobs --offset reads the next page from a running app', async (t) => {
  const dir = await tempDir(t);
  const app = await startJobs({ path: dir, threads: 1, admin: { port: 0 } });
  t.teardown(() => app.close());
  await app.setTypeTimeout('email', 30);
  for (let i = 0; i < 5; i++) await app.add('email', `e${i}`, { n: i });
  await checkPages(t, ['--path', dir]);
});

test.serial('jobs --offset is an integer >= 0', async (t) => {
  const run = await jobtreeHere('jobs', 'email', '--offset', '-1', '--path', '/tmp');
  t.is(run.code, 2);
  t.regex(run.stderr, /^jobtree: --offset is a number >= 0, got "-1"/);
});
