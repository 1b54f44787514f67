// app.cancel ends a pending or running job as cancelled (a running job's
// handler is aborted once its processor learns the job is no longer its
// own), and app.retry runs a failed or cancelled job again with its input;
// both are on the bridge for actors too.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { JobsError } from 'jobtree';
import { JobsBridge } from '../../packages/jobtree/src/app/jobs-bridge.js';
import { T1, eventually, startTempApp } from './fixtures/temp-app.js';

const abortMarker = new URL('../processors/fixtures/abort-marker.ts', import.meta.url);

test('app.cancel ends a pending job cancelled and app.retry runs it again with its input', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, 'a', { input: 'a' });
  t.true(await app.cancel(T1, 'a'));
  t.like(await app.getJob(T1, 'a'), { state: 'finished', outcome: 'cancelled', data: { input: 'a' } });
  t.false(await app.cancel(T1, 'a'));
  await app.retry(T1, 'a');
  t.like(await app.getJob(T1, 'a'), { state: 'pending', data: { input: 'a' }, attempts: 0 });
  t.is((await t.throwsAsync(app.retry(T1, 'a'), { instanceOf: JobsError }))?.code, 'not_retryable');
  t.is((await t.throwsAsync(app.cancel(T1, 'nobody'), { instanceOf: JobsError }))?.code, 'not_found');
  // The bridge actors call has them too.
  const bridge = new JobsBridge(app.jobs);
  t.true(await bridge.cancel(T1, 'a'));
  await bridge.retry(T1, 'a');
  t.is(await app.getJobState(T1, 'a'), 'pending');
});

test('app.cancel of a running job aborts its handler with cause cancel and the job stays cancelled', async (t) => {
  const { app, dir } = await startTempApp(t, {}, { [T1]: 3 });
  await app.process(T1, abortMarker, { threads: 1, heartbeatMs: 100 });
  const scheduler = app.scheduler.of(T1);
  if (scheduler === undefined) throw new Error('no scheduler');
  const started = new Promise<void>((resolve) => scheduler.events.once('job:started', () => resolve()));
  const cancelled = new Promise<void>((resolve) => scheduler.events.once('job:cancelled', () => resolve()));
  await app.add(T1, 'w', { dir });
  await started;
  await eventually(() => existsSync(join(dir, 'w.running')), 30_000, 'the handler to run');
  t.true(await app.cancel(T1, 'w'));
  await cancelled;
  await eventually(() => existsSync(join(dir, 'w')), 10_000, 'the handler to see its abort');
  t.is(readFileSync(join(dir, 'w'), 'utf8'), 'cancel');
  t.like(await app.getJob(T1, 'w'), { state: 'finished', outcome: 'cancelled', data: { dir } });
});

test('app.cancel and app.remove of running jobs abort their handlers with cause cancel without waiting for a heartbeat', async (t) => {
  // A 300 s timeout puts the heartbeat 100 s away: only the store's cancellation watch can abort the runs within the waits.
  const { app, dir } = await startTempApp(t, {}, { [T1]: 300 });
  await app.process(T1, abortMarker, { threads: 1, maxJobs: 2 });
  const scheduler = app.scheduler.of(T1);
  if (scheduler === undefined) throw new Error('no scheduler');
  await app.add(T1, 'cancelled', { dir });
  await app.add(T1, 'removed', { dir });
  await eventually(() => existsSync(join(dir, 'cancelled.running')) && existsSync(join(dir, 'removed.running')), 30_000, 'both handlers to run');
  t.true(await app.cancel(T1, 'cancelled'));
  t.true(await app.remove(T1, 'removed'));
  // Ample for a loaded machine, yet well short of the heartbeat.
  await eventually(() => existsSync(join(dir, 'cancelled')) && existsSync(join(dir, 'removed')), 30_000, 'the handlers to see their aborts');
  t.is(readFileSync(join(dir, 'cancelled'), 'utf8'), 'cancel');
  t.is(readFileSync(join(dir, 'removed'), 'utf8'), 'cancel');
  await eventually(() => scheduler.stats().running === 0, 30_000, 'the aborted runs to end');
  t.like(await app.getJob(T1, 'cancelled'), { state: 'finished', outcome: 'cancelled', data: { dir } });
  t.is(await app.getJobState(T1, 'removed'), undefined);
});
