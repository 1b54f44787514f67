// The `jobtree` command: each command against a running app (found through
// the admin.json in its data directory, or by --url) and against a closed
// store (opened by the command itself), --json parsed, exit codes 0/1/2 and
// one-line errors. Most command lines run in this process (jobtreeHere); the
// executable itself runs where its exit code, streams or pid are the point.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openJobs } from '@jobtree/core';
import { type JobsApp, startJobs } from 'jobtree';
import { existsSync } from 'node:fs';
import { json, jobtree, jobtreeHere, startJobtree } from './fixtures/run-cli.js';

async function tempDir(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function runningApp(t: Parameters<typeof tempDir>[0]): Promise<{ app: JobsApp; dir: string }> {
  const dir = await tempDir(t);
  const app = await startJobs({ path: dir, threads: 1, typeMonitorHoldoffMs: 0, admin: { port: 0 } });
  t.teardown(() => app.close());
  await app.setTypeTimeout('email', 30);
  return { app, dir };
}

async function closedStore(t: Parameters<typeof tempDir>[0]): Promise<string> {
  const dir = await tempDir(t);
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeTimeout('email', 30);
  await jobs.add('email', 'e1', { to: 'ada@example.com' });
  await jobs.add('email', 'e2', { to: 'bob@example.com' }, { priority: 4 });
  const job = await jobs.accept('email', { timeout: 1_000 });
  if (job === undefined) throw new Error('no job');
  await jobs.finish(job, { sent: true });
  await jobs.close();
  return dir;
}

test.serial('against a running app: status shows the tree with restarts and uptimes, and --json parses', async (t) => {
  const { app, dir } = await runningApp(t);
  await app.add('email', 'a', {});
  await app.system.kill('notifier_sup');
  const text = await jobtree('status', '--path', dir);
  t.is(text.code, 0, text.stderr);
  t.regex(text.stdout, new RegExp(`app pid ${process.pid} at http://127\\.0\\.0\\.1:\\d+, up \\d+s`));
  t.regex(text.stdout, /actor\s+kind\s+id\s+thread\s+restarts\s+uptime/);
  t.regex(text.stdout, /├─ notifier_sup\s+supervisor\s+<[\d.]+>\s+0\s+1\s+\d+s/, 'notifier_sup restarted once');
  t.regex(text.stdout, /notifier:email/);
  t.regex(text.stdout, /email\s+30s\s+-\s+1\s+0\s+0/);

  const status = json<{ running: boolean; pid: number; tree: { name: string }; threads: number[]; types: { type: string; pending: number }[] }>(await jobtree('status', '--json', '--path', dir));
  t.true(status.running);
  t.is(status.pid, process.pid);
  t.is(status.tree.name, 'jobs_sup');
  t.like(status.types[0], { type: 'email', pending: 1 });
});

test.serial('against a running app: types, set-timeout, add, jobs, job, remove, scheduler, kill and dashboard go through the app', async (t) => {
  const { app, dir } = await runningApp(t);
  const ok = async (...args: string[]) => {
    const run = await jobtreeHere(...args, '--path', dir);
    if (run.code !== 0) throw new Error(`jobtree ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
    return run;
  };
  t.deepEqual(json<{ types: { type: string }[] }>(await ok('types', '--json')).types.map((x) => x.type), ['email']);
  t.like(json(await ok('set-timeout', 'sms', '12', '--json')), { type: 'sms', timeout: 12 });
  t.not(app.system.whereis('notifier:sms'), undefined, 'the app itself set it: its notifier runs');
  t.like(json(await ok('add', 'email', 'j1', '{"to":"ada@example.com"}', '--priority', '2', '--json')), { type: 'email', id: 'j1', state: 'pending' });
  t.like(await app.getJob('email', 'j1'), { data: { to: 'ada@example.com' }, priority: 2 });
  const jobs = json<{ total: number; jobs: { id: string }[] }>(await ok('jobs', 'email', '--state', 'pending', '--json'));
  t.is(jobs.total, 1);
  t.is(jobs.jobs[0]?.id, 'j1');
  t.regex((await ok('jobs', 'email')).stdout, /j1\s+pending\s+2/);
  t.like(json(await ok('job', 'email', 'j1', '--json')), { id: 'j1', state: 'pending', data: { to: 'ada@example.com' }, scheduler: null });
  t.regex((await ok('job', 'email', 'j1')).stdout, /state\s+pending/);
  t.like(json(await ok('remove', 'email', 'j1', '--json')), { removed: true });
  t.is(await app.getJobState('email', 'j1'), undefined);
  // No app.process in this app: no scheduler runs.
  t.deepEqual(json(await ok('scheduler', '--json')), { running: false, stats: null, jobs: null });
  t.regex((await ok('scheduler')).stdout, /runs no scheduler/);
  t.notRegex((await ok('status')).stdout, /scheduler running/);

  const before = app.system.whereis('notifier:email');
  if (before === undefined) throw new Error('notifier:email is not running');
  const killed = json<{ killed: string; replacement: string | null }>(await ok('kill', 'notifier:email', '--json'));
  t.is(killed.killed, before);
  t.truthy(killed.replacement);
  t.is(app.system.whereis('notifier:email'), killed.replacement ?? undefined);

  const dashboard = json<{ url: string; opened: boolean }>(await ok('dashboard', '--json'));
  t.is(dashboard.url, `${app.admin?.url}/#token=${encodeURIComponent(app.admin?.token ?? '')}`);
  t.false(dashboard.opened);
});

test.serial('kill jobs_sup refuses without --force and the app runs on; with --force it stops the app', async (t) => {
  const { app, dir } = await runningApp(t);
  const root = app.system.whereis('jobs_sup');
  const refused = await jobtree('kill', 'jobs_sup', '--path', dir);
  t.not(refused.code, 0);
  t.regex(refused.stderr, /--force/);
  t.is(refused.stderr.trim().split('\n').length, 1);
  t.is(app.system.whereis('jobs_sup'), root);
  t.is(await app.add('email', 'after-refusal', {}), 'pending');

  const forced = await jobtree('kill', 'jobs_sup', '--force', '--json', '--path', dir);
  t.is(forced.code, 0, forced.stderr);
  t.like(json(forced), { name: 'jobs_sup', killed: root, replacement: null });
  t.like(await app.stopped, { cause: 'root_exited', reason: 'killed' });
});

test.serial('--url reaches the app; changes need the token (--token), reads do not', async (t) => {
  const { app } = await runningApp(t);
  const url = app.admin?.url ?? '';
  t.like(json(await jobtree('types', '--json', '--url', url)), { types: [{ type: 'email' }] });
  const refused = await jobtree('add', 'email', 'u1', '--url', url);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /^jobtree: unauthorized: .*--token/);
  t.is(refused.stderr.trim().split('\n').length, 1, 'one line');
  const accepted = await jobtree('add', 'email', 'u1', '--url', url, '--token', app.admin?.token ?? '');
  t.is(accepted.code, 0, accepted.stderr);
  t.is(await app.getJobState('email', 'u1'), 'pending');
});

test.serial('against a closed store: the command opens it and types, jobs, job, add, remove, set-timeout and status work', async (t) => {
  const dir = await closedStore(t);
  const ok = async (...args: string[]) => {
    const run = await jobtreeHere(...args, '--path', dir);
    if (run.code !== 0) throw new Error(`jobtree ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
    return run;
  };
  const status = json<{ running: boolean; tree: null; types: { type: string; pending: number; finished: number; totals: null }[] }>(await ok('status', '--json'));
  t.false(status.running);
  t.is(status.tree, null);
  t.like(status.types, [{ type: 'email', pending: 1, finished: 1, totals: null }]);
  t.regex((await ok('status')).stdout, /no app running/);
  t.regex((await ok('types')).stdout, /email\s+30s\s+-\s+1\s+0\s+1/);
  t.is(json<{ total: number }>(await ok('jobs', 'email', '--json')).total, 2);
  t.is(json<{ total: number }>(await ok('jobs', 'email', '--state', 'finished', '--json')).total, 1);
  t.like(json(await ok('job', 'email', 'e2', '--json')), { id: 'e2', priority: 4 });
  t.like(json(await ok('add', 'email', 'e3', '"plain"', '--at', '2100-01-01T00:00:00Z', '--json')), { state: 'pending' });
  t.like(json(await ok('remove', 'email', 'e1', '--json')), { removed: true });
  t.like(json(await ok('set-timeout', 'sms', '7', '--json')), { timeout: 7 });
  t.like(json(await ok('set-timeout', 'sms', '--clear', '--json')), { timeout: null });

  const jobs = await openJobs({ path: dir });
  t.teardown(() => jobs.close());
  t.like(await jobs.getJob('email', 'e3'), { data: 'plain', scheduledTime: Date.parse('2100-01-01T00:00:00Z') / 1000 });
  t.is(await jobs.getJobState('email', 'e1'), undefined);
  t.is(await jobs.getTypeTimeout('sms'), undefined);
});

test.serial('against a closed store: kill, scheduler and dashboard fail with exit 1 and say they need a running app', async (t) => {
  const dir = await closedStore(t);
  for (const args of [['kill', 'core'], ['scheduler'], ['dashboard']]) {
    const run = await jobtreeHere(...args, '--path', dir);
    t.is(run.code, 1, args.join(' '));
    t.regex(run.stderr, /^jobtree: no app is running on /);
    t.is(run.stderr.trim().split('\n').length, 1);
  }
  const missing = await jobtreeHere('job', 'email', 'nope', '--path', dir);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /^jobtree: not_found: no job nope of type email\n$/);
  const noStore = await jobtreeHere('types', '--path', join(dir, 'not-a-store'));
  t.is(noStore.code, 1);
  t.regex(noStore.stderr, /no store at/);
});

test.serial('a stale admin.json (its process is gone) does not stop the command from opening the store', async (t) => {
  const dir = await closedStore(t);
  await writeFile(join(dir, 'admin.json'), JSON.stringify({ url: 'http://127.0.0.1:9', host: '127.0.0.1', port: 9, pid: 2 ** 22 + 17, startedAt: 0 }));
  const run = await jobtree('types', '--json', '--path', dir);
  t.is(run.code, 0, run.stderr);
  t.like(json(run), { types: [{ type: 'email' }] });
});

test.serial('types --json prints what GET /api/types answers, { at, types }, from a running app and from a closed store', async (t) => {
  const { app, dir } = await runningApp(t);
  await app.add('email', 'a', {});
  const api = (await (await fetch(`${app.admin?.url}/api/types`)).json()) as { at: number; types: { type: string }[] };
  const cli = json<{ at: number; types: { type: string }[] }>(await jobtree('types', '--json', '--path', dir));
  t.deepEqual(Object.keys(cli).sort(), Object.keys(api).sort());
  t.is(typeof cli.at, 'number');
  t.deepEqual(Object.keys(cli.types[0] ?? {}).sort(), Object.keys(api.types[0] ?? {}).sort());
  t.like(cli.types, [{ type: 'email', pending: 1 }]);

  const closed = json<{ at: number; types: { type: string; totals: null }[] }>(await jobtree('types', '--json', '--path', await closedStore(t)));
  t.deepEqual(Object.keys(closed).sort(), ['at', 'types']);
  t.true(Math.abs(closed.at - Date.now()) < 60_000, 'at is epoch milliseconds, as the API gives it');
  t.like(closed.types, [{ type: 'email', pending: 1, finished: 1, totals: null }]);
});

test.serial('bad usage exits 2 with one line on stderr; --help exits 0 with examples', async (t) => {
  // A folder with no store: usage is checked before the store is looked for.
  const empty = await tempDir(t);
  const cases: [string[], RegExp][] = [
    [[], /usage|Usage/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['types', '--colour'], /unknown option '--colour'/],
    [['jobs', '--path', empty], /missing required argument 'type'/],
    [['jobs', 'email', '--state', 'done', '--path', empty], /--state <state>' argument 'done' is invalid/],
    [['jobs', 'email', '--limit', 'many', '--path', empty], /--limit is a number >= 1/],
    [['add', 'email', 'x', '{oops', '--path', empty], /data is JSON/],
    [['add', 'email', 'x', '--priority', '-1', '--path', empty], /--priority is a number >= 0/],
    [['add', 'email', 'x', '--at', 'someday', '--path', empty], /--at is epoch seconds or an ISO 8601 date/],
    [['set-timeout', 'email', '--path', empty], /needs seconds/],
    [['set-timeout', 'email', '5', '--clear', '--path', empty], /not both/],
    [['types'], /--path DIR .* or --url URL/],
    [['types', '--url', 'ftp://x'], /--url is an http:\/\/ URL/],
  ];
  for (const [args, message] of cases) {
    const run = await jobtreeHere(...args);
    t.is(run.code, 2, `jobtree ${args.join(' ')}: ${run.stderr}`);
    if (args.length > 0) {
      t.regex(run.stderr, /^jobtree: /, args.join(' '));
      t.is(run.stderr.trim().split('\n').length, 1, `one line for ${args.join(' ')}`);
    }
    t.regex(run.stderr, message, args.join(' '));
    t.is(run.stdout, '');
  }
  // The executable itself: its exit code and streams are what the command line returned.
  const executable = await jobtree('frobnicate');
  t.is(executable.code, 2);
  t.regex(executable.stderr, /^jobtree: unknown command 'frobnicate'/);
  const help = await jobtree('--help');
  t.is(help.code, 0);
  t.regex(help.stdout, /Examples:/);
  t.regex(help.stdout, /status.*\n(.|\n)*kill/);
  const sub = await jobtreeHere('add', '--help');
  t.is(sub.code, 0);
  t.regex(sub.stdout, /--priority <n>/);
});

test.serial('demo runs an app with its admin endpoint that the other commands reach, and ends by itself with --seconds', async (t) => {
  const dir = join(await tempDir(t), 'demo');
  const demo = startJobtree('demo', '--path', dir, '--seconds', '12', '--kill-every', '2');
  const deadline = Date.now() + 60_000;
  while (!/dashboard: http:\/\/127\.0\.0\.1:\d+\/#token=/.test(demo.output())) {
    if (Date.now() > deadline) throw new Error(`the demo printed no dashboard URL:\n${demo.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const status = json<{ running: boolean; types: { type: string }[] }>(await jobtree('status', '--json', '--path', dir));
  t.true(status.running);
  t.deepEqual(status.types.map((type) => type.type).sort(), ['email', 'thumbnail']);
  t.is(await demo.exited, 0, demo.output());
  t.regex(demo.output(), /stopping: added \d+, finished \d+/);
  t.false(existsSync(join(dir, 'admin.json')), 'the record is gone with the app');
});

test.serial('a store owned by an app without the admin option: the command reaches it through the process that owns the store', async (t) => {
  const dir = await tempDir(t);
  const app = await startJobs({ path: dir, threads: 1 });
  t.teardown(() => app.close());
  await app.setTypeTimeout('shared-type', 30);
  await app.add('shared-type', 'one', {});
  const run = await jobtree('types', '--path', dir);
  t.is(run.code, 0, run.stderr);
  t.regex(run.stdout, /shared-type/);
  t.is(app.role, 'owner', 'the app keeps the store: the command was its client');
});
