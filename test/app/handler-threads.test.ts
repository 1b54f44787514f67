// The handler threads of app.process are one pool for every job type: many
// types cost no more threads than one, a thread that one type's handler
// takes down is every type's loss (each job told apart: the culprit
// charged, the others run again), and a processor that stops ends only its
// own runs. process() resolves once the type's handler module is loaded in
// every thread, and rejects when it does not load. A thread that exits before
// it ran a job is replaced, later, and the log and app.events say so once.

import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import test from 'ava';
import type { JobsApp } from 'jobtree';
import { pino } from 'pino';
import { SchedulerError } from '../../packages/jobtree/src/processors/index.js';
import orders from './fixtures/orders-handler.js';
import { eventually, startTempApp } from './fixtures/temp-app.js';

/** The worker threads of the app: its host threads, and the handler threads of every type's processor. */
function workerThreads(app: JobsApp, types: readonly string[]): number {
  const handlerThreads = new Set<number>();
  for (const type of types) for (const worker of app.scheduler.of(type)?.threads ?? []) handlerThreads.add(worker.threadId);
  return app.system.threads().length + handlerThreads.size;
}

test.serial('processors of 100 types add at most cores + 2 threads to the app', async (t) => {
  const types = Array.from({ length: 100 }, (_, i) => `kind-${i}`);
  // The default number of handler threads, not the fixture's one.
  const { app } = await startTempApp(t, { handlerThreads: undefined }, Object.fromEntries(types.map((type) => [type, 30])));
  const none = workerThreads(app, []);
  for (const type of types) await app.process(type, orders, { interval: 60_000 });
  const all = workerThreads(app, types);
  t.true(all - none <= availableParallelism() + 2, `${all - none} threads more with 100 processors (cores: ${availableParallelism()})`);
  // Each runs its jobs on them.
  const subs = await Promise.all(
    ['kind-0', 'kind-99'].map(async (type) => {
      await app.add(type, 'one', {});
      return app.subscribe(type, 'one');
    }),
  );
  for (const sub of subs) t.like(await app.wait(sub, 'finished', 30_000), { state: 'finished' });
});

test.serial('process() resolves once every handler thread has loaded the module, so no first job waits for a load', async (t) => {
  const loads = await mkdtemp(join(tmpdir(), 'jobtree-loads-'));
  t.teardown(() => rm(loads, { recursive: true, force: true }));
  // The handler threads start with the first process() and take the environment as it is then.
  process.env.JOBTREE_TEST_LOADS = loads;
  t.teardown(() => {
    delete process.env.JOBTREE_TEST_LOADS;
  });
  const { app } = await startTempApp(t, { handlerThreads: 2 }, { late: 30 });
  await app.process('late', new URL('./fixtures/late-second-load-handler.ts', import.meta.url), { interval: 60_000 });
  const loaded = (await readdir(loads)).filter((name) => name.startsWith('loaded-'));
  t.is(loaded.length, 2, `loaded in ${loaded.join(', ')}`);
});

test.serial('a thread one type crashes reports the other type’s job on it lost to that type, which runs it again uncharged', async (t) => {
  const { app } = await startTempApp(t, { handlerThreads: 1 }, { crashy: 30, steady: 30 });
  await app.process('crashy', orders, { attempts: 1, interval: 60_000 });
  await app.process('steady', orders, { attempts: 1, interval: 60_000 });
  const steady = app.scheduler.of('steady');
  const crashy = app.scheduler.of('crashy');
  if (steady === undefined || crashy === undefined) throw new Error('no schedulers');
  const stopped: string[] = [];
  steady.events.on('job:stopped', (event) => stopped.push(`${event.id}:${event.cause}`));
  const started = new Promise<void>((resolve) => steady.events.on('job:started', () => resolve()));
  await app.add('steady', 'bystander', { sleepMs: 1_500 });
  await started;
  const failed = new Promise<string>((resolve) => crashy.events.on('job:failed', (event) => resolve(event.id)));
  await app.add('crashy', 'culprit', { exit: true });
  t.is(await failed, 'culprit', 'the crash is charged to the job whose handler took the thread down');
  const sub = await app.subscribe('steady', 'bystander');
  t.like(await app.wait(sub, 'finished', 30_000), { state: 'finished' });
  t.deepEqual(stopped, ['bystander:thread_lost'], "the steady type's scheduler heard of its job's loss");
  const job = await app.getJob('steady', 'bystander');
  t.like(job, { outcome: 'succeeded', result: { attempt: 1 } }, 'run again with nothing counted against it');
});

