// app.pause and app.resume: a paused type's processor starts no job while a
// running one finishes, the pause is in the store (a restarted app on the
// same path finds it), and a resume lets the backlog run.

import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { startJobs } from 'jobtree';
import { T1, eventually, startTempApp } from './fixtures/temp-app.js';

const GATE = new URL('./fixtures/gate-handler.ts', import.meta.url).href;

/** Long enough for an idle processor to have taken a due job several times over (it waits on the store's watch, not a poll). */
const QUIET_MS = 500;

const started = (dir: string, id: string) => existsSync(join(dir, `${id}.started`));

test.serial('pausing a type stops new starts while the running job finishes; resume runs the backlog', async (t) => {
  t.timeout(90_000);
  const { app, dir } = await startTempApp(t, { threads: 1 }, { [T1]: 30 });
  const { default: gate } = await import(GATE);
  await app.process(T1, gate, { threads: 1, maxJobs: 1 });
  await app.add(T1, 'running', { dir, hold: true });
  await eventually(() => started(dir, 'running'), 30_000, 'the first job to start');
  await app.pause(T1);
  t.true(await app.isPaused(T1));
  t.is(await app.add(T1, 'backlog-1', { dir }), 'pending');
  await app.add(T1, 'backlog-2', { dir });
  writeFileSync(join(dir, 'running.go'), '');
  const sub = await app.subscribe(T1, 'running');
  t.like(await app.wait(sub, 'finished', 30_000), { state: 'finished' });
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  t.false(started(dir, 'backlog-1'));
  t.false(started(dir, 'backlog-2'));
  t.is(await app.getJobState(T1, 'backlog-1'), 'pending');

  await app.resume(T1);
  for (const id of ['backlog-1', 'backlog-2']) {
    const each = await app.subscribe(T1, id);
    t.like(await app.wait(each, 'finished', 30_000), { state: 'finished' }, id);
  }
  t.deepEqual(await app.getPausedTypes(), []);
});

test.serial('a pause survives a restart of the app on the same store', async (t) => {
  t.timeout(90_000);
  const { app, dir } = await startTempApp(t, { threads: 1 }, { [T1]: 30 });
  await app.pause(T1);
  await app.add(T1, 'queued', { dir });
  await app.close();

  const again = await startJobs({ path: dir, threads: 1, handlerThreads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => again.close());
  t.true(await again.isPaused(T1));
  t.deepEqual(
    (await again.getPausedTypes()).map((paused) => paused.type),
    [T1],
  );
  const { default: gate } = await import(GATE);
  await again.process(T1, gate, { threads: 1, maxJobs: 2 });
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  t.false(started(dir, 'queued'));
  t.is(await again.getJobState(T1, 'queued'), 'pending');
  await again.resume(T1);
  const sub = await again.subscribe(T1, 'queued');
  t.like(await again.wait(sub, 'finished', 30_000), { state: 'finished' });
});
