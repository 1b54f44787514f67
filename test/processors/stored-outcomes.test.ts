// What a run leaves in the store: a handler's result apart from the job's
// input, a given-up job failed with its error and history and its input
// intact, a job added again while it ran run again with its input, and
// attempts counted in the store, so that a new scheduler carries on from
// them.

import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { type HandlerJob, startScheduler } from '../../packages/jobtree/src/processors/index.js';
import { SkippingClock, cancelledBefore, eventually, fixture, harness, nextEvent, testInModes } from './scheduler-harness.js';

testInModes("a handler's result is stored apart from the job's input, which stays its data", async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('thumb', 'noop');
  const finished = nextEvent(scheduler, 'job:finished', (event) => event.id === 'a');
  await h.jobs.add('thumb', 'a', { n: 7 });
  t.is((await finished).state, 'finished');
  t.like(await h.jobs.getJob('thumb', 'a'), { state: 'finished', outcome: 'succeeded', data: { n: 7 }, result: { done: true, n: 7 } });
});

testInModes('a handler that resolves with nothing, undefined or null, leaves no result', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('quiet', 'returns-nothing');
  const finished = Promise.all(['u', 'n'].map((id) => nextEvent(scheduler, 'job:finished', (event) => event.id === id)));
  await h.jobs.add('quiet', 'u', {});
  await h.jobs.add('quiet', 'n', { null: true });
  await finished;
  for (const id of ['u', 'n']) {
    const job = await h.jobs.getJob('quiet', id);
    t.like(job, { state: 'finished', outcome: 'succeeded' });
    t.false(job !== undefined && 'result' in job, id);
  }
});

testInModes('a job given up after its attempts ends failed, its input intact and its error and history readable', async (t) => {
  const h = await harness(t);
  const clock = new SkippingClock();
  const scheduler = await h.start('fragile', 'crash', { attempts: 2, clock, acceptWaitMs: 100 });
  const crashed = nextEvent(scheduler, 'job:crashed');
  await h.jobs.add('fragile', 'x', { keep: 'me' });
  await crashed;
  await eventually(async () => (await h.jobs.getJobState('fragile', 'x')) === 'pending');
  t.like(await h.jobs.getJob('fragile', 'x'), { attempts: 1, data: { keep: 'me' } });
  const failed = nextEvent(scheduler, 'job:failed');
  clock.skip(31_000);
  t.like(await failed, { id: 'x', error: 'boom', attempts: 2 });
  await eventually(async () => (await h.jobs.getJobState('fragile', 'x')) === 'finished');
  const job = await h.jobs.getJob('fragile', 'x');
  t.like(job, { outcome: 'failed', attempts: 2, data: { keep: 'me' }, error: { message: 'boom', name: 'Error' } });
  t.deepEqual(
    (job?.error?.history as { type: string }[] | undefined)?.map((event) => event.type),
    ['crashed', 'started', 'crashed', 'started', 'added'],
  );
  t.deepEqual(await h.jobs.getJobs('fragile', { outcome: 'failed' }).then((jobs) => jobs.map((each) => each.id)), ['x']);
  // Retried by hand, it is pending again with its input (the scheduler stopped first, so that none takes it meanwhile).
  await scheduler.stop({ graceMs: 100 });
  await h.jobs.retry('fragile', 'x');
  t.like(await h.jobs.getJob('fragile', 'x'), { state: 'pending', attempts: 0, data: { keep: 'me' } });
});

testInModes('a job added again while it runs runs again with its input, not with its last result', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('again', 'held-until-released');
  const finishes: string[] = [];
  scheduler.events.on('job:finished', (event) => finishes.push(event.state));
  await h.jobs.add('again', 'a', { dir: h.dir });
  await eventually(() => existsSync(join(h.dir, 'a.started')));
  t.is(await h.jobs.add('again', 'a'), 'running');
  writeFileSync(join(h.dir, 'release'), '');
  await eventually(() => finishes.length === 2);
  t.deepEqual(finishes, ['pending', 'finished']);
  t.like(await h.jobs.getJob('again', 'a'), { outcome: 'succeeded', data: { dir: h.dir }, result: { ranWith: { dir: h.dir } } });
});

