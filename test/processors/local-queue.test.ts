// The scheduler's local queue: jobs accepted beyond the free slots while
// one-shot runs end quickly, started the moment a slot frees, never run
// beyond maxJobs, and given back on stop.
import test from 'ava';
import type { Scheduler } from '../../packages/jobtree/src/processors/index.js';
import { harness, nextEvent } from './scheduler-harness.js';

const COUNT = 400;

/** The most jobs seen running and held without running, sampled at every start. */
function sampleStats(scheduler: Scheduler): { running: number; queued: number } {
  const most = { running: 0, queued: 0 };
  scheduler.events.on('job:started', () => {
    const stats = scheduler.stats();
    most.running = Math.max(most.running, stats.running);
    most.queued = Math.max(most.queued, stats.pending);
  });
  return most;
}

function finishedIds(scheduler: Scheduler): Set<string> {
  const ids = new Set<string>();
  scheduler.events.on('job:finished', ({ id, state }) => {
    if (state === 'finished') ids.add(id);
  });
  return ids;
}

test('one-shot jobs that end quickly are queued beyond maxJobs, never run beyond it, and each finishes once', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('quick', 'noop', { maxJobs: 2 });
  const most = sampleStats(scheduler);
  const finished = finishedIds(scheduler);
  let events = 0;
  const all = new Promise<void>((resolve) => {
    scheduler.events.on('job:finished', () => {
      if (++events === COUNT) resolve();
    });
  });
  await h.jobs.addMany('quick', Array.from({ length: COUNT }, (_, i) => ({ id: `q${i}`, data: { n: i } })));
  await all;
  t.is(finished.size, COUNT, 'every job finished, none twice');
  t.true(most.running <= 2, `at most maxJobs ran at once (saw ${most.running})`);
  t.true(most.queued >= 1, 'jobs waited in the local queue for a slot');
  t.deepEqual(await h.jobs.getActiveJobIds('quick'), []);
});

test('continuous jobs get no local queue: the scheduler holds only as many as its slots', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('follow', 'progress', { maxJobs: 2, acceptWaitMs: 50 });
  const second = nextEvent(scheduler, 'job:started', () => scheduler.stats().running === 2);
  await h.jobs.addMany('follow', Array.from({ length: 6 }, (_, i) => ({ id: `c${i}`, data: { runs: 0, ticks: 0 }, continuous: true })));
  await second;
  // Several take rounds later, the four other jobs are still in the store's queue for other nodes.
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.is((await h.jobs.getActiveJobIds('follow')).length, 2);
  t.is(scheduler.stats().pending, 0);
});

test('stop gives back the jobs waiting in the local queue', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('drain', 'noop', { maxJobs: 2 });
  let events = 0;
  const stopped = new Promise<void>((resolve) => {
    const listener = (): void => {
      if (scheduler.stats().pending < 1) return;
      scheduler.events.off('job:started', listener);
      resolve(scheduler.stop({ graceMs: 1000 }));
    };
    scheduler.events.on('job:started', listener);
    // Without a queue it never comes to a stop with jobs queued: the check below tells.
    scheduler.events.on('job:finished', () => {
      if (++events === COUNT) resolve();
    });
  });
  const ids = Array.from({ length: COUNT }, (_, i) => `d${i}`);
  await h.jobs.addMany('drain', ids.map((id) => ({ id })));
  await stopped;
  const states = await Promise.all(ids.map((id) => h.jobs.getJobState('drain', id)));
  for (const [i, state] of states.entries()) t.true(state === 'pending' || state === 'finished', `${ids[i]} is ${state}`);
  t.true(states.includes('pending'), 'the queue went back');
  t.deepEqual(await h.jobs.getActiveJobIds('drain'), [], 'no job is left running');
});

test('jobs waiting in the local queue are summarised as pending and counted in the stats, like the jobs the scheduler runs', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('listed', 'noop', { maxJobs: 2 });
  let checked = false;
  const seen = new Promise<void>((resolve) => {
    const listener = (): void => {
      const stats = scheduler.stats();
      const running = scheduler.jobs().jobs.filter((job) => job.state === 'running');
      const pending = scheduler.jobs().jobs.filter((job) => job.state === 'pending');
      if (pending.length < 1) return;
      scheduler.events.off('job:started', listener);
      t.is(stats.pending, pending.length, 'the stats count every pending summary');
      t.is(stats.total, running.length + pending.length);
      for (const job of pending) t.like(scheduler.job('listed', job.id), { id: job.id, state: 'pending', type: 'listed' });
      checked = true;
      resolve();
    };
    scheduler.events.on('job:started', listener);
    // Should no job ever wait in the queue, the check below tells.
    let finished = 0;
    scheduler.events.on('job:finished', () => {
      if (++finished === COUNT) resolve();
    });
  });
  await h.jobs.addMany('listed', Array.from({ length: COUNT }, (_, i) => ({ id: `l${i}`, data: { n: i } })));
  await seen;
  t.true(checked, 'jobs waited in the local queue');
});