test.serial('a handler module that does not load rejects process() with invalid_handler, and no job spends an attempt on it', async (t) => {
  const { app } = await startTempApp(t, {}, { broken: 30 });
  await app.add('broken', 'waiting', {});
  const error = await t.throwsAsync(app.process('broken', new URL('./fixtures/fails-to-load-handler.ts', import.meta.url)), { instanceOf: SchedulerError });
  t.is(error?.code, 'invalid_handler');
  t.regex(error?.message ?? '', /fails-to-load-handler/);
  t.is(app.system.whereis('processor:broken'), undefined, 'no processor started');
  t.like(await app.getJob('broken', 'waiting'), { state: 'pending', attempts: 0 });
});

test.serial('a handler module whose import ends its thread rejects process() with invalid_handler, and the threads carry on for other types', async (t) => {
  const { app } = await startTempApp(t, { handlerThreads: 1 }, { exits: 30, steady: 30 });
  await app.add('exits', 'waiting', {});
  const processing = app.process('exits', new URL('./fixtures/exits-on-import-handler.ts', import.meta.url));
  // Without an answer, process() would hang for ever: a bound that fails the test instead.
  const unanswered = new Promise<'unanswered'>((resolve) => setTimeout(resolve, 60_000, 'unanswered').unref());
  const outcome = await Promise.race([processing.then(() => 'resolved' as const, (error: unknown) => error), unanswered]);
  t.true(outcome instanceof SchedulerError, `process() gave ${String(outcome)}`);
  t.is((outcome as SchedulerError).code, 'invalid_handler');
  t.regex((outcome as SchedulerError).message, /exits-on-import-handler.*exited before it loaded it/);
  t.is(app.system.whereis('processor:exits'), undefined, 'no processor started');
  t.like(await app.getJob('exits', 'waiting'), { state: 'pending', attempts: 0 });
  await app.process('steady', orders, { interval: 60_000 });
  await app.add('steady', 'one', {});
  const sub = await app.subscribe('steady', 'one');
  t.like(await app.wait(sub, 'finished', 30_000), { state: 'finished' });
});

test.serial('threads a job’s handler ends while another type’s module loads neither start late nor fail that module’s load', async (t) => {
  const { app } = await startTempApp(t, { handlerThreads: 1 }, { crashy: 30, slow: 30 });
  await app.process('crashy', orders, { maxJobs: 1, attempts: 1, interval: 60_000 });
  const crashy = app.scheduler.of('crashy');
  if (crashy === undefined) throw new Error('no scheduler');
  const restarts: string[] = [];
  crashy.events.on('threads:restarting', (event) => restarts.push(event.reason));
  const failed: string[] = [];
  crashy.events.on('job:failed', (event) => failed.push(event.id));
  for (const id of ['a', 'b', 'c']) await app.add('crashy', id, { exit: true });
  // Each of the three jobs ends its thread while the slow module loads there.
  await app.process('slow', new URL('./fixtures/slow-import-handler.ts', import.meta.url), { interval: 60_000 });
  await eventually(() => failed.length === 3, 30_000, 'the three jobs failed');
  t.deepEqual(restarts, [], 'a thread a job ended is no thread that could not start');
  await app.add('slow', 'one', {});
  const sub = await app.subscribe('slow', 'one');
  t.like(await app.wait(sub, 'finished', 30_000), { state: 'finished' });
});

