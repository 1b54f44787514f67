// Handlers run by the scheduler end to end, on a real store.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { SkippingClock, eventually, harness, nextEvent, testInModes } from './scheduler-harness.js';

testInModes('a one-shot job runs its handler and finishes with its result, its input kept', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('thumb', 'noop');
  const finished = nextEvent(scheduler, 'job:finished', (event) => event.id === 'a');
  await h.jobs.add('thumb', 'a', { n: 7 });
  t.is((await finished).state, 'finished');
  t.is(await h.jobs.getJobState('thumb', 'a'), 'finished');
  t.deepEqual(await h.jobs.getJobData('thumb', 'a'), { n: 7 });
  t.deepEqual((await h.jobs.getJob('thumb', 'a'))?.result, { done: true, n: 7 });
});

testInModes('more continuous jobs than slots all make progress: rotation gives every job a turn', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('follow', 'progress', { maxJobs: 2, maxChurn: 2, interval: 300, acceptWaitMs: 200 });
  const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
  for (const id of ids) await h.jobs.add('follow', id, { runs: 0, ticks: 0 }, { continuous: true });
  await eventually(async () => {
    for (const id of ids) {
      const data = (await h.jobs.getJobData('follow', id)) as { runs: number };
      if (data.runs < 1) return false;
    }
    return true;
  });
  t.true(scheduler.stats().running <= 2);
  await scheduler.stop({ graceMs: 2000 });
  for (const id of ids) t.is(await h.jobs.getJobState('follow', id), 'pending', `${id} went back to the queue`);
});

testInModes('a crashing job is held back by its backoff and ends failed after its attempts', async (t) => {
  const h = await harness(t);
  const clock = new SkippingClock();
  const scheduler = await h.start('fragile', 'crash', { attempts: 2, clock, acceptWaitMs: 100 });
  const crashed = nextEvent(scheduler, 'job:crashed');
  // Before the add: the event comes once the retry is written, a while after the crash on a busy machine.
  const added = clock.now();
  await h.jobs.add('fragile', 'x', { keep: 'me' });
  const first = await crashed;
  t.is(first.error, 'boom');
  t.is(first.retryAt - added > 29_000, true, 'the retry waits about 30 s');
  await eventually(async () => (await h.jobs.getJobState('fragile', 'x')) === 'pending');
  const job = await h.jobs.getJob('fragile', 'x');
  t.true((job?.scheduledTime ?? 0) * 1000 >= first.retryAt - 1);
  t.is(scheduler.job('fragile', 'x')?.state, 'crashing');
  t.is(scheduler.job('fragile', 'x')?.error_count, 1);
  const failed = nextEvent(scheduler, 'job:failed');
  clock.skip(31_000);
  t.is((await failed).attempts, 2);
  await eventually(async () => (await h.jobs.getJobState('fragile', 'x')) === 'finished');
  const given = await h.jobs.getJob('fragile', 'x');
  t.is(given?.outcome, 'failed');
  t.is(given?.error?.message, 'boom');
  t.is(given?.attempts, 2);
  t.deepEqual(given?.data, { keep: 'me' });
  t.deepEqual(
    (given?.error?.history as { type: string }[] | undefined)?.map((event) => event.type),
    ['crashed', 'started', 'crashed', 'started', 'added'],
  );
  t.is(scheduler.job('fragile', 'x'), undefined, 'a failed job leaves the scheduler');
});

testInModes('removing a running job aborts its handler signal with cause cancel', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('watch', 'abort-marker', { heartbeatMs: 100 });
  const started = nextEvent(scheduler, 'job:started');
  await h.jobs.add('watch', 'w1', { dir: h.dir });
  await started;
  const cancelled = nextEvent(scheduler, 'job:cancelled');
  await h.jobs.remove('watch', 'w1');
  await cancelled;
  await eventually(() => existsSync(join(h.dir, 'w1')));
  t.is(readFileSync(join(h.dir, 'w1'), 'utf8'), 'cancel');
  t.is(await h.jobs.getJobState('watch', 'w1'), undefined);
});