testInModes("a run's attempt number comes from the store, and a job that used up its attempts elsewhere fails at its next crash", async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('echo', 3);
  await h.jobs.setTypeTimeout('fragile', 3);
  // Earlier failed attempts, counted by whatever ran them before.
  for (const [type, id] of [['echo', 'e'], ['fragile', 'f']] as const) {
    await h.jobs.add(type, id, { input: id });
    const job = await h.jobs.accept(type);
    if (job === undefined) throw new Error('no job');
    await h.jobs.failAttempt(job, { scheduledTime: 1, attempts: 2 });
  }
  const echo = await h.start('echo', 'echo-job');
  const echoed = nextEvent(echo, 'job:finished', (event) => event.id === 'e');
  const fragile = await h.start('fragile', 'crash', { attempts: 3 });
  const failed = nextEvent(fragile, 'job:failed');
  await echoed;
  const result = (await h.jobs.getJob('echo', 'e'))?.result as { seen: HandlerJob } | undefined;
  t.is(result?.seen.attempt, 3);
  t.like(await failed, { id: 'f', attempts: 3 });
  await eventually(async () => (await h.jobs.getJobState('fragile', 'f')) === 'finished');
  t.like(await h.jobs.getJob('fragile', 'f'), { outcome: 'failed', attempts: 3, data: { input: 'f' } });
});

testInModes('a new scheduler carries on from the attempts a stopped one counted in the store', async (t) => {
  const h = await harness(t);
  const clock = new SkippingClock();
  const first = await h.start('fragile', 'crash', { attempts: 2, clock, acceptWaitMs: 100 });
  const crashed = nextEvent(first, 'job:crashed');
  await h.jobs.add('fragile', 'x', { keep: 'me' });
  await crashed;
  await eventually(async () => (await h.jobs.getJobState('fragile', 'x')) === 'pending');
  await first.stop();
  const second = await h.start('fragile', 'crash', { attempts: 2, clock, acceptWaitMs: 100 });
  const failed = nextEvent(second, 'job:failed');
  clock.skip(31_000);
  t.like(await failed, { id: 'x', attempts: 2 });
  await eventually(async () => (await h.jobs.getJobState('fragile', 'x')) === 'finished');
  t.like(await h.jobs.getJob('fragile', 'x'), { outcome: 'failed', attempts: 2, data: { keep: 'me' } });
});

testInModes("a handler's error too long for the store is stored cut, and its job ends failed", async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('verbose', 'throws-given', { attempts: 1 });
  const errors: unknown[] = [];
  scheduler.events.on('error', (error) => errors.push(error));
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('verbose', 'x', { messageBytes: 300_000 });
  const event = await failed;
  t.true(event.error.startsWith('xxxx') && event.error.endsWith('more characters cut)'), event.error.slice(-40));
  await eventually(async () => (await h.jobs.getJobState('verbose', 'x')) === 'finished');
  const job = await h.jobs.getJob('verbose', 'x');
  t.like(job, { outcome: 'failed', attempts: 1, data: { messageBytes: 300_000 } });
  t.true((job?.error?.message.length ?? 0) < 5_000, `${job?.error?.message.length}`);
  t.is(job?.error?.message, event.error);
  t.deepEqual(errors, []);
});

// Threads only: on the main thread an uncaught error is the process's, not one job's.
test('a handler thread that dies of an uncaught error too long for the store leaves its job failed, the error cut', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('verbose', 'throws-given', { threads: 1, attempts: 1 });
  const errors: unknown[] = [];
  scheduler.events.on('error', (error) => errors.push(error));
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('verbose', 'x', { messageBytes: 300_000, later: true });
  t.regex((await failed).error, /thread died.*more characters cut\)$/s);
  const job = await h.jobs.getJob('verbose', 'x');
  t.like(job, { state: 'finished', outcome: 'failed', attempts: 1 });
  t.true((job?.error?.message.length ?? 0) < 5_000, `${job?.error?.message.length}`);
  t.deepEqual(errors, []);
});

testInModes('a result the store refuses, its refusal too long for the store, leaves its job failed with the refusal cut', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('verbose', 'unstorable-result', { attempts: 1 });
  const errors: unknown[] = [];
  scheduler.events.on('error', (error) => errors.push(error));
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('verbose', 'x', { keyChars: 300_000 });
  t.regex((await failed).error, /not storable.*more characters cut\)$/s);
  const job = await h.jobs.getJob('verbose', 'x');
  t.like(job, { state: 'finished', outcome: 'failed', error: { name: 'TypeError' } });
  t.true((job?.error?.message.length ?? 0) < 5_000, `${job?.error?.message.length}`);
  t.deepEqual(errors, []);
});

