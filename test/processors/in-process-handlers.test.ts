// Handlers that run on the main thread: a plain function (or a definition
// with runIn: 'main') is called in the scheduler's own thread, beside the
// caller's objects; a handler that holds the event loop up is reported with
// the jobs that ran. What every handler does the same way in both modes is
// pinned by the rest of the processors suite, run in both.

import { setTimeout as sleep } from 'node:timers/promises';
import { threadId } from 'node:worker_threads';
import test from 'ava';
import { SchedulerError, type Scheduler, startScheduler } from '../../packages/jobtree/src/processors/index.js';
import { fixture, harness, nextEvent } from './scheduler-harness.js';

test('a handler function runs on the main thread and shares its objects with the application', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('shared', 3);
  // An object of the application the handler uses as it is: no copy crosses to it.
  const seen = new Map<string, number>();
  const client = { calls: 0, record: (id: string) => seen.set(id, threadId) };
  const scheduler = await startScheduler({
    jobs: h.jobs,
    type: 'shared',
    handler: async (job: { id: string; data: { n: number } }) => {
      client.calls++;
      client.record(job.id);
      return { twice: job.data.n * 2 };
    },
  });
  t.teardown(() => scheduler.stop({ graceMs: 100 }));
  t.deepEqual(scheduler.threads, [], 'no thread is started');
  const finished = Promise.all(['a', 'b'].map((id) => nextEvent(scheduler, 'job:finished', (event) => event.id === id)));
  await h.jobs.add('shared', 'a', { n: 2 });
  await h.jobs.add('shared', 'b', { n: 5 });
  await finished;
  t.is(client.calls, 2);
  t.deepEqual([...seen].sort(), [['a', threadId], ['b', threadId]]);
  t.like(await h.jobs.getJob('shared', 'b'), { state: 'finished', result: { twice: 10 } });
});

test('a definition runs on the main thread with runIn main, and a module URL is imported for it', async (t) => {
  const h = await harness(t);
  for (const [type, handler] of [
    ['by-definition', ((await import(fixture('thread-of').href)) as { default: never }).default],
    ['by-url', fixture('thread-of')],
  ] as const) {
    await h.jobs.setTypeTimeout(type, 3);
    const scheduler = await startScheduler({ jobs: h.jobs, type, handler, runIn: 'main' });
    t.teardown(() => scheduler.stop({ graceMs: 100 }));
    const finished = nextEvent(scheduler, 'job:finished');
    await h.jobs.add(type, 'x', {});
    await finished;
    t.deepEqual((await h.jobs.getJob(type, 'x'))?.result, { threadId }, type);
  }
});

test('a handler function is called once its run has begun: its job:started listeners have run', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('ordered', 3);
  const seen: string[] = [];
  const scheduler = await startScheduler({
    jobs: h.jobs,
    type: 'ordered',
    handler: (job: { id: string }) => {
      seen.push(`called ${job.id}`);
    },
  });
  t.teardown(() => scheduler.stop({ graceMs: 100 }));
  scheduler.events.on('job:started', (event) => seen.push(`started ${event.id}`));
  const finished = nextEvent(scheduler, 'job:finished');
  await h.jobs.add('ordered', 'x', {});
  await finished;
  t.deepEqual(seen, ['started x', 'called x']);
});

test('a handler function cannot run in threads: runIn threads is refused', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('fn', 3);
  const error = await t.throwsAsync(startScheduler({ jobs: h.jobs, type: 'fn', handler: () => null, runIn: 'threads' }));
  t.true(error instanceof SchedulerError);
  t.is((error as SchedulerError).code, 'invalid_option');
  t.regex(error?.message ?? '', /defineHandler/);
  const bad = await t.throwsAsync(startScheduler({ jobs: h.jobs, type: 'fn', handler: () => null, runIn: 'elsewhere' as never }));
  t.is((bad as SchedulerError).code, 'invalid_option');
});

test('a handler that holds the event loop up is reported with the job that ran', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('busy', 3);
  const scheduler: Scheduler = await startScheduler({
    jobs: h.jobs,
    type: 'busy',
    // Well above what a loaded machine's scheduling alone delays the loop
    // by (a test run on two busy cores sees 100 ms and more), well below
    // the spin.
    blockedLoopMs: 400,
    handler: async (job) => {
      if (job.id === 'spin') {
        const until = performance.now() + 1_000;
        while (performance.now() < until) {}
      } else await sleep(5);
      return null;
    },
  });
  t.teardown(() => scheduler.stop({ graceMs: 100 }));
  const quiet = await Promise.race([nextEvent(scheduler, 'loop:blocked'), (async () => {
    const finished = nextEvent(scheduler, 'job:finished');
    await h.jobs.add('busy', 'calm', {});
    await finished;
    await sleep(500);
    return 'quiet' as const;
  })()]);
  t.is(quiet, 'quiet', 'a handler that awaits is not reported');
  const blocked = nextEvent(scheduler, 'loop:blocked');
  await h.jobs.add('busy', 'spin', {});
  const event = await blocked;
  t.true(event.lagMs >= 400, `held up ${event.lagMs} ms`);
  t.true(event.jobs.includes('spin'), `names ${event.jobs.join(', ')}`);
});

test('handlers that end at once let the event loop turn while a backlog runs', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('quick', 30);
  const count = 2_000;
  await h.jobs.addMany(
    'quick',
    Array.from({ length: count }, (_, index) => ({ id: `q${index}` })),
  );
  // Each run notes how many event-loop turns have passed: a backlog the
  // scheduler chained in one turn would leave the local queue's next take
  // and the finishes waiting until it ended.
  let turns = 0;
  let ticking = true;
  const tick = (): void => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  const turnsAtRun: number[] = [];
  const scheduler = await startScheduler({
    jobs: h.jobs,
    type: 'quick',
    maxJobs: 1,
    handler: () => {
      turnsAtRun.push(turns);
    },
  });
  t.teardown(() => scheduler.stop({ graceMs: 100 }));
  setImmediate(tick);
  let finished = 0;
  await new Promise<void>((resolve) => {
    scheduler.events.on('job:finished', () => {
      if (++finished === count) resolve();
    });
  });
  ticking = false;
  // The longest stretch of runs within one turn.
  let longest = 0;
  let stretch = 0;
  for (let index = 0; index < turnsAtRun.length; index++) {
    stretch = index > 0 && turnsAtRun[index] === turnsAtRun[index - 1] ? stretch + 1 : 1;
    longest = Math.max(longest, stretch);
  }
  t.true(longest <= 64, `${longest} runs in one turn of the event loop`);
});
