// The embedded engine's single-owner rule under pressure: openers racing for
// one directory in separate processes, an opener slowed between the lock's
// steps, an owner killed but not yet reaped, and data directories whose
// names look like file names.

import { type ChildProcess, fork, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import test, { type ExecutionContext } from 'ava';
import { type Database, DatabaseLockedError, FdbError, openDatabase } from '@jobtree/core';
import { DataDirectoryError } from '../../packages/core/src/errors.js';
import type { RaceResult, RaceRound } from './fixtures/lock-racer.js';

const root = new URL('../..', import.meta.url).pathname;
const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url).pathname;
const counter = Buffer.from('counter');

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-lock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Resolves with the first stdout line of `child` matching `pattern` (60 s at most). */
function lineFrom(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within 60 s`)), 60_000);
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      const line = lines.find((candidate) => pattern.test(candidate));
      if (line !== undefined) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve(line);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child exited (${code}) before printing a line matching ${pattern}`));
    });
  });
}

async function readCounter(dir: string): Promise<number> {
  const db = await openDatabase({ path: dir });
  try {
    return await db.doTransaction(async (tx) => (await tx.get(counter))?.readUInt32BE() ?? 0);
  } finally {
    await db.close();
  }
}

/** A pid that belonged to a process which has exited and been reaped. */
async function deadPid(): Promise<number> {
  const child = spawn('true');
  const pid = child.pid ?? 0;
  await new Promise((resolve) => child.once('exit', resolve));
  return pid;
}