testInModes('a handler that throws a string, undefined or an object that refers to itself leaves a readable error', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('odd', 'throws-given', { attempts: 1 });
  const ids = ['string', 'undefined', 'circular'];
  const failed = Promise.all(ids.map((id) => nextEvent(scheduler, 'job:failed', (event) => event.id === id)));
  for (const id of ids) await h.jobs.add('odd', id, { [id]: true });
  await failed;
  await eventually(async () => (await h.jobs.getJobs('odd', { outcome: 'failed' })).length === 3);
  const messages = Object.fromEntries(await Promise.all(ids.map(async (id) => [id, (await h.jobs.getJob('odd', id))?.error] as const)));
  t.like(messages, {
    string: { name: 'Error', message: 'a plain string' },
    undefined: { name: 'Error', message: 'undefined' },
    // Its fields and where it refers back, not `[object Object]`.
    circular: { name: 'Error', message: "<ref *1> { name: 'Loop', self: [Circular *1] }" },
  });
});

testInModes('job:failed is told once the store has the job failed: a cancel from its listener finds it finished already', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('fragile', 'crash', { attempts: 1 });
  const cancels: Promise<boolean>[] = [];
  scheduler.events.on('job:failed', ({ id }) => cancels.push(h.jobs.cancel('fragile', id)));
  const cancelled: string[] = [];
  scheduler.events.on('job:cancelled', ({ id }) => cancelled.push(id));
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('fragile', 'x', {});
  t.like(await failed, { id: 'x', attempts: 1 });
  t.deepEqual(await Promise.all(cancels), [false]);
  t.like(await h.jobs.getJob('fragile', 'x'), { state: 'finished', outcome: 'failed', error: { message: 'boom' } });
  t.deepEqual(cancelled, []);
});

test('a job cancelled between its last crash and the give-up write is told job:cancelled, never job:failed', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('fragile', 3);
  // The real store, with a cancel committed just before each give-up write.
  const cancelFirst = cancelledBefore(h.jobs, 'fail');
  const scheduler = await startScheduler({ jobs: cancelFirst, type: 'fragile', handler: fixture('crash'), threads: 1, attempts: 1 });
  t.teardown(() => scheduler.stop({ graceMs: 100 }));
  const seen: string[] = [];
  for (const name of ['job:failed', 'job:cancelled', 'error'] as const) scheduler.events.on(name, () => seen.push(name));
  const cancelled = nextEvent(scheduler, 'job:cancelled');
  await h.jobs.add('fragile', 'x', {});
  t.is((await cancelled).id, 'x');
  t.like(await h.jobs.getJob('fragile', 'x'), { state: 'finished', outcome: 'cancelled' });
  await scheduler.stop();
  t.deepEqual(seen, ['job:cancelled']);
});

testInModes('a handler that throws a revoked Proxy or an Error whose message getter throws leaves its job failed', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('odd', 'throws-given', { attempts: 1 });
  const ids = ['revokedProxy', 'hostileError'];
  const failed = Promise.all(ids.map((id) => nextEvent(scheduler, 'job:failed', (event) => event.id === id)));
  for (const id of ids) await h.jobs.add('odd', id, { [id]: true });
  await failed;
  await eventually(async () => (await h.jobs.getJobs('odd', { outcome: 'failed' })).length === 2);
  t.like(await h.jobs.getJob('odd', 'revokedProxy'), { error: { name: 'Error', message: '<Revoked Proxy>' } });
  t.like(await h.jobs.getJob('odd', 'hostileError'), { error: { name: 'Error', message: 'a thrown object that cannot be shown' } });
});

testInModes('a handler that throws an Error whose name and message are no strings leaves its job failed with them as text, and the runs beside it go on', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('odd', 'throws-given', { attempts: 1 });
  const ids = ['unsendableError', 'string'];
  const failed = Promise.all(ids.map((id) => nextEvent(scheduler, 'job:failed', (event) => event.id === id)));
  for (const id of ids) await h.jobs.add('odd', id, { [id]: true });
  await failed;
  await eventually(async () => (await h.jobs.getJobs('odd', { outcome: 'failed' })).length === 2);
  t.like(await h.jobs.getJob('odd', 'unsendableError'), { error: { name: 'Symbol(Odd)', message: 'a message object' } });
  t.like(await h.jobs.getJob('odd', 'string'), { error: { name: 'Error', message: 'a plain string' } });
});
