// The wait before a handler thread starts, after threads exited as they
// started, lasts only while threads keep failing that way: a lane that came
// up and answered every module it was asked to load (loaded or not) ends the
// series, so a thread lost later starts its successor at once, and a start
// failure after that begins the series again.

import type { Worker } from 'node:worker_threads';
import test from 'ava';
import { HandlerThreads, ONE_LANE_BATCH_MS } from '../../packages/jobtree/src/processors/handler-threads.js';
import type { ThreadsRestarting } from '../../packages/jobtree/src/processors/handler-runner.js';
import { SchedulerError } from '../../packages/jobtree/src/processors/index.js';
import { eventually, fixture } from './scheduler-harness.js';

test('a lane whose only module fails to load ends the series of start failures', async (t) => {
  const threads = new HandlerThreads({ threads: 1 });
  t.teardown(() => threads.close());
  const restarts: ThreadsRestarting[] = [];
  const settled: number[] = [];
  const url = fixture('not-a-handler').href;
  const share = threads.join({
    handlerUrl: url,
    jobType: 'broken',
    maxLanes: 1,
    stuckThreadMs: Number.POSITIVE_INFINITY,
    oneLaneBatchMs: ONE_LANE_BATCH_MS,
    events: {
      settled: (serial) => settled.push(serial),
      update: (_serial, _data, reply) => reply(),
      childResults: (_serial, reply) => reply([]),
      lost: () => {},
      threadsRestarting: (event) => restarts.push(event),
      started: () => {},
      returned: () => {},
    },
  });

  // Every thread ends as soon as it is there, until two in a row have exited as they started.
  const ended = new Set<Worker>();
  const killer = setInterval(() => {
    for (const thread of threads.threads) {
      if (ended.has(thread)) continue;
      ended.add(thread);
      void thread.terminate();
    }
  }, 1);
  t.teardown(() => clearInterval(killer));
  await eventually(() => restarts.length >= 2);
  clearInterval(killer);

  // The lane that comes up answers the load: the module is no handler.
  const loading = await threads.load(url).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.true(loading instanceof SchedulerError && loading.code === 'invalid_handler', `load gave ${String(loading)}`);
  // It runs a job (answered with the module's error): its thread is no thread that could not start.
  threads.start(share, [{ serial: 1, attempt: 1, job: { id: 'one', data: {}, priority: 0, scheduledTime: 0 } }]);
  await eventually(() => settled.includes(1));

  // A thread lost from outside, then its replacement as it starts: one start failure, the first of a new series.
  const seen = restarts.length;
  const thread = threads.threads[0] as Worker;
  await thread.terminate();
  await threads.threads.find((each) => each !== thread)?.terminate();
  await eventually(() => restarts.length > seen);
  t.like(restarts[seen], { failures: 1, delayMs: 100 });
});
