// The `jobtree` command sends the app's token only to an endpoint recorded
// in an admin.json that nobody else could have written: one owned by the
// current user, writable by nobody else, in a directory nobody else can
// rewrite. Otherwise whoever wrote the record would receive the token.

import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { type IncomingHttpHeaders, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { startAdminApp } from '../admin/fixtures/admin-app.js';
import { jobtreeHere } from './fixtures/run-cli.js';
import { fileURLToPath } from 'node:url';

const TOKEN = 'the-app-token-0123456789';

/** An HTTP server that answers like an app's endpoint and keeps the headers of every request. */
async function fakeEndpoint(t: ExecutionContext): Promise<{ url: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    const status = { pid: process.pid, uptimeMs: 1, now: Date.now(), threads: [], tree: { name: 'jobs_sup', kind: 'supervisor', children: [] }, scheduler: false };
    const body = req.method !== 'GET' ? { type: 'email', id: 'x', state: 'pending' } : req.url === '/api/types' ? { at: Date.now(), types: [] } : status;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen };
}

/** A data directory recording `url`, with the token beside it as an app writes it. */
async function recordedDir(t: ExecutionContext, url: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-trust-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'admin.token'), `${TOKEN}\n`, { mode: 0o600 });
  const { port } = new URL(url);
  writeFileSync(join(dir, 'admin.json'), JSON.stringify({ url, host: '127.0.0.1', port: Number(port), pid: process.pid, startedAt: 0 }), { mode: 0o644 });
  return dir;
}

const sentToken = (seen: IncomingHttpHeaders[]) => seen.some((headers) => headers.authorization !== undefined);

test.serial('an admin.json others can write: the change is refused with the reason, and the endpoint never sees the token', async (t) => {
  const endpoint = await fakeEndpoint(t);
  const dir = await recordedDir(t, endpoint.url);
  chmodSync(join(dir, 'admin.json'), 0o666);
  const run = await jobtreeHere('add', 'email', 'x', '--path', dir);
  t.is(run.code, 1);
  t.is(run.stderr.trim().split('\n').length, 1);
  t.regex(run.stderr, new RegExp(`^jobtree: not sending the token to ${endpoint.url}: ${join(dir, 'admin.json')} is writable by other users \\(mode 0666\\)`));
  t.false(sentToken(endpoint.seen));
});

test.serial('a data directory others can write: the change is refused, and the endpoint never sees the token', async (t) => {
  const endpoint = await fakeEndpoint(t);
  const dir = await recordedDir(t, endpoint.url);
  chmodSync(dir, 0o777);
  const run = await jobtreeHere('cancel', 'email', 'x', '--path', dir);
  t.is(run.code, 1);
  t.regex(run.stderr, new RegExp(`^jobtree: not sending the token to ${endpoint.url}: the directory ${dir} is writable by other users \\(mode 0777\\)`));
  t.false(sentToken(endpoint.seen));
  // Reads send no token: they still go to the recorded endpoint.
  t.is((await jobtreeHere('status', '--path', dir)).code, 0);
});

test.serial('an admin.json owned by another user: the change is refused, and the endpoint never sees the token', async (t) => {
  if (process.getuid?.() !== 0) return t.pass('only root can give a file to another user');
  const endpoint = await fakeEndpoint(t);
  const dir = await recordedDir(t, endpoint.url);
  chownSync(join(dir, 'admin.json'), 65_534, 65_534);
  const run = await jobtreeHere('add', 'email', 'x', '--path', dir);
  t.is(run.code, 1);
  t.regex(run.stderr, /is owned by user 65534, not by this user \(0\)/);
  t.false(sentToken(endpoint.seen));
});

test.serial('a record of the current user in a directory only the owner can rewrite (even a shared, sticky one) gets the token', async (t) => {
  const endpoint = await fakeEndpoint(t);
  const dir = await recordedDir(t, endpoint.url);
  chmodSync(dir, 0o1777);
  const run = await jobtreeHere('add', 'email', 'x', '--path', dir);
  t.is(run.code, 0, run.stderr);
  t.true(endpoint.seen.some((headers) => headers.authorization === `Bearer ${TOKEN}`));
});

