// Who may reach the owner of a shared store, and what a dead owner leaves
// behind. A socket file is never taken for an owner: one left by a killed
// owner, or any file in its place, does not stop the next owner. Only the
// user who owns the store connects: a client refuses a socket directory
// that admits other users or belongs to another user (JobsError
// `access_denied`), and the kernel refuses another user's process the
// socket itself.

import { spawn } from 'node:child_process';
import { chmod, chown, lstat, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { JobsError, openJobs } from '@jobtree/core';
import test from 'ava';
import { bounded, ownerPidOf, Peer, PeerCallError, tempDataDir } from './fixtures/peers.js';

/** The user and group "nobody": another user than the one running the tests. */
const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
const rootOnly = asRoot ? test : test.skip;
if (!asRoot) console.log('store-socket-access: the tests with another user are skipped: they need root (to chown, and to run a process as another user)');

test('a socket file left by a killed owner, or a regular file in its place, does not stop a new owner', async (t) => {
  const dir = await tempDataDir(t, 'access-stale');
  const socket = join(dir, 'run', 'owner.sock');
  const dead = await Peer.start(t, { kind: 'jobs', path: dir });
  await dead.run(`await jobs.setTypeTimeout('mail', 30); await jobs.add('mail', 'kept', {})`);
  await dead.kill('SIGKILL');
  t.true((await lstat(socket)).isSocket(), 'the killed owner left its socket file');

  const owner = await openJobs({ path: dir, ownerWaitMs: 5_000 });
  t.teardown(() => owner.close());
  t.is(owner.role, 'owner');
  const client = await openJobs({ path: dir, role: 'client', ownerWaitMs: 5_000 });
  t.teardown(() => client.close());
  t.is(ownerPidOf(client), process.pid);
  t.is(await client.getJobState('mail', 'kept'), 'pending');

  const other = await tempDataDir(t, 'access-file');
  await mkdir(join(other, 'run'), { mode: 0o700 });
  await writeFile(join(other, 'run', 'owner.sock'), 'not a socket');
  // A client alone waits for an owner and finds none: the file is not one.
  await t.throwsAsync(openJobs({ path: other, role: 'client', ownerWaitMs: 300 }), { instanceOf: JobsError, code: 'owner_lost' });
  const second = await openJobs({ path: other, ownerWaitMs: 5_000 });
  t.teardown(() => second.close());
  t.is(second.role, 'owner');
  t.true((await lstat(join(other, 'run', 'owner.sock'))).isSocket());
  const secondClient = await openJobs({ path: other, role: 'client', ownerWaitMs: 5_000 });
  t.teardown(() => secondClient.close());
  t.is(ownerPidOf(secondClient), process.pid);
});

test('a socket directory that admits other users (mode 0755) makes a client fail with JobsError access_denied', async (t) => {
  const dir = await tempDataDir(t, 'access-mode');
  const owner = await Peer.start(t, { kind: 'jobs', path: dir });
  const run = join(dir, 'run');
  t.is((await lstat(run)).mode & 0o777, 0o700);
  await chmod(run, 0o755);
  const error = await t.throwsAsync(openJobs({ path: dir, ownerWaitMs: 5_000 }), { instanceOf: JobsError, code: 'access_denied' });
  t.regex(error?.message ?? '', /admits other users \(mode 755\)/);
  await chmod(run, 0o700);
  const client = await openJobs({ path: dir, ownerWaitMs: 5_000 });
  t.teardown(() => client.close());
  t.is(ownerPidOf(client), owner.pid);
});

rootOnly('a socket directory of another user makes a client fail with JobsError access_denied', async (t) => {
  const dir = await tempDataDir(t, 'access-owner');
  const owner = await Peer.start(t, { kind: 'jobs', path: dir });
  const run = join(dir, 'run');
  await chown(run, NOBODY, NOBODY);
  const error = await t.throwsAsync(openJobs({ path: dir, ownerWaitMs: 5_000 }), { instanceOf: JobsError, code: 'access_denied' });
  t.regex(error?.message ?? '', new RegExp(`belongs to user ${NOBODY}, not to this process's user 0`));
  await chown(run, 0, 0);
  const client = await openJobs({ path: dir, ownerWaitMs: 5_000 });
  t.teardown(() => client.close());
  t.is(ownerPidOf(client), owner.pid);
});

rootOnly("a process of another user cannot connect to the owner's socket", async (t) => {
  const dir = await tempDataDir(t, 'access-user');
  // The data directory lets the other user look in (so that what stops it is the socket's own directory).
  await chmod(dir, 0o755);
  const owner = await openJobs({ path: dir });
  t.teardown(() => owner.close());
  await owner.setTypeTimeout('mail', 30);
  const socket = join(dir, 'run', 'owner.sock');

  // The kernel's check, for any program of that user.
  const connectAs = spawn(
    process.execPath,
    ['-e', `require('node:net').connect(${JSON.stringify(socket)}).on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (error) => { console.log(error.code); process.exit(0); })`],
    { uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  t.teardown(() => connectAs.kill('SIGKILL'));
  let printed = '';
  connectAs.stdout.on('data', (chunk: Buffer) => {
    printed += chunk.toString();
  });
  await bounded(new Promise((resolve) => connectAs.once('exit', resolve)), 30_000, 'the other user\'s connect to end');
  t.is(printed.trim(), 'EACCES');

  // A jobtree client in a process of that user refuses the owner's socket directory before trying.
  const asClient = await t.throwsAsync(Peer.start(t, { kind: 'jobs', path: dir, options: { role: 'client', ownerWaitMs: 5_000 }, uid: NOBODY, gid: NOBODY }), { instanceOf: PeerCallError });
  t.like(asClient, { name: 'JobsError', code: 'access_denied' });
  t.regex(asClient?.message ?? '', new RegExp(`belongs to user 0, not to this process's user ${NOBODY}`));
  // The owner serves on.
  t.deepEqual(await owner.getTypes(), ['mail']);
});
