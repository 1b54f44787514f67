// Jobs queued in a handler thread (HandlerPool.dispatch's `queue`): each
// starts there in the slot of a run that ends, with no round trip to the
// main thread, never beyond the slots the thread was given; an abort takes
// a queued job out unstarted, and a thread that dies gives its queued jobs
// back without blaming them for anything.

import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setEnvironmentData } from 'node:worker_threads';
import test, { type ExecutionContext } from 'ava';
import { handlerUrl } from '../../packages/supervisor/src/processors/define-handler.js';
import { HandlerPool } from '../../packages/supervisor/src/processors/handler-pool.js';
import type { LaneJob } from '../../packages/supervisor/src/processors/lane-protocol.js';
import { CONCURRENCY_KEY } from './fixtures/concurrency.js';
import { eventually, fixture, harness } from './scheduler-harness.js';

type PoolEvent =
  | { kind: 'settled'; serial: number; ok: boolean }
  | { kind: 'started'; serial: number }
  | { kind: 'dropped'; serial: number }
  | { kind: 'lost'; serial: number; culprit: number | undefined };

function pool(t: ExecutionContext, handler: string): { pool: HandlerPool; events: PoolEvent[] } {
  const events: PoolEvent[] = [];
  const handlers = new HandlerPool({
    type: 'lane-queue',
    handlerUrl: handlerUrl(fixture(handler) as never),
    threads: 1,
    stuckThreadMs: Number.POSITIVE_INFINITY,
    events: {
      settled: (serial, ok) => events.push({ kind: 'settled', serial, ok }),
      update: (_serial, _data, reply) => reply(),
      lost: (serial, culprit) => events.push({ kind: 'lost', serial, culprit }),
      started: (serial) => events.push({ kind: 'started', serial }),
      dropped: (serial) => events.push({ kind: 'dropped', serial }),
    },
  });
  t.teardown(() => handlers.close());
  return { pool: handlers, events };
}

const run = (serial: number, data: unknown = {}): LaneJob => ({ serial, job: { id: `j${serial}`, data: data as never, priority: 0, scheduledTime: 0 }, attempt: 1 });
const has = (events: readonly PoolEvent[], kind: PoolEvent['kind'], serial: number): boolean => events.some((event) => event.kind === kind && event.serial === serial);

/** Starts one run and waits for its end: the lane has loaded the handler module and can queue. */
async function warm(handlers: HandlerPool, events: PoolEvent[], serial: number, data: unknown = {}): Promise<void> {
  handlers.dispatch([run(serial, data)]);
  await eventually(() => has(events, 'settled', serial));
}

test('queued jobs start in their thread as its runs end, each in the slot of the run reported just before it', async (t) => {
  const { pool: handlers, events } = pool(t, 'noop');
  await warm(handlers, events, 1);
  events.length = 0;
  // One slot, three jobs queued behind it: the thread runs all four, one at a time, with no message from here.
  t.deepEqual(handlers.dispatch([run(2)], [run(3), run(4), run(5)]), [3, 4, 5]);
  await eventually(() => has(events, 'settled', 5));
  t.deepEqual(
    events.map((event) => `${event.kind} ${event.serial}`),
    ['settled 2', 'started 3', 'settled 3', 'started 4', 'settled 4', 'started 5', 'settled 5'],
  );
});

test('a thread queues no more than a few jobs per run it was given, and none before it loaded its handler', async (t) => {
  const { pool: handlers, events } = pool(t, 'noop');
  t.deepEqual(handlers.dispatch([run(1)], [run(2)]), [], 'a thread still loading queues nothing');
  await eventually(() => has(events, 'settled', 1));
  const queued = handlers.dispatch([run(3)], Array.from({ length: 20 }, (_, i) => run(10 + i)));
  t.true(queued.length >= 1 && queued.length < 20, `queued ${queued.length} of 20 behind one run`);
  await eventually(() => queued.every((serial) => has(events, 'settled', serial)));
});

test('an aborted queued job is dropped unstarted, and an aborted run hands its slot to no queued job', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-lane-queue-'));
  const { pool: handlers, events } = pool(t, 'waiting-marker');
  handlers.dispatch([run(1, { dir })]);
  // Running, and the lane's ready message read here: it can queue.
  await eventually(() => marker(dir, 'j1') && handlers.isStarted(1));
  t.deepEqual(handlers.dispatch([], [run(2, { dir }), run(3, { dir })]), [2, 3]);
  handlers.abort([2], 'cancel');
  await eventually(() => has(events, 'dropped', 2));
  t.false(has(events, 'started', 2), 'the dropped job never started');
  // The run's end by abort does not start job 3 in its slot: that slot is the main thread's again.
  handlers.abort([1], 'rotation');
  await eventually(() => has(events, 'settled', 1) && has(events, 'dropped', 3));
  t.false(has(events, 'started', 3));
  t.false(marker(dir, 'j2') || marker(dir, 'j3'), 'no queued handler ran');
});

test('a thread that dies gives its queued jobs back as dropped: only its runs are lost, with their culprit', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-lane-queue-'));
  const { pool: handlers, events } = pool(t, 'waiting-marker');
  handlers.dispatch([run(1, { dir })]);
  await eventually(() => marker(dir, 'j1') && handlers.isStarted(1));
  t.deepEqual(handlers.dispatch([], [run(2, { dir })]), [2]);
  t.false(handlers.isStarted(2), 'a queued job has not started');
  handlers.killThreadOf(2, 'a queued job is no culprit');
  handlers.killThreadOf(1, 'job 1 ignored its abort');
  await eventually(() => has(events, 'lost', 1) && has(events, 'dropped', 2));
  t.deepEqual(
    events.filter((event) => event.kind === 'lost'),
    [{ kind: 'lost', serial: 1, culprit: 1 }],
  );
  t.false(has(events, 'lost', 2));
});

test('with jobs queued in the threads, no more handlers run at once than maxJobs, and every job finishes once', async (t) => {
  const counts = new SharedArrayBuffer(8);
  setEnvironmentData(CONCURRENCY_KEY, counts);
  const h = await harness(t);
  const scheduler = await h.start('count', 'concurrency', { maxJobs: 3 });
  const finished = new Set<string>();
  let events = 0;
  const COUNT = 600;
  const all = new Promise<void>((resolve) => {
    scheduler.events.on('job:finished', ({ id }) => {
      finished.add(id);
      if (++events === COUNT) resolve();
    });
  });
  await h.jobs.addMany('count', Array.from({ length: COUNT }, (_, i) => ({ id: `c${i}`, data: { ms: i % 3 } })));
  await all;
  const [running, most] = new Int32Array(counts) as unknown as [number, number];
  t.is(finished.size, COUNT, 'every job finished, none twice');
  t.true(most <= 3, `at most maxJobs handlers ran at once (saw ${most})`);
  t.is(running, 0);
  t.deepEqual(await h.jobs.getActiveJobIds('count'), []);
});

/** Whether job `id`'s waiting-marker handler ran (it writes `${id}@${threadId}`). */
function marker(dir: string, id: string): boolean {
  return readdirSync(dir).some((name) => name.startsWith(`${id}@`));
}
