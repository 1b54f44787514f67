// A processor restarted by its supervisor carries on with the crash records
// of the scheduler it replaces: a job that crashed before the restart is on
// its second attempt after it, not on a first one again. (The chaos run's
// handlers that hang their thread on a first attempt hung it again after
// every kill of the processor, until the drain ran out of time.)

import test from 'ava';
import type { ProcessorOptions } from 'jobtree';
import crashOnce from './fixtures/crash-once-handler.js';
import { T1, eventually, restarted, startTempApp } from './fixtures/temp-app.js';

/** The scheduler's clock, ten times fast: a first crash's 30-second backoff lasts 3 s, longer than a restart. */
function fastClock(speed: number): NonNullable<ProcessorOptions['clock']> {
  const start = Date.now();
  return {
    now: () => start + (Date.now() - start) * speed,
    setTimeout: (callback, ms) => setTimeout(callback, ms / speed),
    clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  };
}

test('a job that crashed before its processor was killed runs its second attempt under the new one', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  await app.process(T1, crashOnce, { threads: 1, interval: 2_000, clock: fastClock(10) });
  const first = app.scheduler.of(T1);
  if (first === undefined) throw new Error('no scheduler');
  const crashed = new Promise<number>((resolve) => first.events.once('job:crashed', (event) => resolve(event.attempt)));
  await app.add(T1, 'x', null);
  t.is(await crashed, 1);
  // Killed while the job waits out its backoff in the queue.
  const before = app.system.whereis(`processor:${T1}`);
  await app.system.kill(`processor:${T1}`);
  await restarted(app, `processor:${T1}`, before);
  await eventually(() => app.scheduler.of(T1) !== undefined && app.scheduler.of(T1) !== first, 10_000, 'the new scheduler');
  const second = app.scheduler.of(T1);
  let crashesAfter = 0;
  second?.events.on('job:crashed', () => crashesAfter++);
  await eventually(async () => (await app.jobs.getJobState(T1, 'x')) === 'finished', 30_000, 'x finished');
  t.deepEqual((await app.jobs.getJob(T1, 'x'))?.result, { attempt: 2 });
  t.is(crashesAfter, 0, 'the new scheduler did not run it as a first attempt');
});