// Threads only: it terminates a handler thread.
test('killing a handler thread mid-job loses no job and counts no crash', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('work', 'sleeping-marker', { threads: 1 });
  let crashes = 0;
  scheduler.events.on('job:crashed', () => crashes++);
  const ids = ['k1', 'k2', 'k3'];
  for (const id of ids) await h.jobs.add('work', id, { dir: h.dir, sleepMs: 1500 });
  // Terminated while a handler's own code runs, the thread would be that job's fault: it ends once all three sleep.
  const thread = () => scheduler.threads[0];
  await eventually(() => ids.every((id) => existsSync(join(h.dir, `${id}@${thread()?.threadId}`))));
  const lost = nextEvent(scheduler, 'job:stopped', (event) => event.cause === 'thread_lost');
  await thread()?.terminate();
  await lost;
  await eventually(async () => {
    for (const id of ids) if ((await h.jobs.getJobState('work', id)) !== 'finished') return false;
    return true;
  });
  for (const id of ids) t.deepEqual((await h.jobs.getJob('work', id))?.result, { ok: true });
  t.is(crashes, 0);
});

testInModes('stop during processing loses no job', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('batch', 'misbehave', { maxJobs: 4 });
  const ids = Array.from({ length: 10 }, (_, i) => `s${i}`);
  // Listened for before the adds: a handler on the main thread starts while they go on.
  const started = nextEvent(scheduler, 'job:started');
  for (const [i, id] of ids.entries()) {
    // Some end quickly, some honour their signal, some ignore it past the grace period.
    const orders = i % 3 === 0 ? { sleepMs: 5 } : i % 3 === 1 ? { sleepMs: 30_000, honour: true } : { sleepMs: 30_000 };
    await h.jobs.add('batch', id, orders);
  }
  await started;
  await eventually(() => scheduler.stats().running === 4);
  await scheduler.stop({ graceMs: 300 });
  const states = await Promise.all(ids.map((id) => h.jobs.getJobState('batch', id)));
  for (const [i, state] of states.entries()) t.true(state === 'pending' || state === 'finished', `${ids[i]} is ${state}`);
  t.deepEqual(await h.jobs.getActiveJobIds('batch'), [], 'no job is left running');
});

// Threads only: only a thread can be ended; on the main thread a loop holds up the application (see in-process-handlers.test.ts).
test('a handler in an infinite loop costs only its thread: it fails, its neighbours finish', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('spin', 'misbehave', { threads: 1, stuckThreadMs: 1500, attempts: 1 });
  const crashedIds: string[] = [];
  scheduler.events.on('job:crashed', (event) => crashedIds.push(event.id));
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('spin', 'n1', { sleepMs: 2000 });
  await h.jobs.add('spin', 'n2', { sleepMs: 2000 });
  await nextEvent(scheduler, 'job:started', (event) => event.id === 'n2');
  await h.jobs.add('spin', 'loop', { loop: true });
  const failure = await failed;
  t.is(failure.id, 'loop');
  t.regex(failure.error, /no progress/);
  await eventually(async () => (await h.jobs.getJobState('spin', 'n1')) === 'finished' && (await h.jobs.getJobState('spin', 'n2')) === 'finished');
  t.deepEqual((await h.jobs.getJob('spin', 'n1'))?.result, { ok: true });
  t.deepEqual(crashedIds, [], 'the neighbours did not crash');
  t.like(await h.jobs.getJob('spin', 'loop'), { outcome: 'failed', error: { name: 'ThreadLost' } });
});

