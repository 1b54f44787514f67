// A job-processing actor (examples/actors/email-worker.ts) under the app's
// user_sup: it accepts, updates and finishes jobs through the bridge, gets
// `halt` like any worker, and a kill while it waits leaves no job with it.

import test from 'ava';
import emailWorker, { type EmailWorkerMessage } from '../../examples/actors/email-worker.js';
import { T1, eventually, startTempApp } from './fixtures/temp-app.js';

test.serial('a worker actor accepts, updates and finishes jobs through the bridge', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  const worker = await app.system.startActor('worker', emailWorker, { type: T1, workMs: 30 });
  for (let i = 0; i < 5; i++) await app.add(T1, `m${i}`, { to: `u${i}@example.com` });
  await eventually(async () => (await app.getJobs(T1)).every((job) => job.state === 'finished'), 20_000, 'all finished');
  for (const job of await app.getJobs(T1)) t.like(job.data, { sent: true, by: worker.id });
  t.is(await app.system.call<number, EmailWorkerMessage>(worker, { type: 'finished_count' }), 5);
});

test.serial('a removed job gives the worker halt; it drops the job and goes on working', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  const worker = await app.system.startActor('worker', emailWorker, { type: T1, workMs: 1_500 });
  await app.add(T1, 'doomed', { to: 'x@example.com' });
  await eventually(async () => (await app.getJobState(T1, 'doomed')) === 'running', 10_000, 'the worker to take it');
  await app.remove(T1, 'doomed');
  await app.add(T1, 'next', { to: 'y@example.com' });
  await eventually(async () => (await app.getJobState(T1, 'next')) === 'finished', 20_000, 'the next job');
  t.is(await app.system.call<number, EmailWorkerMessage>(worker, { type: 'finished_count' }), 1, 'the same actor, not a restarted one');
});

test.serial('a worker killed while it waits in accept never ends up holding a job', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 30 });
  const worker = await app.system.actors.spawn(emailWorker, { type: T1, workMs: 10, silent: true });
  await new Promise((resolve) => setTimeout(resolve, 300)); // it is now blocked in accept
  await app.system.kill(worker);
  await app.add(T1, 'after-kill', {});
  await new Promise((resolve) => setTimeout(resolve, 1_500)); // its cancelled wait has woken up and given back what it took
  t.is(await app.getJobState(T1, 'after-kill'), 'pending');
  t.truthy(await app.accept(T1), 'another worker can take it');
});
