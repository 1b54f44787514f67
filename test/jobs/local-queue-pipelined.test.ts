// A local queue takes its batches in halves, so that the next one is taken
// while the previous one is written to the store: two accepts in flight when
// the workers are busy, one when the store's queue is empty, and never more
// jobs taken and not handed out than the queue's size.

import test from 'ava';
import { LocalQueue } from '@jobtree/core';
import type { Jobs, LocalQueueSource } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

interface Counting {
  source: LocalQueueSource;
  /** Accepts in flight now, and at most so far. */
  inFlight: number;
  maxInFlight: number;
  /** What each accept asked for. */
  asked: number[];
  /** Jobs taken so far. */
  taken: number;
}

function counting(jobs: Jobs): Counting {
  const state: Counting = {
    source: {
      acceptMany: async (type, max, options) => {
        state.asked.push(max);
        state.inFlight += 1;
        state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
        try {
          const taken = await jobs.acceptMany(type, max, options);
          state.taken += taken.length;
          return taken;
        } finally {
          state.inFlight -= 1;
        }
      },
      update: (job, data) => jobs.update(job, data),
      finish: (job, data) => jobs.finish(job, data),
      finishMany: (items) => jobs.finishMany(items),
      resubmit: jobs.resubmit.bind(jobs),
      getTypeTimeout: (type) => jobs.getTypeTimeout(type),
    },
    inFlight: 0,
    maxInFlight: 0,
    asked: [],
    taken: 0,
  };
  return state;
}

test('busy workers keep two accepts of half the queue in flight, and every job runs once', async (t) => {
  t.timeout(120_000);
  const { jobs } = await openTempJobs(t);
  const count = 3_000;
  for (let start = 0; start < count; start += 1_000) {
    await jobs.addMany(
      T1,
      Array.from({ length: 1_000 }, (_, i) => ({ id: `p${start + i}`, data: { i: start + i } })),
    );
  }
  const state = counting(jobs);
  const queue = new LocalQueue(state.source, T1, { size: 100 });
  const ran = new Set<string>();
  let finishes: Promise<unknown>[] = [];
  const worker = async () => {
    for (let job = await queue.take(); job !== undefined; job = await queue.take()) {
      t.false(ran.has(job.id), `job ${job.id} handed out twice`);
      ran.add(job.id);
      finishes.push(queue.finish(job));
      t.true(queue.held <= 100, `${queue.held} jobs held`);
      if (ran.size === count) void queue.stop();
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  await queue.stop();
  await Promise.all(finishes);
  finishes = [];
  t.is(ran.size, count);
  t.is(await jobs.pendingCount(T1), 0);
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
  t.is(state.maxInFlight, 2, 'the next accept was taken while the previous one committed');
  t.true(
    state.asked.every((asked) => asked <= 50),
    `an accept asks for at most half the queue: ${state.asked.join(',')}`,
  );
});

test('on an empty store one accept waits for jobs, not two', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  const state = counting(jobs);
  const queue = new LocalQueue(state.source, T1, { size: 100, holdMs: 2_000 });
  t.teardown(() => queue.stop());
  const waiting = queue.take();
  // Several turns and a while for a second accept to start, were it to.
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.is(state.maxInFlight, 1);
  await jobs.add(T1, 'late', { n: 1 });
  const job = await waiting;
  t.is(job?.id, 'late');
  await queue.finish(job as NonNullable<typeof job>);
  t.is(state.maxInFlight, 1);
});
