// The token never has to be on a command line, where every user of the
// machine can read it (ps): `jobtree` takes it from --token-file,
// JOBTREE_TOKEN or JOBTREE_TOKEN_FILE, and `dashboard --open` starts the
// browser on a single-use code, not on the token.

import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { type JobsApp, startJobs } from 'jobtree';
import { eventually } from '../admin/fixtures/admin-app.js';
import { json, jobtreeWithEnv } from './fixtures/run-cli.js';

async function tempDir(t: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-token-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function runningApp(t: ExecutionContext): Promise<{ app: JobsApp; dir: string; url: string; token: string }> {
  const dir = await tempDir(t);
  const app = await startJobs({ path: dir, threads: 1, typeMonitorHoldoffMs: 0, admin: { port: 0 } });
  t.teardown(() => app.close());
  await app.setTypeTimeout('email', 30);
  const admin = app.admin;
  if (admin === undefined) throw new Error('no admin endpoint');
  return { app, dir, url: admin.url, token: admin.token };
}

test.serial('--token-file and JOBTREE_TOKEN_FILE give the token for changes against --url', async (t) => {
  const { app, url, token } = await runningApp(t);
  const file = join(await tempDir(t), 'token');
  writeFileSync(join(file), `${token}\n`, { mode: 0o600 });
  const fromOption = await jobtreeWithEnv({}, 'add', 'email', 'by-option', '--url', url, '--token-file', file);
  t.is(fromOption.code, 0, fromOption.stderr);
  const fromEnv = await jobtreeWithEnv({ JOBTREE_TOKEN_FILE: file }, 'add', 'email', 'by-env-file', '--url', url);
  t.is(fromEnv.code, 0, fromEnv.stderr);
  const fromVariable = await jobtreeWithEnv({ JOBTREE_TOKEN: token }, 'add', 'email', 'by-env', '--url', url);
  t.is(fromVariable.code, 0, fromVariable.stderr);
  t.deepEqual((await app.getJobs('email')).map((job) => job.id).sort(), ['by-env', 'by-env-file', 'by-option']);

  const missing = await jobtreeWithEnv({}, 'add', 'email', 'x', '--url', url, '--token-file', join(file, 'nope'));
  t.is(missing.code, 2);
  t.regex(missing.stderr, /^jobtree: cannot read the token file .*nope \(--token-file\): ENOTDIR/);
});

test.serial('dashboard --open starts the browser on a single-use code, not the token; the code signs the browser in for changes', async (t) => {
  if (process.platform !== 'linux') return t.pass('the opener replaced here is xdg-open');
  const { app, dir, url, token } = await runningApp(t);
  // An xdg-open that records its arguments, as `ps` would show them. It
  // writes them to a side file and renames that into place: the test waits
  // for the record to exist, and must not read it between its create and its write.
  const bin = await tempDir(t);
  const opened = join(bin, 'opened.txt');
  writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$@" > '${opened}.part' && mv '${opened}.part' '${opened}'\n`);
  chmodSync(join(bin, 'xdg-open'), 0o755);
  const run = await jobtreeWithEnv({ PATH: `${bin}:${process.env.PATH ?? ''}` }, 'dashboard', '--open', '--json', '--path', dir);
  t.is(run.code, 0, run.stderr);
  t.deepEqual(json(run), { url: `${url}/`, opened: true });
  await eventually(() => existsSync(opened), 10_000, 'the opener to run');
  const argument = readFileSync(opened, 'utf8').trim();
  t.false(argument.includes(token), 'the token is not in the opener\'s arguments');
  t.regex(argument, new RegExp(`^${url.replace(/\./g, '\\.')}/dashboard/open\\?code=[\\w-]{20,}$`));

  // The browser follows the link: a session cookie, and on to the dashboard at a URL without the code.
  const signIn = await fetch(argument, { redirect: 'manual' });
  t.is(signIn.status, 303);
  t.is(signIn.headers.get('location'), '/');
  const cookie = signIn.headers.get('set-cookie') ?? '';
  t.regex(cookie, /^jobtree_session_\d+=[\w-]+; Path=\/; Max-Age=43200; HttpOnly; SameSite=Strict$/);
  const session = cookie.split(';')[0] as string;
  // The session stands for the token on the dashboard's own requests.
  const change = await fetch(`${url}/api/jobs/email/from-dashboard`, { method: 'POST', headers: { cookie: session, 'x-jobtree-dashboard': '1', 'content-type': 'application/json' }, body: '{}' });
  t.is(change.status, 200);
  t.like(await app.getJob('email', 'from-dashboard'), { state: 'pending' });
  // A code works once.
  const again = await fetch(argument, { redirect: 'manual' });
  t.is(again.status, 401);
  t.false((again.headers.get('set-cookie') ?? '').includes('jobtree_session'));
});

test.serial('dashboard --open with the token in JOBTREE_TOKEN: the browser, started by the opener, does not inherit it', async (t) => {
  // A browser the opener starts lives on, and passes its environment to
  // everything it starts in turn.
  if (process.platform !== 'linux') return t.pass('the opener replaced here is xdg-open');
  const { url, token } = await runningApp(t);
  const bin = await tempDir(t);
  const environment = join(bin, 'environment.txt');
  writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nenv > '${environment}.part' && mv '${environment}.part' '${environment}'\n`);
  chmodSync(join(bin, 'xdg-open'), 0o755);
  const run = await jobtreeWithEnv({ PATH: `${bin}:${process.env.PATH ?? ''}`, JOBTREE_TOKEN: token }, 'dashboard', '--open', '--url', url);
  t.is(run.code, 0, run.stderr);
  await eventually(() => existsSync(environment), 10_000, 'the opener to run');
  const seen = readFileSync(environment, 'utf8');
  t.regex(seen, /^PATH=/m, 'the rest of the environment is passed on');
  t.false(seen.includes(token));
});
