// The `jobtree` command when the shell or the data directory is not as it
// expects: its output piped into a reader that stops early or written to a full disk, an admin.json whose
// pid now belongs to another process, a token the app does not know.

import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { openJobs } from '@jobtree/core';
import { startJobs } from 'jobtree';
import { jobtree, jobtreeHere } from './fixtures/run-cli.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = fileURLToPath(new URL('../../packages/jobtree/src/cli/bin.ts', import.meta.url));

/** A store with `count` email jobs, each with `bodyBytes` of data besides its address. */
async function storeWithJobs(t: { teardown(fn: () => Promise<void>): void }, count: number, bodyBytes = 0): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-mishap-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeTimeout('email', 30);
  for (let i = 0; i < count; i++) await jobs.add('email', `e${i}`, { to: `user${i}@example.com`, body: 'x'.repeat(bodyBytes) });
  await jobs.close();
  return dir;
}

/** Whether `text` holds a C0 or C1 control character other than a newline. */
function hasControlCharacter(text: string): boolean {
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if ((code < 0x20 && char !== '\n') || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

/** A local port nothing listens on: bound for a moment, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

test.serial('output piped into a reader that closes early ends the command quietly with exit 0', async (t) => {
  // About 800 KB of JSON, far more than a pipe holds (64 KB on Linux): the
  // command is still writing when the reader leaves. Few, large jobs keep the
  // store's setup short on a loaded machine.
  const dir = await storeWithJobs(t, 100, 8_000);
  const env = { ...process.env };
  delete env.JOBTREE_PATH;
  delete env.JOBTREE_TOKEN;
  // Like `jobtree jobs email --json | head -1`: the reader takes the first chunk and closes the pipe.
  const child = spawn(process.execPath, ['--import', 'tsx', BIN, 'jobs', 'email', '--json', '--path', dir], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  child.stdout.once('data', () => child.stdout.destroy());
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exit) => resolve(exit)));
  t.is(stderr, '');
  t.is(code, 0);
});

test.serial('output to a full disk (ENOSPC) ends the command with a one-line error and exit 1', async (t) => {
  if (!existsSync('/dev/full')) return t.pass('no /dev/full here');
  const dir = await storeWithJobs(t, 2);
  const env = { ...process.env };
  delete env.JOBTREE_PATH;
  delete env.JOBTREE_TOKEN;
  // Every write to /dev/full fails with ENOSPC, as a write to a full disk does.
  const full = openSync('/dev/full', 'w');
  t.teardown(() => closeSync(full));
  const child = spawn(process.execPath, ['--import', 'tsx', BIN, 'types', '--path', dir], { cwd: ROOT, env, stdio: ['ignore', full, 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exit) => resolve(exit)));
  t.is(code, 1);
  t.regex(stderr, /^jobtree: cannot write the output: ENOSPC \(no space left on device\)\n$/);
});

test.serial('an admin.json whose pid is alive but whose endpoint refuses connections: the command opens the store', async (t) => {
  const dir = await storeWithJobs(t, 2);
  const port = await closedPort();
  // The recorded pid is a live process that is not the app (a pid reused after a crash or a reboot).
  await writeFile(join(dir, 'admin.json'), JSON.stringify({ url: `http://127.0.0.1:${port}`, host: '127.0.0.1', port, pid: process.pid, startedAt: 0 }));
  const run = await jobtreeHere('types', '--json', '--path', dir);
  t.is(run.code, 0, run.stderr);
  t.like(JSON.parse(run.stdout), { types: [{ type: 'email', pending: 2 }] });
});

test.serial('an endpoint that does not answer is named with the reason', async (t) => {
  const port = await closedPort();
  const run = await jobtreeHere('status', '--url', `http://127.0.0.1:${port}`);
  t.is(run.code, 1);
  t.regex(run.stderr, new RegExp(`^jobtree: the app at http://127\\.0\\.0\\.1:${port} does not answer \\(ECONNREFUSED\\)`));
  const blocked = await jobtreeHere('status', '--url', 'http://127.0.0.1:1');
  t.is(blocked.code, 1);
  t.notRegex(blocked.stderr, /fetch failed/, 'the reason is the cause, not fetch\'s generic message');
  t.regex(blocked.stderr, /bad port/);
});

test.serial('an admin.json whose endpoint accepts connections but never answers is reported with the record to check, not bypassed', async (t) => {
  const dir = await storeWithJobs(t, 1);
  // Something listens on the recorded port and drops every connection: maybe the app, stuck.
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  await writeFile(join(dir, 'admin.json'), JSON.stringify({ url: `http://127.0.0.1:${port}`, host: '127.0.0.1', port, pid: process.pid, startedAt: 0 }));
  const run = await jobtreeHere('types', '--path', dir);
  t.is(run.code, 1);
  t.is(run.stdout, '');
  t.is(run.stderr.trim().split('\n').length, 1);
  t.regex(run.stderr, new RegExp(`^jobtree: the app at http://127\\.0\\.0\\.1:${port} does not answer`));
  t.true(run.stderr.includes(`the app recorded in ${join(dir, 'admin.json')} (pid ${process.pid})`), run.stderr);
  t.regex(run.stderr, /if that process is not the app any more, remove/);
});

test.serial('a change sent with a token the app refuses says the token was refused, not that one is missing', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-mishap-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const app = await startJobs({ path: dir, threads: 1, admin: { port: 0 } });
  t.teardown(() => app.close());
  await app.setTypeTimeout('email', 30);
  const url = app.admin?.url;
  if (url === undefined) throw new Error('no admin endpoint');

  const wrong = await jobtree('add', 'email', 'x', '--url', url, '--token', 'not-the-token');
  t.is(wrong.code, 1);
  t.regex(wrong.stderr, /^jobtree: unauthorized: /);
  t.regex(wrong.stderr, /the token given was refused/);
  t.is(wrong.stderr.trim().split('\n').length, 1);

  const missing = await jobtreeHere('add', 'email', 'x', '--url', url);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /give --token, set JOBTREE_TOKEN, or use --path/);
  t.notRegex(missing.stderr, /refused/);
});

test.serial('--path on a directory that holds no store fails and leaves the directory as it was', async (t) => {
  // A typo such as --path ~ must not leave a new, empty store in the home directory.
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-mishap-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'notes.txt'), 'not a store\n');
  for (const args of [['types'], ['status'], ['jobs', 'email'], ['add', 'email', 'x']]) {
    const run = await jobtreeHere(...args, '--path', dir);
    t.is(run.code, 1, args.join(' '));
    t.is(run.stderr, `jobtree: no store at ${dir} (and no app running there)\n`, args.join(' '));
  }
  t.deepEqual(await readdir(dir), ['notes.txt']);
});

test.serial('text output shows control characters from job ids, data and errors escaped: no terminal escapes, one row per job', async (t) => {
  const dir = await storeWithJobs(t, 0);
  const jobs = await openJobs({ path: dir });
  const id = 'e\u001b[2J1';
  await jobs.add('email', id, { body: 'red \u001b[31m' });
  const job = await jobs.accept('email', { timeout: 5_000 });
  if (job === undefined) throw new Error('no job');
  await jobs.fail(job, { name: 'MailError', message: 'bounced\u001b]0;title\u0007\nsecond line\rover', history: [{ timestamp: '2024-05-01T10:00:00.000Z', type: 'crashed', reason: 'line one\nline two \u009b31m' }] });
  await jobs.close();

  const list = await jobtreeHere('jobs', 'email', '--failed', '--path', dir);
  t.is(list.code, 0, list.stderr);
  t.false(hasControlCharacter(list.stdout), 'no control character but the newlines between rows');
  t.is(list.stdout.trim().split('\n').length, 2, 'the header and one row');
  t.true(list.stdout.includes('e\\u001b[2J1'), list.stdout);
  t.true(list.stdout.includes('MailError: bounced\\u001b]0;title\\u0007\\nsecond line\\rover'), list.stdout);

  const one = await jobtreeHere('job', 'email', id, '--path', dir);
  t.is(one.code, 0, one.stderr);
  t.false(hasControlCharacter(one.stdout));
  t.regex(one.stdout, /^ {2}\S+ {2}crashed {2}line one\\nline two \\u009b31m$/m);

  // --json is the API's shape: the values as they are, which JSON escapes itself.
  const raw = JSON.parse((await jobtreeHere('job', 'email', id, '--json', '--path', dir)).stdout) as { id: string };
  t.is(raw.id, id);
});

test.serial('help for a command that does not exist is a usage error, like the command itself', async (t) => {
  const run = await jobtreeHere('help', 'frobnicate');
  t.is(run.code, 2);
  t.is(run.stdout, '');
  t.is(run.stderr, "jobtree: unknown command 'frobnicate' (see jobtree --help)\n");
  const known = await jobtreeHere('help', 'jobs');
  t.is(known.code, 0);
  t.regex(known.stdout, /^Usage: jobtree jobs \[options\] <type>/);
});
