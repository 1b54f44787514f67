// `jobtree pause` and `jobtree resume`, and the paused column of `jobtree
// types`: against a running app (through its admin endpoint, the token
// needed over --url) and against a closed store (the pause is a row of the
// store either way).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { openJobs } from '@jobtree/core';
import { startJobs } from 'jobtree';
import { json, jobtreeHere } from './fixtures/run-cli.js';

async function tempDir(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-pause-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function checkPauseCommands(t: ExecutionContext, where: string[], isPaused: () => Promise<boolean>): Promise<void> {
  const ok = async (...args: string[]) => {
    const run = await jobtreeHere(...args, ...where);
    t.is(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
    return run;
  };
  t.deepEqual(json(await ok('pause', 'email', '--json')), { type: 'email', paused: true });
  t.true(await isPaused());
  const types = json<{ types: { type: string; paused: boolean }[] }>(await ok('types', '--json'));
  t.like(types.types.find((each) => each.type === 'email'), { paused: true });
  t.regex((await ok('types')).stdout, /^email\s+30s\s+paused\s/m);
  t.regex((await ok('resume', 'email')).stdout, /^email: resumed$/m);
  t.false(await isPaused());
  t.regex((await ok('types')).stdout, /^email\s+30s\s+-\s/m);
  const bad = await jobtreeHere('pause', '', ...where);
  t.is(bad.code, 1);
  // No type: the store refuses it, and the endpoint has no route for an empty segment.
  t.regex(bad.stderr, /^jobtree: .*(invalid_job_type|not_found: no route)/);
}

test.serial('against a running app: pause and resume go through the app, types shows the pause', async (t) => {
  const dir = await tempDir(t);
  const app = await startJobs({ path: dir, threads: 1, typeMonitorHoldoffMs: 0, admin: { port: 0 } });
  t.teardown(() => app.close());
  await app.setTypeTimeout('email', 30);
  await checkPauseCommands(t, ['--path', dir], () => app.isPaused('email'));
});

test.serial('against a closed store: pause and resume write the store', async (t) => {
  const dir = await tempDir(t);
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeTimeout('email', 30);
  await jobs.close();
  const isPaused = async () => {
    const store = await openJobs({ path: dir });
    try {
      return await store.isPaused('email');
    } finally {
      await store.close();
    }
  };
  await checkPauseCommands(t, ['--path', dir], isPaused);
});

test.serial('over --url, pause and resume need the token', async (t) => {
  const dir = await tempDir(t);
  const app = await startJobs({ path: dir, threads: 1, typeMonitorHoldoffMs: 0, admin: { port: 0 } });
  t.teardown(() => app.close());
  await app.setTypeTimeout('email', 30);
  const url = app.admin?.url ?? '';
  const refused = await jobtreeHere('pause', 'email', '--url', url);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /^jobtree: unauthorized: .*--token/);
  t.false(await app.isPaused('email'));
  await checkPauseCommands(t, ['--url', url, '--token', app.admin?.token ?? ''], () => app.isPaused('email'));
});
