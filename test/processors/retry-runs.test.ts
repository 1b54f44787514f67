// A processor's retry policy applied to runs: the backoff given (a function
// of the attempt and the error) decides the next attempt's time, stored
// with the job; errors that must not be retried end the job failed at
// once; a run longer than maxRunMs is aborted and counts as a crash; a
// restart between attempts keeps the count and the wait; and a crash is told
// once its retry is in the store.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { MAX_SCHEDULED_TIME } from '../../packages/core/src/index.js';
import { type RunFailure, startScheduler } from '../../packages/jobtree/src/processors/index.js';
import { SkippingClock, cancelledBefore, eventually, fixture, harness, nextEvent, testInModes } from './scheduler-harness.js';

testInModes('a backoff function gets the failed attempt and its error, and its wait is the next attempt time, in the event and in the store', async (t) => {
  const h = await harness(t);
  const clock = new SkippingClock();
  const calls: [number, RunFailure][] = [];
  const scheduler = await h.start('fragile', 'crash', {
    clock,
    acceptWaitMs: 100,
    backoff: (attempt, error) => {
      calls.push([attempt, error]);
      return attempt * 7_000;
    },
  });
  const crashed = nextEvent(scheduler, 'job:crashed');
  const before = clock.now();
  await h.jobs.add('fragile', 'x', {});
  const event = await crashed;
  const after = clock.now();
  t.deepEqual(calls, [[1, { name: 'Error', message: 'boom' }]]);
  t.true(event.retryAt >= before + 7_000 && event.retryAt <= after + 7_000, `${event.retryAt - before}`);
  await eventually(async () => (await h.jobs.getJobState('fragile', 'x')) === 'pending');
  t.like(await h.jobs.getJob('fragile', 'x'), { attempts: 1, scheduledTime: event.retryAt / 1000 });
  const second = nextEvent(scheduler, 'job:crashed');
  clock.skip(7_000);
  const next = await second;
  t.is(next.attempt, 2);
  t.deepEqual(calls[1], [2, { name: 'Error', message: 'boom' }]);
});

testInModes('job:crashed is told once the store has the job pending with its attempt counted: a listener that reads the job sees its retry', async (t) => {
  const h = await harness(t);
  const clock = new SkippingClock();
  const scheduler = await h.start('fragile', 'crash', { clock, acceptWaitMs: 100 });
  const reads: ReturnType<typeof h.jobs.getJob>[] = [];
  scheduler.events.on('job:crashed', ({ id }) => reads.push(h.jobs.getJob('fragile', id)));
  const crashed = nextEvent(scheduler, 'job:crashed');
  await h.jobs.add('fragile', 'x', {});
  const event = await crashed;
  t.like(await reads[0], { state: 'pending', attempts: 1, scheduledTime: event.retryAt / 1000 });
});

testInModes('a NonRetryableError thrown by a handler ends its job failed after one attempt, attempts left or not', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('strict', 'refuses-input', { attempts: 5 });
  let crashes = 0;
  scheduler.events.on('job:crashed', () => crashes++);
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('strict', 'x', { bad: true });
  t.like(await failed, { id: 'x', attempts: 1, error: 'BadInput: the input cannot be processed' });
  await eventually(async () => (await h.jobs.getJobState('strict', 'x')) === 'finished');
  t.like(await h.jobs.getJob('strict', 'x'), {
    outcome: 'failed',
    attempts: 1,
    data: { bad: true },
    error: { name: 'BadInput', message: 'the input cannot be processed' },
  });
  t.is(crashes, 0);
});

testInModes('retryIf returning false ends the job failed after one attempt; true retries it', async (t) => {
  const h = await harness(t);
  const seen: RunFailure[] = [];
  const scheduler = await h.start('picky', 'crash', {
    attempts: 5,
    retryIf: (error) => {
      seen.push(error);
      return error.message !== 'boom';
    },
  });
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('picky', 'x', {});
  t.like(await failed, { id: 'x', attempts: 1 });
  t.deepEqual(seen, [{ name: 'Error', message: 'boom' }]);
  await eventually(async () => (await h.jobs.getJobState('picky', 'x')) === 'finished');
  t.like(await h.jobs.getJob('picky', 'x'), { outcome: 'failed', attempts: 1 });

  const lenient = await h.start('lenient', 'crash', { attempts: 5, retryIf: () => true });
  const crashed = nextEvent(lenient, 'job:crashed');
  await h.jobs.add('lenient', 'y', {});
  t.like(await crashed, { id: 'y', attempt: 1 });
});

