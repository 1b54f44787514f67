// The `jobtree` command on job outcomes: `jobs --failed` / `--outcome`,
// `job` with its outcome, result, error and attempts, and `retry` and
// `cancel`, against a running app (through its admin endpoint, the token
// needed over --url) and against a closed store.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { type Jobs, openJobs } from '@jobtree/core';
import { startJobs } from 'jobtree';
import { json, jobtreeHere } from './fixtures/run-cli.js';

async function tempDir(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-outcomes-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** `failed` failed (with a history), `sent` succeeded with a result, `dropped` cancelled, `waiting` pending. */
async function endThreeWays(jobs: Pick<Jobs, 'add' | 'accept' | 'fail' | 'complete' | 'cancel'>): Promise<void> {
  await jobs.add('email', 'failed', { to: 'ada@example.com' });
  const failing = await jobs.accept('email', { timeout: 5_000 });
  if (failing === undefined) throw new Error('no job');
  await jobs.fail(failing, { message: 'mailbox full', name: 'MailError', history: [{ timestamp: '2024-05-01T10:00:00.000Z', type: 'crashed', reason: 'mailbox full' }] });
  await jobs.add('email', 'sent', { to: 'bob@example.com' });
  const sending = await jobs.accept('email', { timeout: 5_000 });
  if (sending === undefined) throw new Error('no job');
  await jobs.complete(sending, { messageId: 'm-1' });
  await jobs.add('email', 'dropped', { to: 'eve@example.com' });
  await jobs.cancel('email', 'dropped');
  await jobs.add('email', 'waiting', { to: 'joe@example.com' });
}

/** The same checks against either target: `where` is the command line's --path or --url part. */
async function checkOutcomeCommands(t: ExecutionContext, where: string[], read: Pick<Jobs, 'getJob'>): Promise<void> {
  const ok = async (...args: string[]) => {
    const run = await jobtreeHere(...args, ...where);
    t.is(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
    return run;
  };
  const failed = json<{ outcome: string; total: number; jobs: { id: string }[] }>(await ok('jobs', 'email', '--failed', '--json'));
  t.like(failed, { outcome: 'failed', total: 1 });
  t.deepEqual(failed.jobs.map((job) => job.id), ['failed']);
  t.deepEqual(json<{ jobs: { id: string }[] }>(await ok('jobs', 'email', '--outcome', 'cancelled', '--json')).jobs.map((job) => job.id), ['dropped']);
  t.deepEqual(json<{ jobs: { id: string }[] }>(await ok('jobs', 'email', '--outcome', 'succeeded', '--json')).jobs.map((job) => job.id), ['sent']);
  const failedText = (await ok('jobs', 'email', '--failed')).stdout;
  t.regex(failedText, /^id\s+state\s+priority\s+scheduled\s+kind\s+outcome\s+attempts\s+error$/m);
  t.regex(failedText, /^failed\s+finished\s+0\s+\S+\s+failed\s+1\s+MailError: mailbox full$/m);
  t.notRegex(failedText, /sent|dropped|waiting/);

  t.like(json(await ok('job', 'email', 'failed', '--json')), {
    outcome: 'failed',
    attempts: 1,
    data: { to: 'ada@example.com' },
    error: { message: 'mailbox full', name: 'MailError' },
  });
  const jobText = (await ok('job', 'email', 'failed')).stdout;
  t.regex(jobText, /^outcome\s+failed$/m);
  t.regex(jobText, /^attempts\s+1$/m);
  t.regex(jobText, /^error\s+MailError: mailbox full$/m);
  t.regex(jobText, /^ {2}2024-05-01T10:00:00.000Z\s+crashed\s+mailbox full$/m);
  t.regex((await ok('job', 'email', 'sent')).stdout, /^result\s+\{\s*"messageId": "m-1"\s*\}$/m);

  t.deepEqual(json(await ok('retry', 'email', 'failed', '--json')), { type: 'email', id: 'failed', state: 'pending' });
  t.like(await read.getJob('email', 'failed'), { state: 'pending', data: { to: 'ada@example.com' }, attempts: 0 });
  t.regex((await ok('retry', 'email', 'dropped')).stdout, /^email \/ dropped: pending \(runs again\)$/m);
  t.is(json<{ total: number }>(await ok('jobs', 'email', '--failed', '--json')).total, 0);

  t.deepEqual(json(await ok('cancel', 'email', 'waiting', '--json')), { type: 'email', id: 'waiting', cancelled: true });
  t.like(await read.getJob('email', 'waiting'), { state: 'finished', outcome: 'cancelled' });
  t.regex((await ok('cancel', 'email', 'sent')).stdout, /^email \/ sent: had ended already, left as it was$/m);

  const refused = await jobtreeHere('retry', 'email', 'sent', ...where);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /^jobtree: not_retryable: /);
  const missing = await jobtreeHere('cancel', 'email', 'nobody', ...where);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /^jobtree: not_found: /);
}

test.serial('against a running app: jobs --failed, job with its outcome, retry and cancel go through the app', async (t) => {
  const dir = await tempDir(t);
  const app = await startJobs({ path: dir, threads: 1, typeMonitorHoldoffMs: 0, admin: { port: 0 } });
  t.teardown(() => app.close());
  await app.setTypeTimeout('email', 30);
  await endThreeWays(app.jobs);
  await checkOutcomeCommands(t, ['--path', dir], app);
});

test.serial('against a closed store: jobs --failed, job with its outcome, retry and cancel open the store', async (t) => {
  const dir = await tempDir(t);
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeTimeout('email', 30);
  await endThreeWays(jobs);
  await jobs.close();
  // Each command opens the store and closes it again: read it between them the same way.
  const read = {
    getJob: async (type: string, id: string) => {
      const store = await openJobs({ path: dir });
      try {
        return await store.getJob(type, id);
      } finally {
        await store.close();
      }
    },
  } as Pick<Jobs, 'getJob'>;
  await checkOutcomeCommands(t, ['--path', dir], read);
});

test.serial('over --url, retry and cancel need the token', async (t) => {
  const dir = await tempDir(t);
  const app = await startJobs({ path: dir, threads: 1, typeMonitorHoldoffMs: 0, admin: { port: 0 } });
  t.teardown(() => app.close());
  await app.setTypeTimeout('email', 30);
  await endThreeWays(app.jobs);
  const url = app.admin?.url ?? '';
  for (const args of [
    ['retry', 'email', 'failed'],
    ['cancel', 'email', 'waiting'],
  ]) {
    const refused = await jobtreeHere(...args, '--url', url);
    t.is(refused.code, 1);
    t.regex(refused.stderr, /^jobtree: unauthorized: .*--token/);
  }
  t.like(await app.getJob('email', 'failed'), { outcome: 'failed' });
  t.is(await app.getJobState('email', 'waiting'), 'pending');
  await checkOutcomeCommands(t, ['--url', url, '--token', app.admin?.token ?? ''], app);
});

test.serial('--failed with another --outcome, or an outcome with a state other than finished, is bad usage', async (t) => {
  const bad = [
    ['jobs', 'email', '--failed', '--outcome', 'cancelled', '--path', '/tmp'],
    ['jobs', 'email', '--failed', '--state', 'pending', '--path', '/tmp'],
    ['jobs', 'email', '--outcome', 'exploded', '--path', '/tmp'],
  ];
  for (const args of bad) {
    const run = await jobtreeHere(...args);
    t.is(run.code, 2, args.join(' '));
    t.is(run.stderr.trim().split('\n').length, 1, 'one line');
  }
});
