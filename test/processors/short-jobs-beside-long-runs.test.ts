// Short jobs beside a run that lasts (a long one-shot job, a continuous
// job): the other slot keeps taking and running them. Queueing jobs inside
// the handler threads would leave short jobs waiting behind the long run
// while a slot is free; this pins the behaviour any such change must keep.

import { setEnvironmentData } from 'node:worker_threads';
import { CONCURRENCY_KEY } from './fixtures/concurrency.js';
import { eventually, harness, nextEvent, testInModes } from './scheduler-harness.js';

const COUNT = 400;

testInModes('short jobs do not wait in a thread behind a long one-shot run while a slot is free', async (t) => {
  t.timeout(120_000);
  setEnvironmentData(CONCURRENCY_KEY, new SharedArrayBuffer(8));
  const h = await harness(t);
  const scheduler = await h.start('mixed', 'concurrency', { maxJobs: 2, threads: 2 });
  const longStarted = nextEvent(scheduler, 'job:started', (event) => event.id === 'long');
  await h.jobs.add('mixed', 'long', { ms: 40_000 });
  await longStarted;
  const finished = new Set<string>();
  let longFinished = false;
  const done = new Promise<void>((resolve) => {
    scheduler.events.on('job:finished', ({ id }) => {
      if (id === 'long') {
        longFinished = true;
        resolve();
      } else {
        finished.add(id);
        if (finished.size === COUNT) resolve();
      }
    });
  });
  await h.jobs.addMany('mixed', Array.from({ length: COUNT }, (_, i) => ({ id: `short-${i}`, data: { ms: 0 } })));
  await done;
  t.false(longFinished, `the long run ended first: ${COUNT - finished.size} short jobs waited for it, one slot idle`);
});

testInModes('short jobs do not wait in a thread behind a continuous run while a slot is free', async (t) => {
  t.timeout(120_000);
  setEnvironmentData(CONCURRENCY_KEY, new SharedArrayBuffer(8));
  const h = await harness(t);
  const scheduler = await h.start('mixed', 'concurrency', { maxJobs: 2, threads: 2 });
  const started = nextEvent(scheduler, 'job:started', (event) => event.id === 'forever');
  await h.jobs.add('mixed', 'forever', { ms: 600_000 }, { continuous: true });
  await started;
  const finished = new Set<string>();
  scheduler.events.on('job:finished', ({ id }) => finished.add(id));
  await h.jobs.addMany('mixed', Array.from({ length: COUNT }, (_, i) => ({ id: `short-${i}`, data: { ms: 0 } })));
  // A few hundred runs of nothing take a second or two; a minute is plenty on a loaded machine.
  const ran = await eventually(() => finished.size === COUNT, 60_000, 100).then(
    () => true,
    () => false,
  );
  t.true(ran, `${COUNT - finished.size} short jobs did not run in a minute, with a slot free (jobs: ${JSON.stringify(scheduler.jobs().jobs.map((job) => `${job.id} ${job.state}`))})`);
});