// Threads only: on the main thread it would end the test process.
test('a handler that calls process.exit crashes only its own job', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('quit', 'misbehave', { threads: 1, attempts: 1 });
  await h.jobs.add('quit', 'steady', { sleepMs: 1000 });
  await nextEvent(scheduler, 'job:started', (event) => event.id === 'steady');
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('quit', 'quitter', { exit: true });
  t.is((await failed).id, 'quitter');
  await eventually(async () => (await h.jobs.getJobState('quit', 'steady')) === 'finished');
  t.deepEqual((await h.jobs.getJob('quit', 'steady'))?.result, { ok: true });
});

testInModes('a handler whose result cannot cross threads, or be stored, fails its job and nothing else', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('weird', 'uncloneable', { attempts: 1 });
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('weird', 'u1');
  t.regex((await failed).error, h.mode === 'main' ? /not storable/ : /cannot be sent/);
  await eventually(async () => (await h.jobs.getJobState('weird', 'u1')) === 'finished');
});

testInModes('a handler result whose then getter throws fails its job with that error, and the next jobs run', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('odd', 'odd-thenables', { attempts: 1 });
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('odd', 'thrower', { throwingThen: true });
  t.like(await failed, { id: 'thrower', error: 'boom' });
  await eventually(async () => (await h.jobs.getJobState('odd', 'thrower')) === 'finished');
  t.like(await h.jobs.getJob('odd', 'thrower'), { outcome: 'failed', error: { message: 'boom' } });
  const finished = nextEvent(scheduler, 'job:finished', (event) => event.id === 'next');
  await h.jobs.add('odd', 'next', {});
  await finished;
  t.is(await h.jobs.getJobState('odd', 'next'), 'finished');
});

testInModes('a thenable a handler returns is waited for with one read of its then getter', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('odd', 'odd-thenables');
  const finished = nextEvent(scheduler, 'job:finished', (event) => event.id === 'once');
  await h.jobs.add('odd', 'once', {});
  await finished;
  t.deepEqual((await h.jobs.getJob('odd', 'once'))?.result, { thenReads: 1 });
});

testInModes('at stop a one-shot handler that ends within the grace period finishes, one that honours its signal goes back', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('drain', 'misbehave');
  const started = Promise.all(['quick', 'polite'].map((id) => nextEvent(scheduler, 'job:started', (event) => event.id === id)));
  await h.jobs.add('drain', 'quick', { sleepMs: 1500 });
  await h.jobs.add('drain', 'polite', { sleepMs: 60_000, honour: true });
  await started;
  // Started means sent to a thread; on a loaded machine the thread may still
  // be loading the handler module. The grace period is for handlers that run.
  // (`quick` may even have finished by then: it is no longer the scheduler's.)
  await eventually(() => scheduler.job('drain', 'polite')?.pid != null && scheduler.job('drain', 'quick')?.pid !== null);
  await scheduler.stop({ graceMs: 20_000 });
  t.is(await h.jobs.getJobState('drain', 'quick'), 'finished');
  t.deepEqual((await h.jobs.getJob('drain', 'quick'))?.result, { ok: true });
  t.is(await h.jobs.getJobState('drain', 'polite'), 'pending');
  t.deepEqual(await h.jobs.getJobData('drain', 'polite'), { sleepMs: 60_000, honour: true }, 'its data is kept');
});

// Threads only: on the main thread an uncaught error is the process's, not one job's.
test('an error thrown from a handler timer crashes that job alone, though it ends the thread', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('late', 'misbehave', { threads: 1, attempts: 1 });
  const crashedIds: string[] = [];
  scheduler.events.on('job:crashed', (event) => crashedIds.push(event.id));
  await h.jobs.add('late', 'calm', { sleepMs: 1500 });
  await nextEvent(scheduler, 'job:started', (event) => event.id === 'calm');
  const failed = nextEvent(scheduler, 'job:failed');
  await h.jobs.add('late', 'thrower', { throwLater: true });
  t.is((await failed).id, 'thrower');
  await eventually(async () => (await h.jobs.getJobState('late', 'calm')) === 'finished');
  t.deepEqual(crashedIds, []);
});
