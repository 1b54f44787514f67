// `jobtree limits <type>` prints a type's limits, through a running app's
// admin endpoint and from a closed store alike.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openJobs } from '@jobtree/core';
import { startJobs } from 'jobtree';
import { json, jobtreeHere } from './fixtures/run-cli.js';

async function tempDir(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-limits-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test.serial("limits prints a running app's type limits", async (t) => {
  const dir = await tempDir(t);
  const app = await startJobs({ path: dir, threads: 1, typeMonitorHoldoffMs: 0, admin: { port: 0 } });
  t.teardown(() => app.close());
  await app.setLimits('email', { concurrency: 4, rate: { max: 100, perMs: 1_000 } });
  const run = await jobtreeHere('limits', 'email', '--json', '--path', dir);
  t.is(run.code, 0, run.stderr);
  t.deepEqual(json(run), { type: 'email', limits: { concurrency: 4, rate: { max: 100, perMs: 1_000 } } });
  const text = await jobtreeHere('limits', 'email', '--path', dir);
  t.is(text.stdout.trim(), 'email: concurrency 4, rate 100 per 1000 ms');
});

test.serial("limits prints a closed store's type limits, and none for a type without", async (t) => {
  const dir = await tempDir(t);
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeLimits('email', { concurrency: 2 });
  await jobs.close();
  t.deepEqual(json(await jobtreeHere('limits', 'email', '--json', '--path', dir)), { type: 'email', limits: { concurrency: 2 } });
  t.is((await jobtreeHere('limits', 'sms', '--path', dir)).stdout.trim(), 'sms: no limits');
});

test.serial("limits prints a type's limits per group", async (t) => {
  const dir = await tempDir(t);
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeLimits('email', { concurrency: 8, group: { concurrency: 1, rate: { max: 10, perMs: 60_000 } } });
  await jobs.close();
  t.deepEqual(json(await jobtreeHere('limits', 'email', '--json', '--path', dir)), {
    type: 'email',
    limits: { concurrency: 8, group: { concurrency: 1, rate: { max: 10, perMs: 60_000 } } },
  });
  t.is((await jobtreeHere('limits', 'email', '--path', dir)).stdout.trim(), 'email: concurrency 8, per group: concurrency 1, per group: rate 10 per 60000 ms');
});