test.serial('a data directory path flipped between a trusted directory and another: the token goes only where the record checked points', async (t) => {
  // Whoever can write the directory above the data directory can swap which
  // directory its name leads to while the command runs: the record whose
  // owner and mode were checked must be the record whose endpoint is used.
  const trusted = await fakeEndpoint(t);
  const planted = await fakeEndpoint(t);
  const parent = await mkdtemp(join(tmpdir(), 'jobtree-cli-flip-'));
  t.teardown(() => rm(parent, { recursive: true, force: true }));
  const trustedDir = join(parent, 'trusted');
  const plantedDir = join(parent, 'planted');
  mkdirSync(trustedDir, { mode: 0o700 });
  mkdirSync(plantedDir, { mode: 0o700 });
  const record = (url: string) => JSON.stringify({ url, host: '127.0.0.1', port: Number(new URL(url).port), pid: process.pid, startedAt: 0 });
  writeFileSync(join(trustedDir, 'admin.json'), record(trusted.url), { mode: 0o644 });
  writeFileSync(join(plantedDir, 'admin.json'), record(planted.url), { mode: 0o666 });
  chmodSync(join(plantedDir, 'admin.json'), 0o666);
  const tokenFile = join(parent, 'token');
  writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
  const link = join(parent, 'app');
  symlinkSync(trustedDir, link);

  const flipper: ChildProcess = spawn(
    process.execPath,
    [
      '-e',
      `const fs = require('node:fs'); const [link, a, b] = process.argv.slice(1); let i = 0;
       for (;;) { const next = link + '.next'; fs.rmSync(next, { force: true }); fs.symlinkSync(i++ % 2 ? a : b, next); fs.renameSync(next, link); }`,
      link,
      trustedDir,
      plantedDir,
    ],
    { stdio: 'ignore' },
  );
  t.teardown(() => {
    flipper.kill('SIGKILL');
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  for (let i = 0; i < 600 && !sentToken(planted.seen); i++) await jobtreeHere('add', 'email', `x${i}`, '--path', link, '--token-file', tokenFile);
  t.false(sentToken(planted.seen), 'the planted record, writable by others, received the token');
  t.true(sentToken(trusted.seen));
});

test.serial('an admin dataDir the app creates is its owner\'s alone whatever the umask, so the command trusts its record', async (t) => {
  const parent = await mkdtemp(join(tmpdir(), 'jobtree-cli-datadir-'));
  t.teardown(() => rm(parent, { recursive: true, force: true }));
  const dataDir = join(parent, 'missing', 'admin');
  const previous = process.umask(0o002);
  try {
    await startAdminApp(t, { admin: { port: 0, refreshMs: 100, dataDir } });
  } finally {
    process.umask(previous);
  }
  t.is(statSync(dataDir).mode & 0o777, 0o700);
  const run = await jobtreeHere('add', 'email', 'x', '--path', dataDir);
  t.is(run.code, 0, run.stderr);
});

test.serial('an admin.json that is a named pipe with no writer: the command does not wait on it', async (t) => {
  // Opening a pipe to read waits for a writer: whoever can write the
  // directory could otherwise hold every command there.
  if (process.platform === 'win32') return t.pass('no named pipes in the file system');
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-fifo-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  execFileSync('mkfifo', [join(dir, 'admin.json')]);
  const bin = fileURLToPath(new URL('../../packages/jobtree/src/cli/bin.ts', import.meta.url));
  const run = await new Promise<{ code: number | string | null; stderr: string }>((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', bin, 'status', '--path', dir], { timeout: 20_000 }, (error, _stdout, stderr) =>
      resolve({ code: error === null ? 0 : (error.code ?? error.signal ?? null), stderr }),
    );
  });
  t.is(run.code, 1, 'exits with the missing store, not killed after waiting');
  t.regex(run.stderr, /no store at/);
});
