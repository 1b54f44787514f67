// What a handler is given: jobs travel to the threads packed flat (see
// lane-protocol.ts), and come out as the same HandlerJob every time.
import test from 'ava';
import { harness, nextEvent } from './scheduler-harness.js';

test('a handler sees its job type, id, data, priority, scheduled time, continuity and attempt', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('echo', 'echo-job');
  const finished = nextEvent(scheduler, 'job:finished', (event) => event.id === 'e1');
  const scheduledTime = Math.floor(Date.now() / 1000) - 5;
  await h.jobs.add('echo', 'e1', { n: 1, nested: { list: [1, 'two', null] } }, { priority: 3, scheduledTime });
  await finished;
  t.deepEqual(await h.jobs.getJobData('echo', 'e1'), {
    type: 'echo',
    id: 'e1',
    data: { n: 1, nested: { list: [1, 'two', null] } },
    priority: 3,
    scheduledTime,
    continuous: false,
    attempt: 1,
  });
});

test('jobs started in one batch each reach their own handler with their own data', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('echo', 'echo-job', { maxJobs: 50 });
  const ids = Array.from({ length: 40 }, (_, i) => `b${i}`);
  const finished = new Set<string>();
  const all = new Promise<void>((resolve) => {
    scheduler.events.on('job:finished', (event) => {
      finished.add(event.id);
      if (finished.size === ids.length) resolve();
    });
  });
  await h.jobs.addMany('echo', ids.map((id, i) => ({ id, data: { i }, priority: i % 4 })));
  await all;
  for (const [i, id] of ids.entries()) {
    const data = (await h.jobs.getJobData('echo', id)) as { id: string; data: { i: number }; priority: number };
    t.is(data.id, id);
    t.deepEqual(data.data, { i });
    t.is(data.priority, i % 4);
  }
});