test('openers racing in separate processes never own one directory at the same time, and lose no acknowledged commit', async (t) => {
  const racers = 4;
  const rounds = 24;
  const children = Array.from({ length: racers }, () =>
    fork(fixture('lock-racer.ts'), [], { cwd: root, execArgv: ['--import=tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] }),
  );
  t.teardown(() => {
    for (const child of children) child.kill('SIGKILL');
  });
  await Promise.all(children.map((child) => new Promise((resolve) => child.once('message', resolve))));
  const base = tempDir(t);
  let contested = 0;
  for (let round = 0; round < rounds; round++) {
    const dir = join(base, `round-${round}`);
    if (round % 2 === 1) {
      // Half the rounds start from a lock file left by a dead owner: the racers must take it over one at a time.
      mkdirSync(dir);
      writeFileSync(join(dir, 'jobtree.lock'), `${await deadPid()}\n`);
    }
    const spec: RaceRound = { dir, at: Date.now() + 400, holdMs: 300 };
    const results = await Promise.all(
      children.map(
        (child) =>
          new Promise<RaceResult>((resolve) => {
            child.once('message', (result) => resolve(result as RaceResult));
            child.send(spec);
          }),
      ),
    );
    const owners = results.filter((r): r is Extract<RaceResult, { owner: true }> => r.owner);
    for (const loser of results) {
      if (!loser.owner) t.regex(loser.error, /^DatabaseLockedError:database_locked$/, `round ${round}: pid ${loser.pid}`);
    }
    t.true(owners.length >= 1, `round ${round}: someone owned the store`);
    if (owners.length < racers) contested++;
    owners.sort((a, b) => a.from - b.from);
    for (let i = 1; i < owners.length; i++) {
      const before = owners[i - 1] as (typeof owners)[number];
      const after = owners[i] as (typeof owners)[number];
      t.true(before.to <= after.from, `round ${round}: pids ${before.pid} and ${after.pid} owned the store at once`);
    }
    const acked = owners.reduce((sum, owner) => sum + owner.acked, 0);
    t.is(await readCounter(dir), acked, `round ${round}: every acknowledged increment is in the store`);
  }
  t.true(contested > rounds / 2, 'the racers did contend for the lock');
  for (const child of children) child.send('exit');
});

for (const step of ['after-open', 'before-write'] as const) {
  test(`an opener paused ${step === 'after-open' ? 'after opening the lock file' : 'before writing its pid'} and a second opener: exactly one owns the store`, async (t) => {
    const dir = tempDir(t);
    const child = spawn(process.execPath, ['--import=tsx', fixture('slow-opener.ts'), dir, step, '1500'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    t.teardown(() => child.kill('SIGKILL'));
    const outcome = lineFrom(child, /^(owner|locked-out .*)$/);
    await lineFrom(child, /^paused$/);
    let mine: Database | undefined;
    try {
      mine = await openDatabase({ path: dir });
    } catch (error) {
      t.true(error instanceof DatabaseLockedError, `the second opener got ${String(error)}`);
    }
    const theirs = await outcome;
    if (mine !== undefined) {
      t.is(theirs, 'locked-out DatabaseLockedError', 'the paused opener must not also own the store');
      t.is(readFileSync(join(dir, 'jobtree.lock'), 'utf8').trim(), String(process.pid));
      await mine.close();
    } else {
      t.is(theirs, 'owner');
    }
  });
}

test('an owner killed but not yet reaped by its parent does not keep the store locked', async (t) => {
  if (!existsSync('/proc/self/stat')) {
    t.pass('no /proc here to tell a zombie apart');
    return;
  }
  const dir = tempDir(t);
  // The shell starts the owner in the background and becomes `sleep`, which never reaps it.
  const parent = spawn('sh', ['-c', `"${process.execPath}" --import=tsx "${fixture('hold-open.ts')}" "${dir}" & exec sleep 300`], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => parent.kill('SIGKILL'));
  const owner = Number((await lineFrom(parent, /^ready \d+$/)).split(' ')[1]);
  process.kill(owner, 'SIGKILL');
  const deadline = Date.now() + 30_000;
  const state = () => readFileSync(`/proc/${owner}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
  // Dead means every thread has exited (the leader shows Z while the others still unwind); it is not reaped.
  const threads = () => readdirSync(`/proc/${owner}/task`).length;
  while (state() !== 'Z' || threads() > 1) {
    if (Date.now() > deadline) throw new Error(`process ${owner} did not become a zombie`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const db = await openDatabase({ path: dir });
  t.is(state(), 'Z', 'the old owner was still unreaped when the store opened');
  await db.doTransaction((tx) => tx.set(counter, Buffer.from('x')));
  await db.close();
});

test('a worker thread of the owning process cannot open the directory a second time', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  // Each thread has its own module instances, so only the lock itself can tell it the directory is taken.
  const workerData = {
    dir,
    core: new URL('../../packages/core/src/index.ts', import.meta.url).href,
    tsxApi: import.meta.resolve('tsx/esm/api'),
  };
  const worker = new Worker(new URL('./fixtures/open-in-thread.mjs', import.meta.url), { workerData });
  t.teardown(() => worker.terminate());
  const outcome = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  t.is(outcome, `DatabaseLockedError ${process.pid}`);
  await db.close();
});

for (const name of ['jobs.db', 'app.v2', 'x.', 'tmp.AbC123', '.hidden']) {
  test(`a data directory named ${name} opens, keeps its data, and leaves nothing beside it`, async (t) => {
    const parent = tempDir(t);
    const dir = join(parent, name);
    let db = await openDatabase({ path: dir });
    await db.doTransaction((tx) => tx.set(counter, Buffer.from('kept')));
    await db.close();
    db = await openDatabase({ path: dir });
    t.is((await db.doTransaction((tx) => tx.get(counter)))?.toString(), 'kept');
    await db.close();
    t.deepEqual(readdirSync(parent), [name]);
    t.true(existsSync(join(dir, 'data.mdb')), 'lmdb keeps its files inside the directory');
  });
}

test('a directory lmdb cannot open fails with DataDirectoryError and leaves no lock file', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'data.mdb')); // where lmdb's data file must go
  const error = await t.throwsAsync(openDatabase({ path: dir }));
  t.true(error instanceof DataDirectoryError, String(error));
  t.is((error as DataDirectoryError).code, 'data_directory_unusable');
  t.deepEqual(readdirSync(dir).filter((file) => file.includes('lock') && file !== 'lock.mdb'), []);
  // The directory is free again: fixing the problem lets the next open in.
  rmSync(join(dir, 'data.mdb'), { recursive: true });
  const db = await openDatabase({ path: dir });
  await db.close();
});

test('a path with a file in the way fails with DataDirectoryError, creating nothing', async (t) => {
  const parent = tempDir(t);
  writeFileSync(join(parent, 'file'), 'not a directory');
  for (const path of [join(parent, 'file'), join(parent, 'file', 'below')]) {
    const error = await t.throwsAsync(openDatabase({ path }));
    t.true(error instanceof DataDirectoryError, String(error));
    t.false(error instanceof FdbError);
  }
  t.deepEqual(readdirSync(parent), ['file']);
});

test('a data directory the store creates is its owner\'s alone, whatever the umask; an existing one keeps its mode', async (t) => {
  const parent = tempDir(t);
  const previous = process.umask(0o002);
  let created: string;
  let existing: string;
  try {
    created = join(parent, 'missing', 'data');
    existing = join(parent, 'existing');
    mkdirSync(existing, { mode: 0o750 });
    for (const path of [created, existing]) {
      const db = await openDatabase({ path });
      await db.close();
    }
  } finally {
    process.umask(previous);
  }
  t.is(statSync(created).mode & 0o777, 0o700);
  t.is(statSync(existing).mode & 0o777, 0o750);
  // A missing parent is created as `mkdir -p` would (umask 002 here).
  t.is(statSync(join(parent, 'missing')).mode & 0o777, 0o775);
});
