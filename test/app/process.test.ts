// app.process: handlers run by the type's scheduler, which lives in the tree
// as processor:<type>. Killing it or closing the app loses no job. Each
// test runs with its handler in threads and on the main thread.

import test, { type ExecutionContext } from 'ava';
import { JobsError } from '@jobtree/core';
import greet from './fixtures/greet-handler.js';
import { T1, eventually, restarted, startTempApp } from './fixtures/temp-app.js';

type RunIn = 'threads' | 'main';

function testInModes(title: string, implementation: (t: ExecutionContext, runIn: RunIn) => Promise<void>): void {
  for (const runIn of ['threads', 'main'] as const) {
    test.serial(`${title} (${runIn === 'main' ? 'main thread' : 'threads'})`, (t) => implementation(t, runIn));
  }
}

testInModes('a handler runs each job to its result, stored apart from its input, and the end seen by subscribers and the scheduler summaries', async (t, runIn) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  await app.process(T1, greet, { interval: 200, threads: 1, runIn });
  t.truthy(app.system.whereis(`processor:${T1}`));
  await t.throwsAsync(app.process(T1, greet), { instanceOf: JobsError, code: 'invalid_option' });
  await app.add(T1, 'ada', { name: 'Ada' });
  const sub = await app.subscribe(T1, 'ada');
  const done = await app.wait(sub, 'finished', 20_000);
  t.like(done, { state: 'finished', data: { name: 'Ada' } });
  t.like(await app.getJob(T1, 'ada'), { outcome: 'succeeded', data: { name: 'Ada' }, result: { greeting: 'hello Ada' } });
  const summary = app.scheduler.job(T1, 'ada');
  t.truthy(summary === undefined || summary.history.length > 0);
  t.true(T1 in app.scheduler.stats());
  t.truthy(app.scheduler.of(T1));
  const userSup = app.system.tree().children.find((node) => node.name === 'user_sup');
  t.truthy(userSup?.children.some((node) => node.name === `processor:${T1}`));
});

testInModes('killing processor:<type> mid-job loses no job: a new scheduler finishes them all', async (t, runIn) => {
  const { app } = await startTempApp(t, {}, { [T1]: 2 });
  await app.process(T1, greet, { interval: 200, threads: 1, maxJobs: 4, runIn });
  const ids = Array.from({ length: 12 }, (_, i) => `job-${i}`);
  for (const id of ids) await app.add(T1, id, { name: id, slowMs: 300 });
  await eventually(async () => (await app.getActiveJobIds(T1)).length > 0, 20_000, 'a running job');
  const before = app.system.whereis(`processor:${T1}`);
  await app.system.kill(`processor:${T1}`);
  await restarted(app, `processor:${T1}`, before);
  await eventually(async () => (await app.getJobs(T1)).every((job) => job.state === 'finished'), 60_000, 'every job finished');
  for (const job of await app.getJobs(T1)) t.deepEqual(job.result, { greeting: `hello ${job.id}` });
});

testInModes('close() during processing loses no job: what was running is finished or pending at the next start', async (t, runIn) => {
  const { app, dir } = await startTempApp(t, {}, { [T1]: 2 });
  await app.process(T1, greet, { interval: 200, threads: 1, maxJobs: 3, graceMs: 200, runIn });
  for (let i = 0; i < 8; i++) await app.add(T1, `job-${i}`, { name: `n${i}`, slowMs: 2_000 });
  await eventually(async () => (await app.getActiveJobIds(T1)).length > 0, 20_000, 'a running job');
  await app.close();
  const { startJobs } = await import('jobtree');
  const again = await startJobs({ path: dir, threads: 1, logLevel: 'silent' });
  t.teardown(() => again.close());
  const jobs = await again.getJobs(T1);
  t.is(jobs.length, 8);
  t.true(jobs.every((job) => job.state === 'finished' || job.state === 'pending'), JSON.stringify(jobs.map((job) => job.state)));
});