testInModes('a run longer than maxRunMs has its signal aborted with cause timeout and counts as a crash', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('slow', 'abort-marker', { maxRunMs: 150 });
  const crashed = nextEvent(scheduler, 'job:crashed');
  await h.jobs.add('slow', 'x', { dir: h.dir });
  const event = await crashed;
  t.like(event, { id: 'x', attempt: 1 });
  t.regex(event.error, /^TimeoutError: .*maxRunMs \(150 ms\)/);
  t.is(readFileSync(join(h.dir, 'x'), 'utf8'), 'timeout');
  await eventually(async () => (await h.jobs.getJob('slow', 'x'))?.attempts === 1);
});

for (const ending of ['returns', 'throws'] as const) {
  testInModes(`a job cancelled after its run timed out ends cancelled when its handler then ${ending}`, async (t) => {
    const h = await harness(t);
    const scheduler = await h.start('late', 'outlives-abort', { graceMs: 60_000, attempts: 3 });
    const seen: string[] = [];
    for (const name of ['job:crashed', 'job:failed', 'job:finished', 'job:cancelled', 'error'] as const) scheduler.events.on(name, () => seen.push(name));
    await h.jobs.add('late', 'x', { dir: h.dir, throws: ending === 'throws' }, { retry: { maxRunMs: 100 } });
    await eventually(() => existsSync(join(h.dir, 'x.aborted')));
    t.is(readFileSync(join(h.dir, 'x.aborted'), 'utf8'), 'timeout');
    t.true(await h.jobs.cancel('late', 'x'));
    await eventually(() => seen.includes('job:cancelled'));
    writeFileSync(join(h.dir, 'release'), '');
    await eventually(() => existsSync(join(h.dir, 'x.ended')));
    // A run of another job after the cancelled one's end shows the scheduler went on past it.
    await h.jobs.add('late', 'y', { dir: h.dir });
    await eventually(async () => (await h.jobs.getJobState('late', 'y')) === 'finished');
    t.deepEqual(seen, ['job:cancelled', 'job:finished']);
    t.like(await h.jobs.getJob('late', 'x'), { state: 'finished', outcome: 'cancelled' });
  });
}

testInModes('a handler that ignores its signal past maxRunMs loses its thread (on the main thread, its run) after the grace period, and the run counts as a crash', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('stubborn', 'misbehave', { maxRunMs: 100, graceMs: 100, attempts: 1 });
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('stubborn', 'x', { sleepMs: 60_000 });
  t.like(await failed, { id: 'x', attempts: 1 });
  await eventually(async () => (await h.jobs.getJobState('stubborn', 'x')) === 'finished');
  t.like(await h.jobs.getJob('stubborn', 'x'), { outcome: 'failed', error: { name: 'TimeoutError' } });
  t.false(existsSync(join(h.dir, 'x')));
});

testInModes('a restart between attempts keeps the attempt count and the backoff: the job does not run before its wait ends', async (t) => {
  const h = await harness(t);
  const clock = new SkippingClock();
  const options = { clock, acceptWaitMs: 50, attempts: 3, backoff: { type: 'fixed', delayMs: 60_000 } } as const;
  const first = await h.start('fragile', 'crash', options);
  const crashed = nextEvent(first, 'job:crashed');
  await h.jobs.add('fragile', 'x', {});
  const { retryAt } = await crashed;
  await eventually(async () => (await h.jobs.getJobState('fragile', 'x')) === 'pending');
  await first.stop();

  const second = await h.start('fragile', 'crash', options);
  const starts: number[] = [];
  second.events.on('job:started', (event) => starts.push(event.attempt));
  clock.skip(30_000);
  // Several accept rounds of the new scheduler, half way through the wait: the job stays put.
  await second.reschedule();
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.deepEqual(starts, []);
  t.like(await h.jobs.getJob('fragile', 'x'), { state: 'pending', attempts: 1, scheduledTime: retryAt / 1000 });

  const next = nextEvent(second, 'job:crashed');
  clock.skip(31_000);
  t.like(await next, { id: 'x', attempt: 2 });
  t.deepEqual(starts, [2]);
});

