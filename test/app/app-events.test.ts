// The app's events: `job:failed` when a job of this app is given up (by its
// processor out of attempts, or by a worker's `fail`), with its error and
// attempts; `job:cancelled` when this app ends a job as cancelled.

import test from 'ava';
import type { JobsAppEventTypes } from 'jobtree';
import alwaysCrash from '../admin/fixtures/always-crash-handler.js';
import { T1, eventually, startTempApp } from './fixtures/temp-app.js';

type Failed = JobsAppEventTypes['job:failed'][0];
type Cancelled = JobsAppEventTypes['job:cancelled'][0];

test('a processor that gives a job up emits job:failed with its error and attempts', async (t) => {
  const { app } = await startTempApp(t);
  const failed: Failed[] = [];
  app.events.on('job:failed', (event) => failed.push(event));
  await app.process(T1, alwaysCrash, { threads: 1, attempts: 1 });
  await app.add(T1, 'doomed', null);
  await eventually(() => failed.length > 0, 20_000, 'job:failed');
  t.is(failed.length, 1);
  t.like(failed[0], { type: T1, id: 'doomed', attempts: 1, error: { message: 'every run of this job crashes', name: 'Error' } });
  t.like(await app.getJob(T1, 'doomed'), { outcome: 'failed', attempts: 1 });
});

test("a worker's fail emits job:failed; a fail that sends a job flagged to run again back to the queue does not", async (t) => {
  const { app } = await startTempApp(t);
  const failed: Failed[] = [];
  app.events.on('job:failed', (event) => failed.push(event));
  await app.add(T1, 'a', { n: 1 });
  const job = await app.accept(T1, { timeout: 5_000 });
  if (job === undefined) throw new Error('no job');
  await app.jobs.fail(job, { message: 'bad address', name: 'MailError', history: [{ type: 'crashed' }] });
  t.deepEqual(failed, [{ type: T1, id: 'a', attempts: 1, error: { message: 'bad address', name: 'MailError', history: [{ type: 'crashed' }] } }]);

  await app.retry(T1, 'a');
  const again = await app.accept(T1, { timeout: 5_000 });
  if (again === undefined) throw new Error('no job');
  const flagged = await app.resubmit(again);
  t.is(await app.jobs.fail(flagged, new Error('once more')), 'pending');
  t.is(failed.length, 1);
});

test('app.cancel emits job:cancelled for the job it ended, not for a job that had ended already', async (t) => {
  const { app } = await startTempApp(t);
  const cancelled: Cancelled[] = [];
  app.events.on('job:cancelled', (event) => cancelled.push(event));
  await app.add(T1, 'pending', null);
  await app.add(T1, 'running', null);
  await app.add(T1, 'done', null);
  t.true(await app.cancel(T1, 'pending'));
  const running = await app.accept(T1, { timeout: 5_000 });
  if (running === undefined) throw new Error('no job');
  t.true(await app.cancel(T1, running.id));
  const done = await app.accept(T1, { timeout: 5_000 });
  if (done === undefined) throw new Error('no job');
  await app.finish(done);
  t.false(await app.cancel(T1, done.id));
  t.deepEqual(
    cancelled.map((event) => event.id).sort(),
    ['pending', running.id].sort(),
  );
  t.true(cancelled.every((event) => event.type === T1));
});
