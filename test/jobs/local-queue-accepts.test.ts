// The accepts a local queue makes for its workers. When they fail, a failed
// accept rejects the workers waiting in take(), and the next take() tries
// again; with no worker waiting, nothing should try again on its own: a
// queue whose source is closed (or whose storage keeps failing) must not
// spin on accepts. And a queue stopped as one of its accepts starts, in the
// middle of a busy drain, leaves no job running that no worker finished.

import test from 'ava';
import { LocalQueue } from '@jobtree/core';
import type { Jobs, LocalQueueSource } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

interface Counting {
  source: LocalQueueSource;
  accepts: number;
  failed: number;
  /** Accepts in flight now, and when the queue was stopped. */
  inFlight: number;
  inFlightAtStop: number;
}

/** `jobs` as a queue source that counts accepts, and failed accepts. */
function counting(jobs: Jobs, onAcceptStarted: () => void = () => {}): Counting {
  const state: Counting = {
    source: {
      acceptMany: async (type, max, options) => {
        state.accepts += 1;
        state.inFlight += 1;
        try {
          const taking = jobs.acceptMany(type, max, options);
          onAcceptStarted();
          return await taking;
        } catch (error) {
          state.failed += 1;
          throw error;
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
    accepts: 0,
    failed: 0,
    inFlight: 0,
    inFlightAtStop: 0,
  };
  return state;
}

/** Resolves once `done()` holds, or after `ms` (whichever is first). */
async function until(done: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!done() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 10));
}

test('with no worker waiting, a queue whose accepts fail does not keep accepting on its own', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(
    T1,
    Array.from({ length: 20 }, (_, i) => ({ id: `j${i}`, data: { i } })),
  );
  const counted = counting(jobs);
  const queue = new LocalQueue(counted.source, T1, { size: 4, holdMs: 60_000 });
  t.teardown(() => queue.stop());
  // The first take fills the queue (its accepts find jobs).
  const first = await queue.take();
  t.truthy(first);
  await until(() => queue.held >= 2, 10_000);
  t.true(queue.held >= 2, `${queue.held} held`);
  // The store goes away under the queue; a worker then takes a held job
  // (room opens for a fill) and is not waiting for more.
  await jobs.close();
  const second = await queue.take();
  t.truthy(second);
  // A failed accept is tried again only when a worker asks. Waits until
  // failures pile up (the defect) or long enough for a loop to show.
  await until(() => counted.failed > 20, 1_000);
  t.true(counted.failed <= 2, `${counted.failed} failed accepts with no worker waiting (${counted.accepts} accepts in all)`);
});

test('a queue stopped as one of its accepts starts, in the middle of a busy drain, leaves every job finished by a worker or pending again, none running', async (t) => {
  t.timeout(120_000);
  const { jobs } = await openTempJobs(t);
  const count = 600;
  await jobs.addMany(
    T1,
    Array.from({ length: count }, (_, i) => ({ id: `s${i}`, data: { i } })),
  );
  const finished = new Set<string>();
  let stopping: Promise<void> | undefined;
  // Stops in the middle of the drain, as an accept starts (with the other one in flight, when there is one).
  const counted = counting(jobs, () => {
    if (stopping === undefined && finished.size >= 150) {
      counted.inFlightAtStop = counted.inFlight;
      stopping = queue.stop();
    }
  });
  const queue = new LocalQueue(counted.source, T1, { size: 40, holdMs: 60_000 });
  const worker = async () => {
    for (;;) {
      const job = await queue.take();
      if (job === undefined) return;
      t.is(await queue.finish(job), 'finished');
      t.false(finished.has(job.id), `${job.id} ran twice`);
      finished.add(job.id);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  t.not(stopping, undefined, 'stopped while an accept was in flight');
  t.log(`${counted.inFlightAtStop} accept(s) in flight at the stop`);
  await stopping;
  t.true(finished.size >= 150 && finished.size < count, `${finished.size} finished`);
  t.deepEqual(await jobs.getActiveJobIds(T1), [], 'no job is left running');
  t.is(await jobs.pendingCount(T1), count - finished.size, 'every job no worker finished is pending again');
});