test.serial('a thread stuck in a handler’s code is ended by the watchdog while another type’s module waits to load there', async (t) => {
  const { app } = await startTempApp(t, { handlerThreads: 1 }, { stuck: 30, later: 30 });
  await app.process('stuck', new URL('./fixtures/loops-handler.ts', import.meta.url), { attempts: 1, stuckThreadMs: 1_000, interval: 60_000 });
  const stuck = app.scheduler.of('stuck');
  if (stuck === undefined) throw new Error('no scheduler');
  const started = new Promise<void>((resolve) => stuck.events.once('job:started', () => resolve()));
  await app.add('stuck', 'loops', {});
  await started;
  // The stuck thread never reads the load: without the watchdog, process() would wait for ever.
  const processing = app.process('later', orders, { interval: 60_000 });
  const unanswered = new Promise<'unanswered'>((resolve) => setTimeout(resolve, 30_000, 'unanswered').unref());
  t.is(await Promise.race([processing.then(() => 'resolved' as const), unanswered]), 'resolved');
  await eventually(async () => (await app.getJob('stuck', 'loops'))?.outcome === 'failed', 10_000, 'the stuck job failed');
});

test.serial('stopping one type’s processor leaves another type’s runs on the shared thread running', async (t) => {
  const { app } = await startTempApp(t, { handlerThreads: 1 }, { leaving: 30, staying: 30 });
  await app.process('leaving', orders, { interval: 60_000, graceMs: 5_000 });
  await app.process('staying', orders, { interval: 60_000 });
  const staying = app.scheduler.of('staying');
  if (staying === undefined) throw new Error('no scheduler');
  const stopped: string[] = [];
  staying.events.on('job:stopped', (event) => stopped.push(event.id));
  await app.add('staying', 'long', { sleepMs: 2_000 });
  await app.add('leaving', 'honours', { sleepMs: 60_000, honour: true });
  await eventually(async () => (await app.getActiveJobIds('leaving')).length === 1 && (await app.getActiveJobIds('staying')).length === 1, 20_000, 'both running');
  await app.system.stopChild('processor:leaving');
  t.like(await app.getJob('leaving', 'honours'), { state: 'pending' }, 'the stopped type gave its job back');
  const sub = await app.subscribe('staying', 'long');
  t.like(await app.wait(sub, 'finished', 30_000), { state: 'finished' });
  t.deepEqual(stopped, [], 'the other type’s run was not cut');
  t.like(await app.getJob('staying', 'long'), { result: { attempt: 1 } });
});

test.serial('a handler thread that exits before it ran a job is logged once whatever the types sharing the threads, and told on app.events', async (t) => {
  const lines: { level: number; msg: string; failures?: number }[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const text of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(text));
      done();
    },
  });
  const { app } = await startTempApp(t, { handlerThreads: 1, logger: pino({ level: 'info' }, sink) }, { first: 30, second: 30 });
  const restarts: { reason: string; failures: number; delayMs: number }[] = [];
  app.events.on('threads:restarting', (event) => restarts.push(event));
  await app.process('first', orders, { interval: 60_000 });
  await app.process('second', orders, { interval: 60_000 });
  const scheduler = app.scheduler.of('first');
  const thread = scheduler?.threads[0];
  if (scheduler === undefined || thread === undefined) throw new Error('no handler thread');
  await thread.terminate();
  // piscina's replacement, started as the thread exited: not ready yet.
  await scheduler.threads.find((each) => each !== thread)?.terminate();
  await app.add('second', 'after', {});
  const sub = await app.subscribe('second', 'after');
  t.like(await app.wait(sub, 'finished', 30_000), { state: 'finished' });
  t.true(restarts.length >= 1, 'app.events told of the late start');
  const warnings = lines.filter((line) => line.msg.startsWith('a handler thread exited'));
  t.deepEqual(
    warnings.map((line) => line.failures),
    restarts.map((event) => event.failures),
    'one warning per exit',
  );
});