testInModes("a job's own retry policy, stored with it, overrides its type's: attempts, backoff and maxRunMs", async (t) => {
  const h = await harness(t);
  const clock = new SkippingClock();
  const fragile = await h.start('fragile', 'crash', { clock, acceptWaitMs: 100, attempts: 5, backoff: { type: 'fixed', delayMs: 600_000 } });
  const crashes: { id: string; retryAt: number }[] = [];
  fragile.events.on('job:crashed', (event) => crashes.push(event));
  const failed = nextEvent(fragile, 'job:failed', (event) => event.id === 'once');
  const crashed = nextEvent(fragile, 'job:crashed', (event) => event.id === 'soon');
  const before = clock.now();
  await h.jobs.add('fragile', 'once', {}, { retry: { attempts: 1 } });
  await h.jobs.add('fragile', 'soon', {}, { retry: { backoff: { type: 'fixed', delayMs: 2_000 } } });
  t.like(await failed, { id: 'once', attempts: 1 });
  const { retryAt } = await crashed;
  t.true(retryAt >= before + 2_000 && retryAt < clock.now() + 2_000 + 1, `${retryAt - before}`);
  t.false(crashes.some((event) => event.id === 'once'));

  const slow = await h.start('slow', 'abort-marker', { maxRunMs: 600_000 });
  const timedOut = nextEvent(slow, 'job:crashed', (event) => event.id === 'brief');
  await h.jobs.add('slow', 'brief', { dir: h.dir }, { retry: { maxRunMs: 100 } });
  t.regex((await timedOut).error, /maxRunMs \(100 ms\)/);
  t.is(readFileSync(join(h.dir, 'brief'), 'utf8'), 'timeout');
});

testInModes("a wait past the store's latest scheduled time puts the next attempt at that time, and the job waits pending", async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('patient', 'crash', { attempts: 5, backoff: () => Number.MAX_SAFE_INTEGER });
  const errors: unknown[] = [];
  scheduler.events.on('error', (error) => errors.push(error));
  const crashed = Promise.all(['by-type', 'by-job'].map((id) => nextEvent(scheduler, 'job:crashed', (event) => event.id === id)));
  await h.jobs.add('patient', 'by-type', {});
  await h.jobs.add('patient', 'by-job', {}, { retry: { backoff: { type: 'fixed', delayMs: 1e15 } } });
  for (const event of await crashed) t.is(event.retryAt, MAX_SCHEDULED_TIME * 1000, event.id);
  for (const id of ['by-type', 'by-job']) {
    await eventually(async () => (await h.jobs.getJobState('patient', id)) === 'pending');
    t.like(await h.jobs.getJob('patient', id), { attempts: 1, scheduledTime: MAX_SCHEDULED_TIME });
  }
  t.deepEqual(errors, []);
});

test('a job cancelled between its crash and its retry write is told job:cancelled, never job:crashed', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('fragile', 3);
  // The real store, with a cancel committed just before each retry write.
  const cancelFirst = cancelledBefore(h.jobs, 'failAttempt');
  const scheduler = await startScheduler({ jobs: cancelFirst, type: 'fragile', handler: fixture('crash'), threads: 1, attempts: 3 });
  t.teardown(() => scheduler.stop({ graceMs: 100 }));
  const seen: string[] = [];
  for (const name of ['job:crashed', 'job:failed', 'job:cancelled', 'error'] as const) scheduler.events.on(name, () => seen.push(name));
  const cancelled = nextEvent(scheduler, 'job:cancelled');
  await h.jobs.add('fragile', 'x', {});
  t.is((await cancelled).id, 'x');
  t.like(await h.jobs.getJob('fragile', 'x'), { state: 'finished', outcome: 'cancelled' });
  await scheduler.stop();
  t.deepEqual(seen, ['job:cancelled']);
});
