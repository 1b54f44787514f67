// The scheduler reports its jobs like CouchDB's _scheduler/jobs, and stats.
import { eventually, harness, nextEvent, testInModes } from './scheduler-harness.js';

testInModes('a running job is summarised with its state, thread, history and node', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('sum', 'abort-marker');
  const started = nextEvent(scheduler, 'job:started');
  await h.jobs.add('sum', 'r1', { dir: h.dir }, { continuous: true });
  await started;
  await eventually(() => scheduler.job('sum', 'r1')?.pid !== null);
  const summary = scheduler.job('sum', 'r1');
  t.like(summary, { id: 'r1', type: 'sum', state: 'running', info: null, error_count: 0, continuous: true });
  t.regex(summary?.pid ?? '', /^thread:\d+$/);
  t.deepEqual(
    summary?.history.map((event) => event.type),
    ['started', 'added'],
  );
  t.notThrows(() => new Date(summary?.last_updated ?? '').toISOString());
  t.is(scheduler.job('other-type', 'r1'), undefined);
  const all = scheduler.jobs();
  t.is(all.total_rows, 1);
  t.is(all.offset, 0);
  t.deepEqual(all.jobs[0], summary);
  t.like(scheduler.stats(), { total: 1, running: 1, pending: 0, crashed: 0 });
  // JSON through and through.
  t.deepEqual(JSON.parse(JSON.stringify(all)), all);
});

testInModes('progress a handler reports is stored and survives a rotation', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('prog', 'progress', { maxJobs: 1, interval: 200, acceptWaitMs: 100 });
  await h.jobs.add('prog', 'p1', { runs: 0, ticks: 0 }, { continuous: true });
  await eventually(async () => ((await h.jobs.getJobData('prog', 'p1')) as { ticks: number }).ticks >= 2);
  const rotated = nextEvent(scheduler, 'job:stopped', (event) => event.id === 'p1' && event.cause === 'rotation');
  await h.jobs.add('prog', 'p2', { runs: 0, ticks: 0 }, { continuous: true });
  await rotated;
  await eventually(async () => ((await h.jobs.getJobData('prog', 'p1')) as { runs: number }).runs >= 2);
  const data = (await h.jobs.getJobData('prog', 'p1')) as { runs: number; ticks: number };
  t.true(data.ticks >= 2, 'the second run resumed from the first run\'s progress');
});
