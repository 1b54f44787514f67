// A running job removed or cancelled through the jobs handle has its
// handler's signal aborted (cause `cancel`) as soon as the store tells the
// scheduler, not at its next heartbeat: the type's timeout here is 300 s, so
// the heartbeat would come after 100 s, and each test waits at most 30 s for
// the abort once the handler runs (ample for a loaded machine, yet well short
// of the heartbeat). The job stays as the remove or cancel
// left it.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, harness, nextEvent, testInModes } from './scheduler-harness.js';

/** Long enough that only the store's cancellation watch, not a heartbeat, can abort the run in time. */
const TYPE_TIMEOUT_SECONDS = 300;
const ABORT_WAIT_MS = 30_000;

testInModes('cancelling a running job aborts its handler with cause cancel long before a heartbeat, and it stays cancelled', async (t) => {
  const h = await harness(t, TYPE_TIMEOUT_SECONDS);
  const scheduler = await h.start('long', 'abort-marker');
  const started = nextEvent(scheduler, 'job:started');
  await h.jobs.add('long', 'c1', { dir: h.dir });
  await started;
  await eventually(() => existsSync(join(h.dir, 'c1.running')));
  const cancelled = nextEvent(scheduler, 'job:cancelled', (event) => event.id === 'c1', ABORT_WAIT_MS);
  t.true(await h.jobs.cancel('long', 'c1'));
  await cancelled;
  await eventually(() => existsSync(join(h.dir, 'c1')), ABORT_WAIT_MS);
  t.is(readFileSync(join(h.dir, 'c1'), 'utf8'), 'cancel');
  // The aborted run's end neither finishes the job nor runs it again.
  await eventually(() => scheduler.stats().running === 0, ABORT_WAIT_MS);
  t.like(await h.jobs.getJob('long', 'c1'), { state: 'finished', outcome: 'cancelled', data: { dir: h.dir } });
  t.is(scheduler.job('long', 'c1'), undefined);
});

testInModes('removing a running job aborts its handler with cause cancel long before a heartbeat, and it stays removed', async (t) => {
  const h = await harness(t, TYPE_TIMEOUT_SECONDS);
  const scheduler = await h.start('long', 'abort-marker');
  const started = nextEvent(scheduler, 'job:started');
  await h.jobs.add('long', 'r1', { dir: h.dir });
  await started;
  await eventually(() => existsSync(join(h.dir, 'r1.running')));
  const cancelled = nextEvent(scheduler, 'job:cancelled', (event) => event.id === 'r1', ABORT_WAIT_MS);
  t.true(await h.jobs.remove('long', 'r1'));
  await cancelled;
  await eventually(() => existsSync(join(h.dir, 'r1')), ABORT_WAIT_MS);
  t.is(readFileSync(join(h.dir, 'r1'), 'utf8'), 'cancel');
  await eventually(() => scheduler.stats().running === 0, ABORT_WAIT_MS);
  t.is(await h.jobs.getJobState('long', 'r1'), undefined);
});

testInModes('cancelling one running job aborts only its handler: the others run on', async (t) => {
  const h = await harness(t, TYPE_TIMEOUT_SECONDS);
  const scheduler = await h.start('long', 'abort-marker', { maxJobs: 3 });
  const ids = ['k1', 'k2', 'k3'];
  const starts = Promise.all(ids.map((id) => nextEvent(scheduler, 'job:started', (event) => event.id === id)));
  for (const id of ids) await h.jobs.add('long', id, { dir: h.dir });
  await starts;
  await eventually(() => ids.every((id) => existsSync(join(h.dir, `${id}.running`))));
  const cancelled = nextEvent(scheduler, 'job:cancelled', (event) => event.id === 'k2', ABORT_WAIT_MS);
  t.true(await h.jobs.cancel('long', 'k2'));
  await cancelled;
  await eventually(() => existsSync(join(h.dir, 'k2')), ABORT_WAIT_MS);
  t.is(scheduler.stats().running, 2);
  t.deepEqual((await h.jobs.getActiveJobIds('long')).sort(), ['k1', 'k3']);
  t.false(existsSync(join(h.dir, 'k1')));
  t.false(existsSync(join(h.dir, 'k3')));
});
